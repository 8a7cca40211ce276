package kinds_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
)

// TestLuxNetworkWire server-side applies every lux.network and secrets.lux.network input
// (the luxfi operator's own CRs among them) on a real apiserver serving the luxfi CRDs and
// requires the stored spec and labels to equal what was sent: the wire is unchanged.
func TestLuxNetworkWire(t *testing.T) {
	cfg := apiServerWith(t, kinds.DefaultAPIGroup)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	crds, err := kinds.LuxNetworkCRDs()
	if err != nil {
		t.Fatal(err)
	}
	gvrs := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	for _, crd := range crds {
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind}
		gvrs[gvk] = schema.GroupVersionResource{Group: crd.Spec.Group, Version: gvk.Version, Resource: crd.Spec.Names.Plural}
	}
	ins, err := filepath.Glob(filepath.Join("testdata", "*", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range ins {
		for _, doc := range decodeStream(t, in) {
			// through JSON, as a client sends it: numbers are int64 as the apiserver returns them
			js, err := doc.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			sent := &unstructured.Unstructured{}
			if err := sent.UnmarshalJSON(js); err != nil {
				t.Fatal(err)
			}
			g := sent.GroupVersionKind().Group
			if g != luxnetwork.Group && g != luxnetwork.SecretsGroup {
				continue
			}
			n++
			t.Run(in+"/"+sent.GetNamespace()+"/"+sent.GetName(), func(t *testing.T) {
				gvr, ok := gvrs[sent.GroupVersionKind()]
				if !ok {
					t.Fatalf("no luxfi CRD serves %s", sent.GroupVersionKind())
				}
				ensureNamespace(ctx, t, cs, sent.GetNamespace())
				if _, err := dyn.Resource(gvr).Namespace(sent.GetNamespace()).Apply(ctx, sent.GetName(), sent,
					metav1.ApplyOptions{FieldManager: "wire-test", Force: true}); err != nil {
					t.Fatalf("apply: %v", err)
				}
				got, err := dyn.Resource(gvr).Namespace(sent.GetNamespace()).Get(ctx, sent.GetName(), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(sent.Object["spec"], got.Object["spec"]); diff != "" {
					t.Errorf("stored spec differs (-sent +stored):\n%s", diff)
				}
				if diff := cmp.Diff(sent.GetLabels(), got.GetLabels()); diff != "" {
					t.Errorf("stored labels differ (-sent +stored):\n%s", diff)
				}
			})
		}
	}
	if n < 15 {
		t.Errorf("only %d lux.network CRs applied", n)
	}
}
