package upgrade

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openuniverse/operator/e2e/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// TestPreflightDryRun server-side applies every pre-flight resource to a real apiserver with
// the VolumeSnapshot CRDs installed, in dry-run mode with strict field validation: each is a
// valid object of an installed type with no field the schema would drop.
func TestPreflightDryRun(t *testing.T) {
	cfg := testbed.APIServer(t)
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{"testdata/snapshot-crds"}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install the VolumeSnapshot CRDs: %v", err)
	}
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, req := fixture(t, "testdata/stateful.in.yaml", target)
	objs, err := Build(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: no REST mapping: %v", gvk, err)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			FieldManager: "universe-operator-upgrade", Force: ptr.To(true), DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict",
		}); err != nil {
			t.Errorf("dry-run apply %s %s: %v", gvk.Kind, o.GetName(), err)
		}
	}
}
