package reconcile_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/upgrade/image"
)

// gitHead reads the branch head of the gittestserver repository: the commit and the files.
func gitHead(t *testing.T, g *testbed.GitServer, repo string) (*object.Commit, map[string]string) {
	t.Helper()
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: g.HTTPURL(repo), Auth: &githttp.BasicAuth{Username: g.Username, Password: g.Password},
		ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(h.Hash())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tree, _ := c.Tree()
	_ = tree.Files().ForEach(func(f *object.File) error { s, _ := f.Contents(); files[f.Name] = s; return nil })
	return c, files
}

func getUp(ctx context.Context, c client.Client, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvkService)
	return u, c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: name}, u)
}

// TestRevertInGit: a Service applied by the git sweep (a real Sweeper over a gittestserver
// repository) is upgraded in git to an image that crash-loops on kwok; the upgrade machine
// rolls back, latches Failed and — spec.upgradePolicy.revertInGit — commits the image back to
// lastGood in the CR's file, once, with the failure in the message. The next sweep applies it
// and the one after is in sync; the machine is Stable on lastGood. A CR created in the cluster
// with the same policy gets no commit, and says why.
func TestRevertInGit(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	g, err := testbed.NewGitServer("", "bot", "pw-revert-in-git-41")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = os.RemoveAll(g.Root()) }()
	const good, bad = "testbed.invalid/crash-loop:v0", testbed.CrashLoopImage // v0 runs; v1 crash-loops on kwok
	file := func(tag string) string {
		return "# the git-sourced service\napiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: gitrev\n  namespace: " + upNS + "\nspec:\n" +
			"  image:\n    repository: testbed.invalid/crash-loop\n    tag: " + tag + "   # bumped by hand\n  replicas: 1\n" +
			"  ports:\n  - {name: http, containerPort: 8080}\n" +
			"  upgradePolicy: {enabled: true, preflight: false, soakSeconds: 3, rolloutDeadlineSeconds: 60, revertInGit: true}\n"
	}
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"apps/gitrev.yaml": []byte(file("v0"))}); err != nil {
		t.Fatal(err)
	}
	creds := source.Static(source.NewToken(g.Password))
	src, err := gitclone.New(creds, gitclone.Options{URL: g.HTTPURL("u.git"), Branch: "main", Username: g.Username, CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitclone.NewWriter(creds, gitclone.WriterOptions{URL: g.HTTPURL("u.git"), Username: g.Username})
	if err != nil {
		t.Fatal(err)
	}
	scope, err := gitops.Options{Namespaces: []string{upNS}}.Scope(gitops.Self{Namespace: "universe-system"})
	if err != nil {
		t.Fatal(err)
	}
	sweeper, err := gitops.NewSweeper(cfg, src, scope, gitops.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sweeper.Close()
	committer := crCommitter{&image.CRWriter{Source: src, Writer: w, Branch: "main"}} // the test sweeps by hand
	logs := startKinds(t, cfg, reconcile.WithUpgrades(true), reconcile.WithGitWriter(committer))
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	sweep := func(want apply.Action) {
		t.Helper()
		r := sweeper.Sweep(ctx)
		for _, res := range r.Results {
			if res.Object.Name == "gitrev" {
				if res.Action != want {
					t.Fatalf("sweep at %s: gitrev %s (%s), want %s", r.Revision, res.Action, res.Message, want)
				}
				return
			}
		}
		t.Fatalf("sweep at %s (%s): no result for gitrev; skips %v", r.Revision, r.Error, r.Skips)
	}
	sweep(apply.Created)
	// The same policy on a CR created in the cluster: never a commit.
	direct := upgradeCR("clusterrev", good, map[string]any{"enabled": true, "preflight": false, "soakSeconds": int64(3),
		"rolloutDeadlineSeconds": int64(60), "revertInGit": true}, nil)
	if err := c.Create(ctx, direct, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	await := func(name, what string, ok func(upView) bool) upView {
		t.Helper()
		var last upView
		poll(ctx, t, name+": "+what, func() (bool, string) {
			v, err := view(ctx, c, name)
			if err != nil {
				return false, err.Error()
			}
			last = v
			return ok(v), v.String()
		})
		return last
	}
	for _, n := range []string{"gitrev", "clusterrev"} {
		await(n, "adopts v0 as the baseline", func(v upView) bool { return v.lastGood == good && v.phase == "" })
	}

	// A human bumps the tag in git to the crash-looping v1; the sweep applies it.
	bumped, err := g.Commit("u.git", "main", "bump gitrev to v1", map[string][]byte{"apps/gitrev.yaml": []byte(file("v1"))})
	if err != nil {
		t.Fatal(err)
	}
	sweep(apply.Updated)
	patch := []byte(`{"spec":{"image":{"tag":"v1"}}}`)
	if err := c.Patch(ctx, direct, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, n := range []string{"gitrev", "clusterrev"} {
		await(n, "rolled back and latched", func(v upView) bool {
			return v.phase == "Failed" && slices.Equal(v.history, []string{"RolledBack"}) && v.deployImage == good
		})
	}
	var revert string
	poll(ctx, t, "gitrev: revert recorded", func() (bool, string) {
		cr, err := getUp(ctx, c, "gitrev")
		if err != nil {
			return false, err.Error()
		}
		revert, _, _ = unstructured.NestedString(cr.Object, "status", "upgrade", "revertCommit")
		return revert != "", "no status.upgrade.revertCommit"
	})
	t.Logf("Failed to revert commit recorded: %v", time.Since(start).Round(time.Millisecond))
	head, files := gitHead(t, g, "u.git")
	if head.Hash.String() != revert || len(head.ParentHashes) != 1 || head.ParentHashes[0].String() != bumped {
		t.Fatalf("head %s (parents %v), recorded revert %s, the bump %s", head.Hash, head.ParentHashes, revert, bumped)
	}
	if files["apps/gitrev.yaml"] != file("v0") {
		t.Fatalf("the revert is not byte-exact:\n%q\nwant\n%q", files["apps/gitrev.yaml"], file("v0"))
	}
	for _, want := range []string{"upgrade: revert " + upNS + "/gitrev to " + good + "\n", "The upgrade of Service " + upNS + "/gitrev to " + bad + " failed: ", "crash-looping"} {
		if !strings.Contains(head.Message, want) {
			t.Errorf("revert message %q lacks %q", head.Message, want)
		}
	}
	// The sweep applies the revert, the next one is in sync, and the machine is Stable.
	sweep(apply.Updated)
	sweep(apply.InSync)
	await("gitrev", "stable on v0 after the revert", func(v upView) bool {
		return v.phase == "" && v.lastGood == good && v.deployImage == good && slices.Equal(v.history, []string{"RolledBack"})
	})
	// The cluster-only CR: Failed, no commit, and the condition says why.
	v := await("clusterrev", "still latched", func(v upView) bool { return v.phase == "Failed" })
	cr, err := getUp(ctx, c, "clusterrev")
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	said := ""
	for _, x := range conds {
		if m := x.(map[string]any); m["type"] == reconcile.ConditionUpgradeFailed {
			said, _ = m["message"].(string)
		}
	}
	if !strings.Contains(said, "not applied from the universe repository") {
		t.Errorf("clusterrev UpgradeFailed message %q (%s)", said, v)
	}
	// Once per failure: more reconciles commit nothing more.
	for i := 0; i < 3; i++ {
		poke := []byte(`{"metadata":{"annotations":{"test/poke":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
		for _, o := range []*unstructured.Unstructured{direct} {
			if err := c.Patch(ctx, o, client.RawPatch(types.MergePatchType, poke)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
	}
	if h, _ := gitHead(t, g, "u.git"); h.Hash != head.Hash {
		t.Fatalf("a second commit landed: %s %q", h.Hash, h.Message)
	}
}

// crCommitter is the CR write path as a source.CRCommitter, without the operator's wake.
type crCommitter struct{ w *image.CRWriter }

func (c crCommitter) CommitImage(ctx context.Context, ch source.CRImage) (source.Result, error) {
	res, err := c.w.Commit(ctx, ch)
	return res.Result, err
}
