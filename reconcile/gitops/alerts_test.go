package gitops

import (
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source/alert"
)

// TestAlerts: SweepFailed on the transition into failing only (a stop, an apiserver
// refusal, a scope refusal, a skipped file), DriftReverted naming the objects and who had
// changed them; an idle, healthy sweep alerts nothing.
func TestAlerts(t *testing.T) {
	cm := apply.ObjRef{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "web"}
	ok := &Report{Revision: "aaaaaaaaaaaaaaaa", Results: []apply.Result{{Object: cm, Action: apply.InSync}}, Summary: Summary{InSync: 1}}
	stopped := &Report{Revision: "bbbb", Error: "resolve head: the git host answered 503"}
	refused := &Report{Revision: "cccc", Summary: Summary{OutOfScope: 1},
		Skips: []Skip{{File: "crs/ns.yaml", Kind: "Namespace", Name: "x", Reason: ReasonClusterScoped, Message: "cluster-scoped objects are not applied from git"}}}
	failed := &Report{Revision: "dddd", Summary: Summary{Errors: 1},
		Results: []apply.Result{{Object: cm, Action: apply.Failed, Message: "boom", Err: apierrors.NewInternalError(errFixture)}}}
	drift := &Report{Revision: "eeeeeeeeeeeeeeee", Cluster: "acme/prod", Summary: Summary{Updated: 1},
		Results: []apply.Result{{Object: cm, Action: apply.Updated, DriftedBy: []string{"kubectl-edit"}}}}
	unhealthy := &Report{Revision: "gggg", Summary: Summary{InSync: 1, Health: HealthCounts{Failed: 1}},
		Results: []apply.Result{{Object: cm, Action: apply.InSync, Health: "Failed", HealthMessage: "Progress deadline exceeded"}}}
	rolling := &Report{Revision: "hhhh", Summary: Summary{Created: 1, Health: HealthCounts{InProgress: 1}}}
	kinds := func(es []alert.Event) []alert.Kind {
		var out []alert.Kind
		for _, e := range es {
			out = append(out, e.Kind)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		prev, r    *Report
		want       []alert.Kind
		summary    string
		detailHave string
	}{
		{"healthy after healthy", ok, ok, nil, "", ""},
		{"first sweep healthy", nil, ok, nil, "", ""},
		{"first sweep failing", nil, stopped, []alert.Kind{alert.SweepFailed}, "stopped before applying", ""},
		{"stopped after healthy", ok, stopped, []alert.Kind{alert.SweepFailed}, "the git host answered 503", ""},
		{"still failing: no repeat", stopped, failed, nil, "", ""},
		{"scope refusal", ok, refused, []alert.Kind{alert.SweepFailed}, "1 refused by scope", "crs/ns.yaml: Namespace x: ClusterScoped"},
		{"apiserver refusal", ok, failed, []alert.Kind{alert.SweepFailed}, "1 failed", "ConfigMap/apps/web: ERROR: the apiserver refused the apply: 500"},
		{"a Failed health", ok, unhealthy, []alert.Kind{alert.SweepFailed}, "1 unhealthy", "ConfigMap/apps/web: health Failed: Progress deadline exceeded"},
		{"recovered after failing", failed, ok, []alert.Kind{alert.SweepRecovered}, "revision aaaaaaaaaaaa: nothing failing (applied 0, in sync 1", ""},
		{"rolling out after failing is recovered: nothing fails", unhealthy, rolling, []alert.Kind{alert.SweepRecovered}, "nothing failing", ""},
		{"rolling out after healthy: nothing", ok, rolling, nil, "", ""},
		{"drift", ok, drift, []alert.Kind{alert.DriftReverted}, "reverted 1 object(s) to git revision eeeeeeeeeeee", "ConfigMap/apps/web (changed by kubectl-edit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Alerts(tc.prev, tc.r)
			if k := kinds(got); strings.Join(toStrings(k), ",") != strings.Join(toStrings(tc.want), ",") {
				t.Fatalf("alerts %v, want %v", k, tc.want)
			}
			if len(got) == 0 {
				return
			}
			e := got[0]
			if !strings.Contains(e.Summary, tc.summary) || e.Warning != (e.Kind != alert.SweepRecovered) || e.Revision != tc.r.Revision || e.Cluster != tc.r.Cluster {
				t.Errorf("event %+v, want summary with %q", e, tc.summary)
			}
			if tc.detailHave != "" && !strings.Contains(strings.Join(e.Details, "\n"), tc.detailHave) {
				t.Errorf("details %q, want %q", e.Details, tc.detailHave)
			}
		})
	}
}

func toStrings(ks []alert.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

var errFixture = apierrors.NewBadRequest("fixture")

// TestAlertsCarryNoSecretData: a Secret's value the apiserver echoes in its refusal, and a
// value quoted in a file's parse error, reach the Events' and the log's words but never an
// alert (Report.Public masks them, as GET /gitops does).
func TestAlertsCarryNoSecretData(t *testing.T) {
	const planted = "hunter2-planted-value"
	sec := apply.ObjRef{Version: "v1", Kind: "Secret", Namespace: "apps", Name: "db"}
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db",
		field.ErrorList{field.Invalid(field.NewPath("data").Key("password"), planted, "must be base64")})
	r := &Report{Revision: "ffff", Summary: Summary{Errors: 1, Skipped: 1},
		Results: []apply.Result{{Object: sec, Action: apply.Failed, Err: err, Message: err.Error()}},
		Files:   map[apply.ObjRef]string{sec: "crs/db.yaml"},
		Skips:   []Skip{{File: "crs/bad.yaml", Reason: ReasonUnparseable, Message: "yaml: line 3: found character that cannot start any token: password: " + planted}}}
	if !strings.Contains(r.Results[0].Message, planted) {
		t.Fatal("fixture: the raw message should hold the value")
	}
	got := Alerts(nil, r)
	if len(got) != 1 {
		t.Fatalf("alerts %+v, want one SweepFailed", got)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), planted) {
		t.Fatalf("an alert carries the Secret's value: %s", raw)
	}
	if !strings.Contains(string(raw), "crs/db.yaml") || !strings.Contains(string(raw), "data[password] (FieldValueInvalid)") {
		t.Fatalf("alert %s: want the file and the field path", raw)
	}
}
