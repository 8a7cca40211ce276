package install_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
)

// waitEstablished waits until every CRD of objs is Established.
func waitEstablished(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", o.GetName(), err)
		}
	}
}

func failures(rs []apply.Result) []string {
	var out []string
	for _, r := range rs {
		if r.Action == apply.Failed || r.Action == apply.Denied {
			out = append(out, r.Object.String()+": "+r.Message)
		}
	}
	return out
}

// TestCRDsBundleAccepted applies `operator crds --api-group lux.cloud` (kinds.Bundle) as
// printed: the apiserver accepts and establishes every CRD.
func TestCRDsBundleAccepted(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := kinds.Bundle("lux.cloud")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ssautil.ReadObjects(strings.NewReader(string(bundle)))
	if err != nil {
		t.Fatal(err)
	}
	rs := (&apply.Applier{Client: c, Manager: kinds.ManagerInstall}).Apply(context.Background(), objs)
	if f := failures(rs); len(f) > 0 {
		t.Fatalf("bundle refused:\n%s", strings.Join(f, "\n"))
	}
	waitEstablished(t, c, objs)
}

// TestInstall installs the operator twice: the first run applies everything, the second
// is all in-sync. The ClusterRole grants the custom resources no delete.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestInstall(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inst := install.Installer{Client: c, Registry: kinds.Builtin()}
	o := install.InstallOptions{APIGroup: "zoo.cloud", Namespace: "install-test", Image: "registry.example/operator:test"}

	first, err := inst.Install(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(first); len(f) > 0 {
		t.Fatalf("first install failed:\n%s", strings.Join(f, "\n"))
	}
	crds, _ := kinds.CRDs(o.APIGroup)
	if want := len(crds) + 8; len(first) != want { // Namespace, 4 RBAC, ServiceAccount, Service, Deployment
		t.Errorf("first install applied %d objects, want %d", len(first), want)
	}
	for _, r := range first {
		if r.Object.Group == "apiextensions.k8s.io" && strings.HasSuffix(r.Object.Name, ".bootno.de") && r.Action != apply.Failed {
			continue // the chain family's CRDs are shared by every universe (an install before this one put them in place)
		}
		if r.Action != apply.Created {
			t.Errorf("first install: %s %s, want %s", r.Object, r.Action, apply.Created)
		}
	}

	second, err := inst.Install(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range second {
		if r.Action != apply.InSync {
			t.Errorf("second install: %s %s, want %s", r.Object, r.Action, apply.InSync)
		}
	}

	// An installed bundle costs one list: every CRD carries the bundle's digest, has no
	// other manager and is Established.
	var requests atomic.Int32
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/customresourcedefinitions") {
				requests.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	cc, err := client.NewWithWatch(counted, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crdsOnly, err := install.Installer{Client: cc, Registry: kinds.Builtin()}.Install(ctx, install.InstallOptions{APIGroup: o.APIGroup, CRDsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(crdsOnly) != len(crds) {
		t.Errorf("--crds-only applied %d objects, want %d", len(crdsOnly), len(crds))
	}
	if n := int(requests.Load()); n != 1 {
		t.Errorf("re-installing %d CRDs cost %d requests, want one list", len(crds), n)
	}
	for _, r := range crdsOnly {
		if r.Action != apply.InSync {
			t.Errorf("--crds-only again: %s %s, want %s", r.Object, r.Action, apply.InSync)
		}
	}
	// A CRD someone else edited is applied again (one request) and put back, and only that one.
	edited := crdsOnly[0].Object.Name
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	crd.SetName(edited)
	if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+install.BundleDigestAnnotation+`":"edited"}}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	again, err := install.Installer{Client: cc, Registry: kinds.Builtin()}.Install(ctx, install.InstallOptions{APIGroup: o.APIGroup, CRDsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := int(requests.Load()); n != 2 {
		t.Errorf("re-installing after an edit of %s cost %d requests, want 2 (the list, one apply)", edited, n)
	}
	for _, r := range again {
		if want := apply.InSync; r.Object.Name == edited && r.Action != apply.Updated || r.Object.Name != edited && r.Action != want {
			t.Errorf("install after an edit of %s: %s %s", edited, r.Object, r.Action)
		}
	}

	dep := &unstructured.Unstructured{}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: install.OperatorName}, dep); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	ctr := containers[0].(map[string]any)
	if ctr["image"] != o.Image || !slices.Equal(ctr["args"].([]any), []any{"run", "--leader-elect=false", "--health-probe-bind-address=:8081", "--webhook-bind-address=:8082", "--metrics-bind-address=:8080"}) {
		t.Errorf("container image %v args %v", ctr["image"], ctr["args"])
	}
}

// TestInstalledRoleSuffices impersonates the installed ServiceAccount: it may apply a CR
// and patch its status, apply and delete a child, hold a Lease in its namespace, and may
// not delete a CR.
func TestInstalledRoleSuffices(t *testing.T) {
	cfg := testbed.APIServer(t)
	admin, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := install.InstallOptions{APIGroup: "osage.cloud", Namespace: "rbac-test", Image: "registry.example/operator:test"}
	rs, err := install.Installer{Client: admin, Registry: kinds.Builtin()}.Install(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(rs); len(f) > 0 {
		t.Fatalf("install failed:\n%s", strings.Join(f, "\n"))
	}
	crds, _ := install.CRDObjects(o.APIGroup)
	waitEstablished(t, admin, crds)

	saCfg := rest.CopyConfig(cfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + o.Namespace + ":" + install.OperatorName}
	sa, err := client.NewWithWatch(saCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs := read(t, `
apiVersion: osage.cloud/v1
kind: Service
metadata: {name: web, namespace: rbac-test}
spec:
  image: {repository: registry.example/web, tag: "1"}
  ports: [{name: http, containerPort: 8080}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: universe-operator.osage.cloud, namespace: rbac-test}
spec: {holderIdentity: me}
`)
	if f := failures((&apply.Applier{Client: sa, Manager: kinds.ManagerGitOps}).Apply(ctx, objs)); len(f) > 0 {
		t.Fatalf("operator may not apply its CR or Lease:\n%s", strings.Join(f, "\n"))
	}
	cr := objs[0]
	if err := sa.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	children, err := kinds.Builtin().Build(cr, kinds.Context{APIGroup: o.APIGroup})
	if err != nil {
		t.Fatal(err)
	}
	if f := failures((&apply.Applier{Client: sa, Manager: kinds.ManagerKinds}).Apply(ctx, children)); len(f) > 0 {
		t.Fatalf("operator may not apply the children:\n%s", strings.Join(f, "\n"))
	}
	status := cr.DeepCopy()
	_ = unstructured.SetNestedField(status.Object, "Pending", "status", "phase")
	if err := sa.Status().Update(ctx, status); err != nil {
		t.Errorf("update status: %v", err)
	}
	if err := sa.Delete(ctx, children[0]); err != nil {
		t.Errorf("delete child %s: %v", children[0].GetKind(), err)
	}
	if err := sa.Delete(ctx, cr); err == nil {
		t.Error("operator may delete its own CR")
	}
	// --metrics-secure: the operator reviews a scraper's token and asks whether it may get /metrics.
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}
	if err := sa.Create(ctx, tr); err != nil {
		t.Errorf("create a TokenReview (--metrics-secure): %v", err)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "scraper",
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}}
	if err := sa.Create(ctx, sar); err != nil {
		t.Errorf("create a SubjectAccessReview (--metrics-secure): %v", err)
	}
}
