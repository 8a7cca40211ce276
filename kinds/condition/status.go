package condition

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StatusApply is the object a controller server-side applies to the status subresource of
// the CR cr (of kind gvk) to write status: apiVersion, kind, namespace and name, and the
// status, nothing else. status is any value that marshals to the CR's status schema.
// The caller applies it under its status field manager, forcing ownership.
func StatusApply(gvk schema.GroupVersionKind, cr metav1.Object, status any) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode status of %s/%s: %w", cr.GetNamespace(), cr.GetName(), err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("encode status of %s/%s: %w", cr.GetNamespace(), cr.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": st}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(cr.GetNamespace())
	u.SetName(cr.GetName())
	return u, nil
}

// LegacyStatusManagers are the field managers that own status fields of cr through a plain
// update or patch (not an apply): a status written by an earlier release's merge patch.
// Their fields must move to the status applier's (client-go's csaupgrade) before its applies
// can remove what they wrote, such as a Stalled condition that no longer holds.
func LegacyStatusManagers(cr metav1.Object) []string {
	var out []string
	for _, e := range cr.GetManagedFields() {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status" {
			out = append(out, e.Manager)
		}
	}
	return out
}

// ManagerStatus is the field manager of every status write: server-side apply of the
// status subresource, apart from the spec's managers.
const ManagerStatus = "universe-operator-status"

// DropPatch is the JSON patch of the status subresource that removes the Owned conditions
// live holds and next does not, nil when there are none. A status applier needs it once,
// where LegacyStatusManagers own live's conditions: an apply that omits a condition another
// manager owns leaves it in place. Each removal tests the condition's type first, so a
// status that changed meanwhile fails the patch instead of losing another condition.
func DropPatch(live, next []metav1.Condition) ([]byte, error) {
	keep := map[string]bool{}
	for _, c := range next {
		keep[c.Type] = true
	}
	var ops []map[string]any
	for i := len(live) - 1; i >= 0; i-- {
		t := live[i].Type
		if keep[t] || !slices.Contains(Owned, t) {
			continue
		}
		path := fmt.Sprintf("/status/conditions/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": path + "/type", "value": t}, map[string]any{"op": "remove", "path": path})
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}
