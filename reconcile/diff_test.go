package reconcile_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

// diffInput is a namespace with a Secret and the billing fixture, moved into it.
func diffInput(t *testing.T) []source.Object {
	t.Helper()
	billing, err := os.ReadFile(filepath.Join(fixtureCRs, "production", "service-billing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stream := `apiVersion: v1
kind: Namespace
metadata:
  name: diff-test
---
apiVersion: v1
kind: Secret
metadata:
  name: billing-secrets
  namespace: diff-test
stringData:
  key: first-secret-value
---
` + strings.ReplaceAll(string(billing), "namespace: hanzo", "namespace: diff-test")
	objs, fileErrs := source.Parse(&source.Snapshot{Files: []source.File{{Path: "universe/billing.yaml", Data: []byte(stream)}}})
	if len(fileErrs) > 0 {
		t.Fatal(fileErrs)
	}
	return objs
}

// applyAsOperator applies objs as the two loops would: every object under ManagerGitOps,
// then the children of each CR, owned by the live CR, under ManagerKinds.
func applyAsOperator(t *testing.T, c client.WithWatch, objs []source.Object) {
	t.Helper()
	ctx := context.Background()
	// Namespaces first: the Applier applies its objects concurrently, as the sweep's
	// namespace stage precedes the rest.
	var namespaces, gitops []*unstructured.Unstructured
	for _, o := range objs {
		if o.Obj.GetKind() == "Namespace" {
			namespaces = append(namespaces, o.Obj.DeepCopy())
			continue
		}
		gitops = append(gitops, o.Obj.DeepCopy())
	}
	for _, stage := range [][]*unstructured.Unstructured{namespaces, gitops} {
		if f := failures((&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, stage)); len(f) > 0 {
			t.Fatalf("gitops apply:\n%s", strings.Join(f, "\n"))
		}
	}
	reg := kinds.Builtin()
	for _, cr := range gitops {
		if _, ok := reg.Lookup(cr.GroupVersionKind(), kinds.DefaultAPIGroup); !ok {
			continue
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		children, err := reg.Build(cr, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
		if err != nil {
			t.Fatal(err)
		}
		if f := failures((&apply.Applier{Client: c, Manager: kinds.ManagerKinds}).Apply(ctx, children)); len(f) > 0 {
			t.Fatalf("children apply:\n%s", strings.Join(f, "\n"))
		}
	}
}

// actions summarizes results as "Kind/name manager" -> action.
func actions(rs []render.DiffResult) map[string]apply.Action {
	m := map[string]apply.Action{}
	for _, r := range rs {
		m[r.Object.Kind+"/"+r.Object.Name+" "+r.Manager] = r.Action
	}
	return m
}

// TestDiff drives the core of `operator diff` through a cluster's life: everything to
// create before the first apply, exit 0 right after applying the same objects, exit 1
// after an out-of-band edit, with a unified diff that never prints a Secret value.
func TestDiff(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	crds, err := install.CRDObjects(kinds.DefaultAPIGroup)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures((&apply.Applier{Client: c, Manager: kinds.ManagerInstall}).Apply(ctx, crds)); len(f) > 0 {
		t.Fatalf("install CRDs:\n%s", strings.Join(f, "\n"))
	}
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.GetName()
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := apply.WaitEstablished(wctx, c, names, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}

	objs := diffInput(t)
	d := &render.Differ{Client: c, Renderer: renderer(kinds.DefaultAPIGroup)}
	diff := func() ([]render.DiffResult, string) {
		t.Helper()
		rs := d.Diff(ctx, objs)
		for _, r := range rs {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Object, r.Err)
			}
		}
		var out bytes.Buffer
		if err := render.WriteDiff(&out, rs); err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"first-secret-value", "second-secret-value", "Zmlyc3Qtc2VjcmV0LXZhbHVl", "c2Vjb25kLXNlY3JldC12YWx1ZQ=="} {
			if strings.Contains(out.String(), secret) {
				t.Errorf("diff prints a secret value:\n%s", out.String())
			}
		}
		return rs, out.String()
	}

	// Before the first apply: everything would be created, the children without a dry-run.
	rs, out := diff()
	if code := render.CountDiffs(rs).ExitCode(); code != 1 {
		t.Errorf("exit code before apply = %d, want 1:\n%s", code, out)
	}
	for _, r := range rs {
		if r.Action != apply.Created {
			t.Errorf("before apply: %s %s, want %s", r.Object, r.Action, apply.Created)
		}
	}
	if !strings.Contains(out, "► apps/v1/Deployment/diff-test/billing would be created") || !strings.Contains(out, "+++ desired/apps/v1/Deployment/diff-test/billing") {
		t.Errorf("no creation diff for the Deployment:\n%s", out)
	}
	nChildren := 0
	for _, r := range rs {
		if r.Manager == kinds.ManagerKinds {
			nChildren++
		}
	}
	if nChildren < 2 {
		t.Fatalf("only %d children diffed", nChildren)
	}

	// Right after applying the same objects: no drift.
	applyAsOperator(t, c, objs)
	rs, out = diff()
	if code := render.CountDiffs(rs).ExitCode(); code != 0 {
		t.Errorf("exit code after apply = %d, want 0:\n%s", code, out)
	}
	if !strings.HasSuffix(out, render.CountDiffs(rs).String()+"\n") || strings.Contains(out, "►") {
		t.Errorf("converged output:\n%s", out)
	}

	// Out-of-band edits of a child, a Secret and the CR.
	for _, p := range []struct {
		apiVersion, kind, name, patch string
	}{
		{"apps/v1", "Deployment", "billing", `{"spec":{"replicas":5}}`},
		{"v1", "Secret", "billing-secrets", `{"stringData":{"key":"second-secret-value"}}`},
		{"hanzo.ai/v1alpha1", "HanzoService", "billing", `{"spec":{"replicas":9}}`},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(p.apiVersion)
		u.SetKind(p.kind)
		u.SetNamespace("diff-test")
		u.SetName(p.name)
		if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(p.patch)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	}
	rs, out = diff()
	t.Logf("operator diff after out-of-band edits:\n%s", out)
	if code := render.CountDiffs(rs).ExitCode(); code != 1 {
		t.Errorf("exit code after edit = %d, want 1:\n%s", code, out)
	}
	got := actions(rs)
	want := map[string]apply.Action{}
	for k, v := range got {
		want[k] = v
		if v != apply.InSync {
			want[k] = apply.InSync
		}
	}
	want["Deployment/billing "+kinds.ManagerKinds] = apply.Updated
	want["Secret/billing-secrets "+kinds.ManagerGitOps] = apply.Updated
	want["HanzoService/billing "+kinds.ManagerGitOps] = apply.Updated
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("actions after edit (-want +got):\n%s", d)
	}
	for _, line := range []string{"-  replicas: 5", "+  replicas: 2", "-  replicas: 9", "key: '*** (before)'", "key: '*** (after)'"} {
		if !strings.Contains(out, line) {
			t.Errorf("diff lacks %q:\n%s", line, out)
		}
	}
}

var fixtureCRs = filepath.Join("..", "kinds", "testdata", "fixtures", "crs")

func renderer(group string) render.Renderer {
	return render.Renderer{Registry: kinds.Builtin(), APIGroup: group}
}
