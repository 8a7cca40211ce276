package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestOwnEcho: a CR's update is our own status write coming back only at the resourceVersion
// that write returned, with nothing but the status moved, and only while nothing waits for
// it (an upgrade step, a reconcile that found the cache behind our write).
func TestOwnEcho(t *testing.T) {
	cr := func(rv string, gen int64, labels map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: rv, Generation: gen, Labels: labels}}
	}
	deleting := cr("8", 1, nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	for name, tc := range map[string]struct {
		echo     string // "" nothing recorded
		old, new *v1.Service
		want     bool
	}{
		"our write":                         {"8", cr("7", 1, nil), cr("8", 1, nil), true},
		"another write after ours":          {"8", cr("8", 1, nil), cr("9", 1, nil), false},
		"a spec change":                     {"8", cr("7", 1, nil), cr("8", 2, nil), false},
		"a label":                           {"8", cr("7", 1, nil), cr("8", 1, map[string]string{"a": "b"}), false},
		"deleted":                           {"8", cr("7", 1, nil), deleting, false},
		"nothing recorded (upgrade, a lag)": {"", cr("7", 1, nil), cr("8", 1, nil), false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &KindReconciler{}
			m := r.memory.of(tc.old)
			if tc.echo != "" {
				m.echo.Store(&tc.echo)
			}
			if got := r.ownEcho(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("ownEcho = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("a CR never reconciled", func(t *testing.T) {
		r := &KindReconciler{}
		other := cr("8", 1, nil)
		other.Name = "other"
		if r.ownEcho(event.UpdateEvent{ObjectOld: cr("7", 1, nil), ObjectNew: other}) {
			t.Error("ownEcho true for a CR without memory")
		}
		if r.memory.echoed(types.NamespacedName{Namespace: "ns", Name: "web"}, "") {
			t.Error("echoed an empty resourceVersion")
		}
	})
}
