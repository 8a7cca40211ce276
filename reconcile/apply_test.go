package reconcile_test

import (
	"context"
	"os"
	"strings"
	"testing"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

const objects = `
apiVersion: v1
kind: Namespace
metadata:
  name: apply-test
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: apply-test
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: apply-test
spec:
  selector: {app: web}
  ports:
  - port: 80
`

func read(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssautil.ReadObjects(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// failures lists the results that did not apply, with their messages.
func failures(rs []apply.Result) []string {
	var out []string
	for _, r := range rs {
		if r.Action == apply.Failed || r.Action == apply.Denied {
			out = append(out, r.Object.String()+": "+r.Message)
		}
	}
	return out
}

func summary(rs []apply.Result) map[string]apply.Result {
	m := map[string]apply.Result{}
	for _, r := range rs {
		r.Err = nil
		m[r.Object.Kind] = r
	}
	return m
}

func TestApplier(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &apply.Applier{Client: c, Manager: kinds.ManagerKinds}
	ref := func(kind, group, version string) apply.ObjRef {
		r := apply.ObjRef{Group: group, Version: version, Kind: kind, Name: "web", Namespace: "apply-test"}
		if kind == "Namespace" {
			r.Name, r.Namespace = "apply-test", ""
		}
		return r
	}
	ns, dep, svc := ref("Namespace", "", "v1"), ref("Deployment", "apps", "v1"), ref("Service", "", "v1")

	steps := []struct {
		name string
		edit func(t *testing.T)
		want map[string]apply.Result
	}{
		{
			name: "first apply creates everything",
			want: map[string]apply.Result{
				"Namespace": {Object: ns, Action: apply.Created}, "Deployment": {Object: dep, Action: apply.Created},
				"Service": {Object: svc, Action: apply.Created},
			},
		},
		{
			name: "second apply is in sync",
			want: map[string]apply.Result{
				"Namespace": {Object: ns, Action: apply.InSync}, "Deployment": {Object: dep, Action: apply.InSync},
				"Service": {Object: svc, Action: apply.InSync},
			},
		},
		{
			name: "out-of-band edit is reverted and attributed",
			edit: func(t *testing.T) {
				d := &unstructured.Unstructured{}
				d.SetAPIVersion("apps/v1")
				d.SetKind("Deployment")
				d.SetNamespace("apply-test")
				d.SetName("web")
				if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":7},"metadata":{"labels":{"team":"x"}}}`)), client.FieldOwner("kubectl-edit")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]apply.Result{
				"Namespace":  {Object: ns, Action: apply.InSync},
				"Deployment": {Object: dep, Action: apply.Updated, DriftedBy: []string{"kubectl-edit"}},
				"Service":    {Object: svc, Action: apply.InSync},
			},
		},
	}
	for _, s := range steps {
		if s.edit != nil {
			s.edit(t)
		}
		got := summary(a.Apply(ctx, read(t, objects)))
		if diff := cmp.Diff(s.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}

	live := &unstructured.Unstructured{}
	live.SetAPIVersion("apps/v1")
	live.SetKind("Deployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apply-test", Name: "web"}, live); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas after revert = %d, want 2", r)
	}
	if live.GetLabels()["team"] != "x" {
		t.Errorf("a label we do not manage was removed: %v", live.GetLabels())
	}
}

// TestApplierIsolatesFailures: one invalid object and one the operator may not write fail
// alone, each with its own reason, and the valid object is still applied.
func TestApplierIsolatesFailures(t *testing.T) {
	cfg := testbed.APIServer(t)
	admin, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "patch", "create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Rules: rules},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "limited"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "limited"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "limited", APIGroup: "rbac.authorization.k8s.io"}},
		},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	limitedCfg := rest.CopyConfig(cfg)
	limitedCfg.Impersonate = rest.ImpersonationConfig{UserName: "limited"}
	c, err := client.NewWithWatch(limitedCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &apply.Applier{Client: c, Manager: kinds.ManagerGitOps}
	got := a.Apply(ctx, read(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: bad, namespace: default}
data: {Not A Valid Key!: x}
---
apiVersion: v1
kind: Secret
metadata: {name: denied, namespace: default}
stringData: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: good, namespace: default}
data: {k: v}
`))
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3", len(got))
	}
	if got[0].Action != apply.Failed || !strings.Contains(got[0].Message, "Not A Valid Key!") {
		t.Errorf("invalid ConfigMap: %+v, want Failed naming the bad key", got[0])
	}
	if !apply.Terminal(got[0].Err) || apply.Terminal(got[1].Err) {
		t.Errorf("Terminal(invalid)=%v Terminal(denied)=%v, want true and false", apply.Terminal(got[0].Err), apply.Terminal(got[1].Err))
	}
	if got[1].Action != apply.Denied || !strings.Contains(got[1].Message, "kind Secret in namespace default") {
		t.Errorf("Secret: %+v, want Denied naming the missing grant", got[1])
	}
	if got[2].Action != apply.Created {
		t.Errorf("valid ConfigMap: %+v, want Created", got[2])
	}
}
