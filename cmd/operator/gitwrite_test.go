package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-logr/logr/testr"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
)

func gitHead(t *testing.T, g *testbed.GitServer) (*object.Commit, map[string]string) {
	t.Helper()
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: g.HTTPURL("u.git"), Auth: &githttp.BasicAuth{Username: g.Username, Password: g.Password},
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

// TestDriveCommitsToGit is the apps drive loop wired as operator run wires it: the git
// sweep set up from its flags against a gittestserver repository (setupGitOps), the write
// path opened on the sweep's source (gitWrite) as drive's source.CRCommitter, waking the
// sweep through setupGitOps' sweepAsk, the Kind controllers on the full control plane. The
// sweep's resync is an hour: only the commit's wake can apply the tag within the rollout
// timeout. The platform (httptest,
// the real envelope, checking the Bearer token) declares a new tag for a CR from git: it
// lands as one commit in the CR's file, byte-exact, the sweep applies it, the Deployment
// rolls on kwok and the CR gets Driven; the next ticks commit nothing.
func TestDriveCommitsToGit(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, _ := startManager(t, cfg, drive.DefaultTenantOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "drive-git"
	// org hanzo, labelled as the platform does: drive acts only on a row's own org's CRs
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kinds.OrgLabel: "hanzo"}}},
		client.FieldOwner("cloud-api")); err != nil {
		t.Fatal(err)
	}
	g, err := testbed.NewGitServer("", "bot", "pw-drive-git-93c1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = os.RemoveAll(g.Root()) }()
	crFile := "# the cloud API, declared in git\napiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: gitcloud\n  namespace: " + ns + "\nspec:\n" +
		"  image:\n    repository: ghcr.io/hanzo/gitcloud\n    tag: \"v1.2.3\"  # the platform drives this\n  replicas: 1\n" +
		"  ports:\n    - {name: http, containerPort: 8080, servicePort: 80}\n"
	other := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gitcloud-notes, namespace: " + ns + "}\ndata: {owner: platform}\n"
	base, err := g.Commit("u.git", "main", "init", map[string][]byte{"apps/gitcloud.yaml": []byte(crFile), "apps/notes.yaml": []byte(other)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "git-token")
	if err := os.WriteFile(tokenFile, []byte(g.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &runOptions{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--git-url", g.HTTPURL("u.git"), "--git-username", g.Username, "--gitops-token-file", tokenFile,
		"--gitops-namespaces", ns, "--gitops-resync", "1h", "--gitops-webhook-insecure", "--leader-elect=false", "--namespace", "universe-system"}); err != nil {
		t.Fatal(err)
	}
	o.Git.CacheDir = filepath.Join(dir, "cache")
	if !wantGitWrite(o) {
		t.Fatal("operator run with --git-url would set up no git write path")
	}
	log := testr.New(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := setupGitOps(mgr, cfg, o, runFleet(mgr, o), http.NewServeMux(), gitops.Readiness{}, log)
	if err != nil || ask == nil {
		t.Fatalf("setupGitOps: %v", err)
	}
	gw := &gitWrite{}
	if err := gw.open(o, ask.ask, log); err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(mctx) }()
	defer func() { mcancel(); <-done }()

	dep := &appsv1.Deployment{}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitcloud"}, dep) == nil, nil
	}); err != nil {
		t.Fatal("the sweep never applied the CR or the Kind controller never built its Deployment")
	}

	var rowMu sync.Mutex
	running := "v1.2.3"
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/apps" || r.Header.Get("Authorization") != "Bearer platform-token-77" || r.Header.Get("X-Org-Id") != "hanzo" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		rowMu.Lock()
		defer rowMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apps":[{"id":"hanzo/gitcloud/prod","org":"hanzo","app":"gitcloud","env":"prod","registry":"ghcr.io/hanzo/gitcloud",
		  "declaredTag":"v1.3.0","runningTag":%q,"cluster":"git-cluster","namespace":%q,"extra":{"ignored":true}}],"summary":{"total":1}}`, running, ns)
	}))
	defer platform.Close()
	ptok := filepath.Join(dir, "platform-token")
	if err := os.WriteFile(ptok, []byte("platform-token-77\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(ptok)
	if err != nil {
		t.Fatal(err)
	}
	p, err := drive.NewPlatform(platform.URL, "hanzo", tf)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	apps := &drive.Apps{Platform: p, Client: c, Cluster: "git-cluster", Mode: drive.ModeOn, Allow: drive.AllowList{"hanzo/*"},
		RolloutTimeout: 2 * time.Minute, RolloutPoll: 300 * time.Millisecond, GitOpsManager: kinds.ManagerGitOps,
		Committer: gw, Recorder: ev, Log: log}
	start := time.Now()
	out, err := apps.Tick(ctx)
	if err != nil || len(out) != 1 || out[0].Wrote != "git" || out[0].Rollout != "done" || out[0].Err != nil {
		t.Fatalf("Tick = %+v, %v; events %v", out, err, ev.got)
	}
	t.Logf("declared tag committed, swept, applied and rolled out on kwok in %s", time.Since(start).Round(time.Millisecond))
	head, files := gitHead(t, g)
	if len(head.ParentHashes) != 1 || head.ParentHashes[0].String() != base {
		t.Fatalf("head %s has parents %v, want the one commit on %s", head.Hash, head.ParentHashes, base)
	}
	if want := strings.Replace(crFile, `tag: "v1.2.3"`, `tag: "v1.3.0"`, 1); files["apps/gitcloud.yaml"] != want || files["apps/notes.yaml"] != other {
		t.Fatalf("files after the commit:\n%q\nwant\n%q", files["apps/gitcloud.yaml"], want)
	}
	if !strings.HasPrefix(head.Message, "drive: hanzo/gitcloud/prod ghcr.io/hanzo/gitcloud v1.2.3 -> v1.3.0") || strings.Contains(head.Message, g.Password) ||
		strings.Contains(head.Message, "platform-token-77") {
		t.Errorf("commit message %q", head.Message)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: testGroup, Version: "v1", Kind: "Service"})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gitcloud"}, live); err != nil {
		t.Fatal(err)
	}
	if tag, _, _ := unstructured.NestedString(live.Object, "spec", "image", "tag"); tag != "v1.3.0" {
		t.Errorf("the CR's tag is %s, want v1.3.0 applied by the sweep", tag)
	}
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == kinds.ManagerDrive {
			t.Errorf("drive wrote the git-sourced CR itself (managedFields %s)", mf.Manager)
		}
	}
	if len(ev.got) != 1 || !strings.HasPrefix(ev.got[0], "Driven: ") {
		t.Errorf("events %v", ev.got)
	}
	// Steady state: the platform sees v1.3.0 run; more ticks commit nothing.
	rowMu.Lock()
	running = "v1.3.0"
	rowMu.Unlock()
	for i := 0; i < 2; i++ {
		if _, err := apps.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := gitHead(t, g); again.Hash != head.Hash {
		t.Errorf("a later tick committed again: %s %q", again.Hash, again.Message)
	}
}
