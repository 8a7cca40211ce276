package reconcile

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/drive"
)

// The decisions of the Kind reconcile: pure functions of what the phases observed.

// Outcome is what one apply means for the CR's status: one message per child the apiserver
// refused, by class.
type Outcome struct {
	Denied   []string // Forbidden: the operator lacks an RBAC grant
	Rejected []string // Invalid: the object must change
	Failed   []string // Transient: retried
}

// Clean reports whether every child applied.
func (o Outcome) Clean() bool { return len(o.Denied)+len(o.Rejected)+len(o.Failed) == 0 }

// outcome sorts apply results into what they mean, in the results' order.
func outcome(results []Result) Outcome {
	var o Outcome
	for _, res := range results {
		msg := res.Object.String() + ": " + res.Message
		switch {
		case res.Action == Denied:
			o.Denied = append(o.Denied, msg)
		case res.Action != Failed:
		case ClassOf(res.Err) == Invalid:
			o.Rejected = append(o.Rejected, msg)
		default:
			o.Failed = append(o.Failed, msg)
		}
	}
	return o
}

// prunable returns the live objects to delete: those the CR with uid owner controls (its
// controller owner reference), that manager applied (managedFields), and that the build no
// longer produces. Objects are matched by group, kind, namespace and name; the API version
// does not matter. An object another owner controls, or nobody, is never returned; nor is
// one another operator created for the same CR (see leftovers).
func prunable(desired []*unstructured.Unstructured, live []unstructured.Unstructured, owner types.UID, manager string) []*unstructured.Unstructured {
	want := map[ObjRef]bool{}
	for _, o := range desired {
		want[unversioned(RefOf(o))] = true
	}
	var out []*unstructured.Unstructured
	for i := range live {
		child := &live[i]
		if want[unversioned(RefOf(child))] || !controlledBy(child, owner) || !appliedBy(child, manager) {
			continue
		}
		out = append(out, child)
	}
	return out
}

func unversioned(r ObjRef) ObjRef {
	r.Version = ""
	return r
}

func controlledBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && ref.UID == uid
}

// How long a Kind reconcile waits before looking again, when nothing wakes it.
const (
	// requeueApplyFailed: a child failed to apply for a reason that may pass.
	requeueApplyFailed = 30 * time.Second
	// requeueProgressing: children are rolling out; pods are not watched, so their
	// readiness does not wake the controller.
	requeueProgressing = 10 * time.Second
)

// requeue is the requeue policy, one row per state, first match wins.
var requeue = []struct {
	when  func(drive.Status, Outcome) bool
	after time.Duration
	why   string
}{
	// a transient apply failure is retried even when another child's refusal stalls the CR
	{func(_ drive.Status, o Outcome) bool { return len(o.Failed) > 0 }, requeueApplyFailed, "retry the children that failed to apply"},
	{func(s drive.Status, _ Outcome) bool {
		return meta.IsStatusConditionTrue(s.Conditions, drive.ConditionReconciling)
	}, requeueProgressing, "look at the rollout again"},
	{func(s drive.Status, _ Outcome) bool {
		return meta.IsStatusConditionTrue(s.Conditions, drive.ConditionStalled)
	}, 0, "wait for a change of the CR"},
	{func(drive.Status, Outcome) bool { return true }, 0, "wait for a change of the CR or a child"},
}

// next returns when to reconcile again after writing status s for apply outcome o, and why.
func next(s drive.Status, o Outcome) (ctrl.Result, string) {
	for _, row := range requeue {
		if row.when(s, o) {
			return ctrl.Result{RequeueAfter: row.after}, row.why
		}
	}
	return ctrl.Result{}, "" // unreachable: the last row matches everything
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
