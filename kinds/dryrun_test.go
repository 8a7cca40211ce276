package kinds_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
)

// TestGoldenDryRun server-side applies every object of every golden case to a real apiserver
// in dry-run mode with strict field validation: each is a valid object of an installed type,
// with no field the schema would drop.
func TestGoldenDryRun(t *testing.T) {
	cfg := apiServerWith(t, kinds.DefaultAPIGroup)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	reg := kinds.Builtin()
	applied := 0
	for _, c := range goldenCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			objs, err := reg.Build(c.Obj, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
			if _, halted := kinds.AsHalt(err); halted {
				return
			}
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			for _, o := range objs {
				gvk := o.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Fatalf("%s: no REST mapping: %v", gvk, err)
				}
				ensureNamespace(ctx, t, cs, o.GetNamespace())
				data, err := o.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				_, err = dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
					FieldManager:    "universe-operator",
					Force:           ptr.To(true),
					DryRun:          []string{metav1.DryRunAll},
					FieldValidation: "Strict",
				})
				if err != nil {
					t.Errorf("dry-run apply %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
					continue
				}
				applied++
			}
		})
	}
	t.Logf("%d objects dry-run applied", applied)
}
