package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var apiextensionsGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// WaitEstablished polls the named CustomResourceDefinitions every interval until each is
// Established (the apiserver serves its Kind), ctx ends, or a read fails. Its error names
// the CRDs still pending.
func WaitEstablished(ctx context.Context, c client.Reader, names []string, every time.Duration) error {
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	err := wait.PollUntilContextCancel(ctx, every, true, func(ctx context.Context) (bool, error) {
		for name := range pending {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(apiextensionsGVK)
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, fmt.Errorf("get CRD %s: %w", name, err)
			}
			if Established(crd) {
				delete(pending, name)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("wait for CRDs %v to be established: %w", slices.Sorted(maps.Keys(pending)), err)
	}
	return nil
}

// Established reports whether a CRD's status says the apiserver serves it.
func Established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
