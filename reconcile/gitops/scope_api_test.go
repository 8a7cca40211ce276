package gitops

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
)

// A cluster-scoped CRD: its kind's scope is known only once the apiserver
// serves it, in the second stage of the same sweep.
const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.test.openuniverse.dev}
spec:
  group: test.openuniverse.dev
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestSweepScopesByTheAPI reproduces the issue on the real apiserver: a
// ClusterRoleBinding to cluster-admin and a MutatingWebhookConfiguration,
// each declaring the owned namespace, were created cluster-wide. Now the
// sweep asks the RESTMapping, refuses both by name (and a cluster-scoped
// custom kind whose CRD arrives in the same snapshot, and the operator's own
// Deployment, and an object with ownerReferences), and creates none of them,
// while the good object next to them is applied.
func TestSweepScopesByTheAPI(t *testing.T) {
	const ns, opNS = "probe", "probe-operator"
	src := newMemSource(map[string][]byte{
		"crs/ns.yaml":     []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: probe}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: probe-operator}\n"),
		"crs/crb.yaml":    []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: probe-pwn, namespace: probe}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: probe}]\n"),
		"crs/crb2.yaml":   []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: probe-pwn2}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: probe}]\n"),
		"crs/hook.yaml":   []byte("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: probe-hook, namespace: probe}\nwebhooks: []\n"),
		"crs/crd.yaml":    []byte(gadgetCRD),
		"crs/gadget.yaml": []byte("apiVersion: test.openuniverse.dev/v1\nkind: Gadget\nmetadata: {name: probe-gadget, namespace: probe}\n"),
		"crs/op.yaml":     []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: universe-operator, namespace: probe-operator}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: x, image: evil}]}\n"),
		"crs/owned.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\n  namespace: probe\n  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: ghost, uid: 6f1c7b2e-0000-4000-8000-000000000000}]\n"),
		"crs/good.yaml":   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: probe}\ndata: {k: v}\n"),
	})
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Namespaces, o.CRDs = []string{ns, opNS}, true
	scope, err := o.Scope(Self{Namespace: opNS, Objects: []SelfObject{{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Name: "universe-operator"}}})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSweeper(cfg, src, scope, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	for round := 1; round <= 2; round++ { // the second sweep: the kinds are all known now
		r := sw.Sweep(context.Background())
		if r.Error != "" {
			t.Fatal(r.Error)
		}
		got := map[string]Reason{}
		for _, s := range r.Skips {
			got[s.File] = s.Reason
			t.Logf("round %d: skip %s", round, s)
		}
		want := map[string]Reason{
			"crs/crb.yaml": ReasonClusterScoped, "crs/crb2.yaml": ReasonClusterScoped, "crs/hook.yaml": ReasonClusterScoped,
			"crs/gadget.yaml": ReasonClusterScoped, "crs/op.yaml": ReasonOperatorObject, "crs/owned.yaml": ReasonOwnerReferences,
		}
		for f, reason := range want {
			if got[f] != reason {
				t.Errorf("round %d: %s skipped as %q, want %q", round, f, got[f], reason)
			}
		}
		for _, res := range r.Results {
			if res.Action == "Failed" {
				t.Errorf("round %d: %s failed: %s", round, res.Object, res.Message)
			}
		}
	}
	for _, o := range []client.Object{
		gvkObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "probe-pwn"),
		gvkObject("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "probe-pwn2"),
		gvkObject("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "probe-hook"),
		gvkObject("test.openuniverse.dev/v1", "Gadget", "", "probe-gadget"),
		gvkObject("apps/v1", "Deployment", opNS, "universe-operator"),
		gvkObject("v1", "ConfigMap", ns, "owned"),
	} {
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s exists (err %v): git wrote outside its scope", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "good"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the good ConfigMap next to the refused objects: %v", err)
	}
}

func gvkObject(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestGitPathClientNeverDeletes: the sweep's own client refuses Delete and
// DeleteAllOf without sending a request, so nothing below the plan can prune.
func TestGitPathClientNeverDeletes(t *testing.T) {
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "never-delete"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns}},
	} {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	reqs := &requests{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	sw, err := NewSweeper(counted, newMemSource(nil), mustScope(t, []string{ns}, nil), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	c := sw.applier.Client
	reqs.take()
	if err := c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns}}); !errors.Is(err, ErrNeverDeletes) {
		t.Errorf("Delete = %v, want ErrNeverDeletes", err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns)); !errors.Is(err, ErrNeverDeletes) {
		t.Errorf("DeleteAllOf = %v, want ErrNeverDeletes", err)
	}
	if n := reqs.take(); total(n) != 0 {
		t.Errorf("a refused delete sent requests: %v", n)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap is gone: %v", err)
	}
	// Reads still work through it.
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("Get through the git path's client: %v", err)
	}
}
