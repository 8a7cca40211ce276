package image_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/upgrade/image"
)

const group = "hanzo.ai"

// TestMain stops the apiserver the tests start.
func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

func setupAPI(t *testing.T) client.Client {
	t.Helper()
	cfg := testbed.APIServer(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, group); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "ImageUpdate" && crd.Spec.Names.Kind != "Service" {
			continue
		}
		crd := crd.DeepCopy()
		if err := c.Create(context.Background(), crd); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mc, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return false, err
		}
		_, e1 := mc.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: "ImageUpdate"}, "v1")
		_, e2 := mc.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: "Service"}, "v1")
		if e1 == nil && e2 == nil {
			c = mc
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pushTags(t *testing.T, host, repo string, tags ...string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		ref, err := name.NewTag(host + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
}

func headOf(t *testing.T, g *testbed.GitServer) (*object.Commit, map[string]string) {
	t.Helper()
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: g.HTTPURL("u.git"), Auth: &githttp.BasicAuth{Username: g.Username, Password: g.Password},
		ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := r.Head()
	c, _ := r.CommitObject(h.Hash())
	files := map[string]string{}
	tree, _ := c.Tree()
	_ = tree.Files().ForEach(func(f *object.File) error { s, _ := f.Contents(); files[f.Name] = s; return nil })
	return c, files
}

// TestReconcilerOnAPIServer drives the controller shell against a real kube-apiserver, a
// gittestserver repository and an in-process OCI registry.
func TestReconcilerOnAPIServer(t *testing.T) {
	c := setupAPI(t)
	ctx := context.Background()
	const ns = "imgup"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	pushTags(t, host, "hanzo/web", "v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0-rc.1")
	pushTags(t, host, "hanzo/worker", "1.0.0", "1.0.1")

	g, err := testbed.NewGitServer("", "bot", "pw-imgup-31")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = os.RemoveAll(g.Root()) }()
	web := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: imgup\nspec:\n  image:\n    repository: " + host + "/hanzo/web\n    tag: 'v1.0.0' # pinned by hand once\n"
	worker := "apiVersion: hanzo.ai/v1\r\nkind: Service\r\nmetadata: {name: worker, namespace: imgup}\r\nspec:\r\n  image: {repository: " + host + "/hanzo/worker, tag: 1.0.0}\r\n"
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"apps/web.yaml": []byte(web), "apps/worker.yaml": []byte(worker)}); err != nil {
		t.Fatal(err)
	}
	// The live Service web records v1.2.0 as rolled back: it must never be proposed.
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Service"})
	live.SetNamespace(ns)
	live.SetName("web")
	_ = unstructured.SetNestedField(live.Object, map[string]any{"repository": host + "/hanzo/web", "tag": "v1.0.0"}, "spec", "image")
	if err := c.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(live.Object, []any{map[string]any{"image": host + "/hanzo/web:v1.2.0", "result": "RolledBack", "fromImage": host + "/hanzo/web:v1.0.0"}}, "status", "upgradeHistory")
	if err := c.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns},
		Data: map[string][]byte{"token": []byte(g.Password), "username": []byte(g.Username)}}); err != nil {
		t.Fatal(err)
	}

	// commits counts the writes that landed a commit: each wakes the sweep (the operator's
	// writers do, cmd/operator's wakingWriter).
	var commits atomic.Int32
	r := &image.Reconciler{Client: c, Reader: c, Registry: &image.Registry{Timeout: 5 * time.Second, AllowPrivate: true}, Now: time.Now, Jitter: func() float64 { return 0 },
		Writers: func(repo string, cr *image.GitCredentials) (source.Writer, error) {
			var creds source.Credentials
			user := ""
			if cr != nil {
				creds, user = source.Static(cr.Token), cr.Username
			}
			w, err := gitclone.NewWriter(creds, gitclone.WriterOptions{URL: repo, Username: user, Retry: source.RetryPolicy{Attempts: 8, Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
			if err != nil {
				return nil, err
			}
			return countingWriter{w, &commits}, nil
		}}
	mk := func(name, repo, path, secret string) {
		t.Helper()
		iu := &v1.ImageUpdate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.ImageUpdateSpec{
			ImageRepository: repo, WritebackRepo: g.HTTPURL("u.git"), WritebackPath: path, CredentialsSecret: secret}}
		if err := c.Create(ctx, iu); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string) *v1.ImageUpdate {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		if err != nil {
			t.Fatalf("reconcile %s: %v", name, err)
		}
		if res.RequeueAfter < time.Minute && res.RequeueAfter != 0 {
			t.Fatalf("requeue after %v, under the 60 s floor", res.RequeueAfter)
		}
		iu := &v1.ImageUpdate{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, iu); err != nil {
			t.Fatal(err)
		}
		return iu
	}
	reason := func(iu *v1.ImageUpdate, typ string) (metav1.ConditionStatus, string, string) {
		cd := meta.FindStatusCondition(iu.Status.Conditions, typ)
		if cd == nil {
			return "", "", ""
		}
		return cd.Status, cd.Reason, cd.Message
	}

	// A push: v1.1.0 (v1.2.0 failed, v2.0.0-rc.1 is a pre-release), one commit, only the tag.
	before, _ := headOf(t, g)
	mk("web", host+"/hanzo/web", "apps/web.yaml", "git")
	iu := run("web")
	head, files := headOf(t, g)
	if st, rs, msg := reason(iu, "Ready"); st != metav1.ConditionTrue || rs != image.ReasonPushed {
		t.Fatalf("web: %s %s %s", st, rs, msg)
	}
	if iu.Status.LastPushedTag != "v1.1.0" || iu.Status.LatestTag != "v1.1.0" || iu.Status.LastCommit != head.Hash.String() || iu.Status.LastPushTime == nil || iu.Status.Phase != v1.PhaseRunning {
		t.Fatalf("status %+v", iu.Status)
	}
	if want := strings.Replace(web, "'v1.0.0'", "'v1.1.0'", 1); files["apps/web.yaml"] != want || files["apps/worker.yaml"] != worker {
		t.Fatalf("files %q", files)
	}
	if head.ParentHashes[0] != before.Hash || !strings.HasPrefix(head.Message, "imageupdate: bump "+host+"/hanzo/web v1.0.0 -> v1.1.0") || commits.Load() != 1 {
		t.Fatalf("commit %q parent %v, commits %d", head.Message, head.ParentHashes, commits.Load())
	}
	// The status is applied by the status manager, which owns every field it wrote.
	for _, mf := range iu.ManagedFields {
		if mf.Subresource == "status" && (mf.Manager != condition.ManagerStatus || mf.Operation != metav1.ManagedFieldsOperationApply) {
			t.Fatalf("status written by %s (%s), want only %s applying", mf.Manager, mf.Operation, condition.ManagerStatus)
		}
	}
	// An earlier release merge-patched the status under its own manager, here with a Stalled
	// condition: the next run, Ready, drops it although the applier never owned it.
	legacy := iu.DeepCopy()
	legacy.Status.Conditions = append(legacy.Status.Conditions, metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue,
		Reason: image.ReasonNoMatch, Message: "written by the merge patch", LastTransitionTime: metav1.Now()})
	if err := c.Status().Patch(ctx, legacy, client.MergeFrom(iu), client.FieldOwner("operator")); err != nil {
		t.Fatal(err)
	}
	// Again: nothing newer, no commit.
	iu = run("web")
	if _, rs, _ := reason(iu, "Ready"); rs != image.ReasonNoNewTag || commits.Load() != 1 {
		t.Fatalf("second run %s, commits %d", rs, commits.Load())
	}
	if st, _, msg := reason(iu, "Stalled"); st != "" {
		t.Fatalf("the merge patch's Stalled condition survived the run: %s %q", st, msg)
	}
	if again, _ := headOf(t, g); again.Hash != head.Hash {
		t.Fatal("a second commit for nothing")
	}

	// Conditions.
	mk("nomatch", host+"/hanzo/absent", "apps/web.yaml", "git")
	pushTags(t, host, "hanzo/absent", "v1.0.0")
	iu = run("nomatch")
	if st, rs, msg := reason(iu, "Stalled"); st != metav1.ConditionTrue || rs != image.ReasonNoMatch || !strings.Contains(msg, "apps/web.yaml") || iu.Status.Phase != v1.PhaseDegraded {
		t.Fatalf("nomatch: %s %s %q %s", st, rs, msg, iu.Status.Phase)
	}
	mk("outage", "127.0.0.1:1/hanzo/web", "apps/web.yaml", "git")
	iu = run("outage")
	if st, rs, _ := reason(iu, "Ready"); st != metav1.ConditionFalse || rs != image.ReasonRegistryError || meta.FindStatusCondition(iu.Status.Conditions, "Stalled") != nil {
		t.Fatalf("outage: %+v", iu.Status.Conditions)
	}
	if st, rs, _ := reason(iu, "Reconciling"); st != metav1.ConditionTrue || rs != image.ReasonRegistryError {
		t.Fatalf("outage is not Reconciling: %+v", iu.Status.Conditions)
	}
	mk("nosecret", host+"/hanzo/web", "apps/web.yaml", "missing")
	iu = run("nosecret")
	if _, rs, msg := reason(iu, "Stalled"); rs != image.ReasonCredentialsError || !strings.Contains(msg, "imgup/missing") {
		t.Fatalf("nosecret: %s %q", rs, msg)
	}

	// Two ImageUpdates racing on one branch (worker, and web after a new tag): both land.
	pushTags(t, host, "hanzo/web", "v1.3.0")
	mk("worker", host+"/hanzo/worker", "apps/worker.yaml", "git")
	var wg sync.WaitGroup
	for _, n := range []string{"web", "worker"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: n}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	_, files = headOf(t, g)
	if !strings.Contains(files["apps/web.yaml"], "tag: 'v1.3.0' # pinned by hand once\n") || !strings.Contains(files["apps/worker.yaml"], "tag: 1.0.1}\r\n") {
		t.Fatalf("after the race: %q", files)
	}
	if commits.Load() != 3 {
		t.Fatalf("commits %d, want 3", commits.Load())
	}
}

