package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

func previewServiceCR(ns, tag string) string {
	return "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: " + ns + "\nspec:\n" +
		"  image: {repository: ghcr.io/hanzoai/web, tag: \"" + tag + "\"}\n  replicas: 3\n" +
		"  ports:\n    - {name: http, containerPort: 8080, servicePort: 80}\n"
}

// applyLive applies files as the sweep and the Kind controller would have: the CRs and
// plain objects under the gitops manager, the CRs' children under the Kind controllers'.
func applyLive(t *testing.T, cfg *rest.Config, files map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := kinds.Bundle(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ssautil.ReadObjects(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: "test"}).Apply(ctx, crds) {
		if r.Err != nil {
			t.Fatalf("install %s: %v", r.Object, r.Err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if c, err = client.New(cfg, client.Options{}); err != nil {
			return false, err
		}
		_, err = c.RESTMapper().RESTMapping(schema.GroupKind{Group: testGroup, Kind: "Service"}, "v1")
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	snap := &source.Snapshot{}
	for p, d := range files {
		snap.Files = append(snap.Files, source.File{Path: p, Data: d})
	}
	objs, errs := source.Parse(snap)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rd := render.Renderer{Registry: kinds.Builtin(), APIGroup: testGroup}
	for _, o := range objs {
		if o.Obj.GetKind() == "Namespace" {
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Obj.GetNamespace()}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for _, res := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{o.Obj}) {
			if res.Err != nil {
				t.Fatalf("apply %s: %v", res.Object, res.Err)
			}
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.Obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o.Obj), live); err != nil {
			t.Fatal(err)
		}
		withUID := o
		withUID.Obj = o.Obj.DeepCopy()
		withUID.Obj.SetUID(live.GetUID())
		out := rd.RenderOne(withUID)
		if out.Err != nil || !out.CR {
			continue
		}
		for _, res := range (&apply.Applier{Client: c, Manager: kinds.ManagerKinds}).Apply(ctx, out.Objects) {
			if res.Err != nil {
				t.Fatalf("apply %s: %v", res.Object, res.Err)
			}
		}
	}
}

// TestPreviewCommand: `operator preview` on the real apiserver and a gittestserver
// repository, its git source and kube client from the flags operator run takes. A branch
// changing a Service CR's tag exits 0 naming the Deployment that rolls, with the image diff
// and never a Secret's value; a branch adding a ClusterRoleBinding exits 1 naming rule
// ClusterScoped; an unknown ref exits 2 naming it; --post posts one check run whose title is
// the summary; --post without --commit-status is refused naming the flag.
func TestPreviewCommand(t *testing.T) {
	cfg := testbed.APIServer(t)
	kc := writeKubeconfig(t, cfg)
	const ns = "preview-cli"
	g, err := testbed.NewGitServer("", "bot", "pw-preview-5e1f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(); _ = os.RemoveAll(g.Root()) })
	secret := func(v string) []byte {
		return []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + "}\nstringData: {password: " + v + "}\n")
	}
	main := map[string][]byte{
		"apps/web.yaml":   []byte(previewServiceCR(ns, "v1")),
		"apps/db.yaml":    secret("hunter2-base"),
		"apps/other.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: " + ns + "}\n"),
	}
	with := func(extra map[string][]byte) map[string][]byte {
		out := map[string][]byte{}
		for p, d := range main {
			out[p] = d
		}
		for p, d := range extra {
			out[p] = d
		}
		return out
	}
	if _, err := g.Commit("u.git", "main", "init", main); err != nil {
		t.Fatal(err)
	}
	tag, err := g.Commit("u.git", "tag", "web v2", with(map[string][]byte{"apps/web.yaml": []byte(previewServiceCR(ns, "v2")), "apps/db.yaml": secret("hunter2-head")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commit("u.git", "crb", "admin", with(map[string][]byte{"apps/crb.yaml": []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" +
		"metadata: {name: preview-cli-admin}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
		"subjects: [{kind: ServiceAccount, name: default, namespace: " + ns + "}]\n")})); err != nil {
		t.Fatal(err)
	}
	applyLive(t, cfg, main)

	dir := t.TempDir()
	gitToken := filepath.Join(dir, "git-token")
	statusToken := filepath.Join(dir, "status-token")
	for p, v := range map[string]string{gitToken: g.Password, statusToken: "ghs_preview"} {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := func(head string, more ...string) []string {
		return append([]string{"preview", "--kubeconfig", kc, "--api-group", testGroup,
			"--git-url", g.HTTPURL("u.git"), "--git-username", g.Username, "--gitops-token-file", gitToken,
			"--git-cache-dir", filepath.Join(dir, "cache"), "--gitops-namespaces", ns, "--base", "main", "--head", head}, more...)
	}
	noSecret := func(t *testing.T, out, stderr string) {
		t.Helper()
		if strings.Contains(out+stderr, "hunter2") {
			t.Errorf("a Secret's value is printed:\n%s", out)
		}
		if strings.Contains(out+stderr, g.Password) {
			t.Errorf("the git password is printed")
		}
	}

	t.Run("image change", func(t *testing.T) {
		out, stderr, code := execute(t, "", args("tag")...)
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
		}
		for _, want := range []string{"rolls Deployment/" + ns + "/web (3 pods)", "ghcr.io/hanzoai/web:v1 → ghcr.io/hanzoai/web:v2",
			"+        image: ghcr.io/hanzoai/web:v2", "-        image: ghcr.io/hanzoai/web:v1", "Secret/" + ns + "/db"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "ConfigMap/"+ns+"/other") {
			t.Errorf("the unchanged file was built:\n%s", out)
		}
		noSecret(t, out, stderr)
	})
	t.Run("head by SHA", func(t *testing.T) {
		out, stderr, code := execute(t, "", args(tag)...)
		if code != 0 || !strings.Contains(out, "rolls Deployment/"+ns+"/web") {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
		}
	})
	t.Run("scope refusal", func(t *testing.T) {
		out, stderr, code := execute(t, "", args("crb")...)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
		}
		if !strings.Contains(out, "rule ClusterScoped") || !strings.Contains(out, "preview-cli-admin") {
			t.Errorf("stdout does not name the rule and the object:\n%s", out)
		}
		noSecret(t, out, stderr)
	})
	t.Run("unknown ref", func(t *testing.T) {
		out, stderr, code := execute(t, "", args("no-such-branch")...)
		if code != 2 || !strings.Contains(stderr, "--head no-such-branch") || !strings.Contains(stderr, "u.git") {
			t.Fatalf("exit %d, want 2 naming the ref and the repository\n%s\n%s", code, out, stderr)
		}
		noSecret(t, out, stderr)
	})
	t.Run("post", func(t *testing.T) {
		srv := statustest.New(t, "github", "ghs_preview")
		out, stderr, code := execute(t, "", args("tag", "--post", "--commit-status", "github", "--commit-status-url", srv.URL,
			"--commit-status-repository", "acme/universe", "--commit-status-token-file", statusToken)...)
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
		}
		posts := srv.Posts()
		if len(posts) != 1 || len(srv.Violations()) > 0 {
			t.Fatalf("posts %+v, violations %v", posts, srv.Violations())
		}
		p := posts[0]
		first, _, _ := strings.Cut(out, "\n")
		if !p.CheckRun || p.SHA != tag || p.State != "success" || p.Context != "universe-operator/sync/preview" ||
			p.Description == "" || !strings.Contains(first, p.Description) || !strings.Contains(p.Text, "ghcr.io/hanzoai/web:v2") {
			t.Errorf("check run %+v; want one on %s titled with the summary of %q", p, tag, first)
		}
		if strings.Contains(p.Summary+p.Text, "hunter2") {
			t.Error("the check run holds a Secret's value")
		}
	})
	t.Run("post refused", func(t *testing.T) {
		for want, extra := range map[string][]string{
			"--commit-status":            {"--post"},
			"--commit-status-token-file": {"--post", "--commit-status", "github"},
		} {
			_, stderr, code := execute(t, "", args("tag", extra...)...)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("%v: exit %d, want 2 naming %s\n%s", extra, code, want, stderr)
			}
		}
	})
	t.Run("bad flag", func(t *testing.T) {
		if _, stderr, code := execute(t, "", "preview", "--no-such-flag"); code != 2 {
			t.Errorf("exit %d, want 2\n%s", code, stderr)
		}
		if _, stderr, code := execute(t, "", "preview", "--git-url", g.HTTPURL("u.git"), "--gitops-namespaces", ns, "--head", "tag"); code != 2 || !strings.Contains(stderr, "--base") {
			t.Errorf("exit %d, want 2 naming --base\n%s", code, stderr)
		}
	})
}
