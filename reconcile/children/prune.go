package children

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/reconcile/apply"
)

// Prunable returns the live objects to delete: those the CR with uid owner controls (its
// controller owner reference), that manager applied (managedFields), and that the build no
// longer produces. Objects are matched by group, kind, namespace and name; the API version
// does not matter. An object another owner controls, or nobody, is never returned; nor is
// one another operator created for the same CR (see Leftovers).
func Prunable(desired []*unstructured.Unstructured, live []unstructured.Unstructured, owner types.UID, manager string) []*unstructured.Unstructured {
	want := map[apply.ObjRef]bool{}
	for _, o := range desired {
		want[Unversioned(apply.RefOf(o))] = true
	}
	var out []*unstructured.Unstructured
	for i := range live {
		child := &live[i]
		if want[Unversioned(apply.RefOf(child))] || !controlledBy(child, owner) || !apply.AppliedBy(child, manager) {
			continue
		}
		out = append(out, child)
	}
	return out
}

// Unversioned drops the API version from r: children are matched by group, kind,
// namespace and name.
func Unversioned(r apply.ObjRef) apply.ObjRef {
	r.Version = ""
	return r
}

func controlledBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && ref.UID == uid
}
