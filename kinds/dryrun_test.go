package kinds_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	warnings := &warningRecorder{}
	cfg.WarningHandlerWithContext = warnings
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	reg := kinds.Builtin()
	applied := 0
	for _, c := range goldenCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			objs, err := reg.Build(c.Obj, c.ctx())
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
	t.Logf("%d objects dry-run applied, %d apiserver warnings", applied, len(warnings.list()))
	for _, w := range warnings.list() {
		if w != ingressClassWarning {
			t.Errorf("apiserver warning: %s", w)
		}
	}
}

// ingressClassWarning is the one warning the contract accepts: the class is always the
// kubernetes.io/ingress.class annotation (wire-contract §14.12), never spec.ingressClassName.
const ingressClassWarning = `annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead`

// warningRecorder collects the apiserver's warnings instead of logging them.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, message string) {
	if code != 299 || message == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, message)
}

func (w *warningRecorder) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}

// TestKMSSecretChildInEveryUniverse: the one child whose group follows the universe is a
// valid kms.<group>/v1 KMSSecret in each committed universe.
func TestKMSSecretChildInEveryUniverse(t *testing.T) {
	cfg := apiServerWith(t, universes...)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ensureNamespace(ctx, t, cs, "kms-universes")
	for _, group := range universes {
		t.Run(group, func(t *testing.T) {
			cr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Service",
				"metadata": map[string]any{"name": "web", "namespace": "kms-universes", "uid": "6a1d6c0e-0000-4000-8000-000000000001"},
				"spec": map[string]any{
					"image":      map[string]any{"repository": "r"},
					"kmsSecrets": []any{map[string]any{"secretsPath": "/web", "managedSecretName": "web-env", "projectSlug": "web", "keys": []any{"A", "B"}}},
				},
			}}
			objs, err := kinds.Builtin().Build(cr, kinds.Context{APIGroup: group})
			if err != nil {
				t.Fatal(err)
			}
			var n int
			for _, o := range objs {
				if o.GetKind() != "KMSSecret" {
					continue
				}
				n++
				gvr := schema.GroupVersionResource{Group: "kms." + group, Version: "v1", Resource: "kmssecrets"}
				if o.GroupVersionKind().Group != gvr.Group {
					t.Errorf("KMSSecret at %s, want %s", o.GroupVersionKind().Group, gvr.Group)
				}
				data, err := o.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
					FieldManager: "universe-operator", Force: ptr.To(true), DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict",
				}); err != nil {
					t.Errorf("dry-run apply: %v", err)
				}
			}
			if n != 1 {
				t.Errorf("%d KMSSecrets, want 1", n)
			}
		})
	}
}

// TestNewKindInputsAdmitted: the Static and node runtime CRs the goldens build from are
// admitted by their CRDs as written (strict field validation, dry-run): every field the
// builders act on is one the apiserver keeps.
func TestNewKindInputsAdmitted(t *testing.T) {
	cfg := apiServerWith(t, kinds.DefaultAPIGroup)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	n := 0
	for _, c := range goldenCases(t) {
		switch c.Obj.GetKind() {
		case "Static", "BitcoinRuntime", "EthereumRuntime", "SolanaRuntime":
		default:
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			o := c.Obj.DeepCopy()
			o.SetUID("")
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
			if _, err := dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
				FieldManager: "universe-operator", Force: ptr.To(true), DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict",
			}); err != nil {
				t.Errorf("dry-run apply %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
			}
		})
	}
	if n < 9 {
		t.Errorf("%d inputs, want the 9 of testdata/{static,*runtime}", n)
	}
}