// TestHostileTenantImageUpdate is issue 23's attack on the ImageUpdate loop, on a real
// apiserver, git server and registry: a CR in namespace org-a naming org A's x/cloud and
// writebackPath tenants/org-b/cloud.yaml moved org B's orgb/cloud (the same last path segment)
// to a tag org A published, with the operator's token and an author of org A's choosing.
// Now it is refused (ForeignFile), branch names that walk the API path or leave
// imageupdate/ are InvalidSpec, a CR claiming another org is OrgMismatch (Stalled, no hot
// loop), and the commit org A may make in its own file is the operator's.
func TestHostileTenantImageUpdate(t *testing.T) {
	c := setupAPI(t)
	ctx := context.Background()
	for _, ns := range []string{"org-a", "org-b"} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kinds.OrgLabel: ns}}}
		if err := c.Create(ctx, n, client.FieldOwner("cloud-api")); err != nil {
			t.Fatal(err)
		}
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	pushTags(t, host, "orgb/cloud", "v1.0.0")
	pushTags(t, host, "x/cloud", "v1.0.0", "v6.6.6") // org A publishes the tag

	g, err := testbed.NewGitServer("", "bot", "pw-hostile-23")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = os.RemoveAll(g.Root()) }()
	orgB := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: cloud\n  namespace: org-b\nspec:\n  image:\n    repository: " + host + "/orgb/cloud\n    tag: v1.0.0\n"
	orgA := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: cloud\n  namespace: org-a\nspec:\n  image:\n    repository: " + host + "/x/cloud\n    tag: v1.0.0\n"
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"tenants/org-b/cloud.yaml": []byte(orgB), "tenants/org-a/cloud.yaml": []byte(orgA)}); err != nil {
		t.Fatal(err)
	}
	// The operator's own token for its own repository: what the loop was handed before; the
	// sweep's source is the finder.
	src, err := gitclone.New(source.Static(source.NewToken(g.Password)), gitclone.Options{URL: g.HTTPURL("u.git"), Branch: "main", Username: g.Username, CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &image.Reconciler{Universe: &image.Universe{Repo: g.HTTPURL("u.git"), Source: src}, Client: c, Reader: c, Registry: &image.Registry{Timeout: 5 * time.Second, AllowPrivate: true}, Now: time.Now, Jitter: func() float64 { return 0 },
		Writers: func(repo string, _ *image.GitCredentials) (source.Writer, error) {
			return gitclone.NewWriter(source.Static(source.NewToken(g.Password)), gitclone.WriterOptions{URL: repo, Username: g.Username,
				Retry: source.RetryPolicy{Attempts: 4, Base: 10 * time.Millisecond, Max: 100 * time.Millisecond}})
		}}
	run := func(name string, spec v1.ImageUpdateSpec, labels map[string]string) (*v1.ImageUpdate, ctrl.Result) {
		t.Helper()
		spec.WritebackRepo, spec.ImageRepository = g.HTTPURL("u.git"), host+"/x/cloud"
		iu := &v1.ImageUpdate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "org-a", Labels: labels}, Spec: spec}
		if err := c.Create(ctx, iu); err != nil {
			t.Fatal(err)
		}
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "org-a", Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(iu), iu); err != nil {
			t.Fatal(err)
		}
		return iu, res
	}
	stalled := func(iu *v1.ImageUpdate, reason, says string) {
		t.Helper()
		cd := meta.FindStatusCondition(iu.Status.Conditions, "Stalled")
		if cd == nil || cd.Status != metav1.ConditionTrue || cd.Reason != reason || !strings.Contains(cd.Message, says) {
			t.Fatalf("%s: want Stalled %s saying %q, got %+v", iu.Name, reason, says, iu.Status.Conditions)
		}
	}
	before, _ := headOf(t, g)

	iu, _ := run("steal", v1.ImageUpdateSpec{WritebackPath: "tenants/org-b/cloud.yaml", CommitAuthor: &v1.CommitAuthor{Name: "Org B Admin", Email: "admin@orgb.example"}}, nil)
	stalled(iu, image.ReasonForeignFile, "namespace org-a")
	iu, _ = run("walk", v1.ImageUpdateSpec{WritebackPath: "tenants/org-a/cloud.yaml", WritebackRef: "../../../other/repo/git/refs/heads/main"}, nil)
	stalled(iu, image.ReasonInvalidSpec, "writebackRef")
	iu, _ = run("pushmain", v1.ImageUpdateSpec{WritebackPath: "tenants/org-a/cloud.yaml", PushBranch: "release"}, nil)
	stalled(iu, image.ReasonInvalidSpec, "imageupdate/")
	iu, res := run("claim", v1.ImageUpdateSpec{WritebackPath: "tenants/org-a/cloud.yaml"}, map[string]string{kinds.OrgLabel: "org-b"})
	stalled(iu, kinds.ReasonOrgMismatch, "org-b")
	if res.RequeueAfter < 5*time.Minute {
		t.Fatalf("a tenancy refusal requeued after %v", res.RequeueAfter)
	}
	if head, files := headOf(t, g); head.Hash != before.Hash || files["tenants/org-b/cloud.yaml"] != orgB {
		t.Fatalf("a refused CR committed: %s\n%s", head.Message, files["tenants/org-b/cloud.yaml"])
	}

	// Its own file: pushed, by the operator, the CR's author only a trailer.
	iu, _ = run("own", v1.ImageUpdateSpec{WritebackPath: "tenants/org-a/cloud.yaml", PushBranch: "imageupdate/cloud",
		CommitAuthor: &v1.CommitAuthor{Name: "Org B Admin\nSigned-off-by: x", Email: "admin@orgb.example"}}, nil)
	if cd := meta.FindStatusCondition(iu.Status.Conditions, "Ready"); cd == nil || cd.Reason != image.ReasonPushed {
		t.Fatalf("own file: %+v", iu.Status.Conditions)
	}
	cl, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: g.HTTPURL("u.git"), Auth: &githttp.BasicAuth{Username: g.Username, Password: g.Password},
		ReferenceName: plumbing.NewBranchReferenceName("imageupdate/cloud"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := cl.Head()
	commit, _ := cl.CommitObject(h.Hash())
	if commit.Author.Name != source.DefaultAuthor.Name || commit.Committer.Email != source.DefaultAuthor.Email ||
		!strings.HasSuffix(commit.Message, "\nRequested-by: Org B AdminSigned-off-by: x <admin@orgb.example>\n") || strings.Contains(commit.Message, "\nSigned-off-by") {
		t.Fatalf("commit by %s <%s> / %s: %q", commit.Author.Name, commit.Author.Email, commit.Committer.Name, commit.Message)
	}
}

// countingWriter counts the writes of w that landed a commit.
type countingWriter struct {
	source.Writer
	n *atomic.Int32
}

func (w countingWriter) Write(ctx context.Context, c source.Change) (source.Result, error) {
	res, err := w.Writer.Write(ctx, c)
	if err == nil && res.Commit != "" {
		w.n.Add(1)
	}
	return res, err
}
