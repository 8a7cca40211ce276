package condition

import (
	"encoding/json"
	"fmt"

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
