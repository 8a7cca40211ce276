package reconcile

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/upgrade"
)

// TestUpgradeAlert: an alert on the transitions into RollingBack and into Failed, in the
// Event's words, none for any other transition or for staying put.
func TestUpgradeAlert(t *testing.T) {
	cr := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	at := func(p upgrade.Phase) *v1.UpgradeStatus {
		return &v1.UpgradeStatus{Phase: string(p), TargetImage: "ghcr.io/x/web:2"}
	}
	rollingBack := upgrade.Decision{Image: "ghcr.io/x/web:1", Upgrade: at(upgrade.RollingBack),
		Event: &upgrade.Event{Reason: upgrade.ReasonRollingBack, Warning: true, Message: "ghcr.io/x/web:2: the candidate is crash-looping; rolling back to ghcr.io/x/web:1"}}
	failed := upgrade.Decision{Image: "ghcr.io/x/web:1", Upgrade: at(upgrade.Failed),
		Event: &upgrade.Event{Reason: upgrade.ReasonRolledBack, Warning: true, Message: "rolled back from ghcr.io/x/web:2 to ghcr.io/x/web:1"}}
	rolling := upgrade.Decision{Image: "ghcr.io/x/web:2", Upgrade: at(upgrade.Rolling)}
	for _, tc := range []struct {
		name string
		prev upgrade.Phase
		d    upgrade.Decision
		want string // "" for no alert
	}{
		{"rolling → rolling back", upgrade.Rolling, rollingBack, "RollingBack: ghcr.io/x/web:2: the candidate is crash-looping"},
		{"rolling back → failed", upgrade.RollingBack, failed, "Failed: rolled back from ghcr.io/x/web:2 to ghcr.io/x/web:1; production runs ghcr.io/x/web:1"},
		{"preflighting → failed", upgrade.Preflighting, failed, "Failed: rolled back"},
		{"still rolling back", upgrade.RollingBack, rollingBack, ""},
		{"latched failed", upgrade.Failed, failed, ""},
		{"stable → rolling", upgrade.Stable, rolling, ""},
		{"succeeded", upgrade.Rolling, upgrade.Decision{Image: "ghcr.io/x/web:2"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := upgradeAlert("Service", cr, tc.prev, tc.d)
			if tc.want == "" {
				if e != nil {
					t.Fatalf("alert %+v, want none", e)
				}
				return
			}
			if e == nil || e.Kind != alert.UpgradeRolledBack || !e.Warning || e.Object != "Service apps/web" || !strings.Contains(e.Summary, tc.want) {
				t.Fatalf("alert %+v, want one saying %q", e, tc.want)
			}
		})
	}
	if a, b := upgradeAlert("Service", cr, upgrade.Rolling, rollingBack), upgradeAlert("Service", cr, upgrade.RollingBack, failed); a.Key == b.Key {
		t.Fatalf("rolling back and rolled back share the key %q: the second would be deduplicated", a.Key)
	}
}
