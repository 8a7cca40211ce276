package kinds_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/openuniverse/operator/kinds"
)

// resources maps each Kind served in group to its resource.
func resources(t *testing.T, group string) map[schema.GroupVersionKind]schema.GroupVersionResource {
	t.Helper()
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		}
	}
	return out
}

func ensureNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// TestWireCompatibility server-side applies every fixture CR whose Kind is served, reads it
// back and requires the stored spec to equal the sent spec: nothing pruned, nothing defaulted,
// nothing rewritten.
func TestWireCompatibility(t *testing.T) {
	cfg := apiServerWith(t, kinds.DefaultAPIGroup)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	gvrs := resources(t, kinds.DefaultAPIGroup)
	_, served := servedFixtures(t)
	for _, f := range served {
		t.Run(f.File, func(t *testing.T) {
			sent := f.Obj.DeepCopy()
			gvr, ok := gvrs[sent.GroupVersionKind()]
			if !ok {
				t.Fatalf("no CRD serves %s", sent.GroupVersionKind())
			}
			ensureNamespace(ctx, t, cs, sent.GetNamespace())
			if _, err := dyn.Resource(gvr).Namespace(sent.GetNamespace()).Apply(ctx, sent.GetName(), sent,
				metav1.ApplyOptions{FieldManager: "wire-test", Force: true}); err != nil {
				t.Fatalf("apply %s %s: %v", sent.GetKind(), sent.GetName(), err)
			}
			got, err := dyn.Resource(gvr).Namespace(sent.GetNamespace()).Get(ctx, sent.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get %s %s: %v", sent.GetKind(), sent.GetName(), err)
			}
			if diff := cmp.Diff(sent.Object["spec"], got.Object["spec"]); diff != "" {
				t.Errorf("%s %s/%s: stored spec differs from the sent spec (-sent +stored):\n%s",
					sent.GetKind(), sent.GetNamespace(), sent.GetName(), diff)
			}
			if diff := cmp.Diff(sent.GetLabels(), got.GetLabels()); diff != "" {
				t.Errorf("%s %s: labels differ (-sent +stored):\n%s", sent.GetKind(), sent.GetName(), diff)
			}
		})
	}
}
