package preview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

// fakeRevisions is the git boundary as a RefResolver sees it: refs to SHAs, SHAs to
// snapshots. Resolving a pull request's head ref signals entered, then waits on gate when
// gate is set, so a test holds a preview in flight.
type fakeRevisions struct {
	mu      sync.Mutex
	refs    map[string]string
	snaps   map[string]*source.Snapshot
	gate    chan struct{}
	entered chan string
}

func (r *fakeRevisions) Resolve(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, "refs/pull/") && r.gate != nil {
		select {
		case r.entered <- ref:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		select {
		case <-r.gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.snaps[ref]; ok {
		return ref, nil
	}
	if sha, ok := r.refs[ref]; ok {
		return sha, nil
	}
	return "", fmt.Errorf("no such ref %s", ref)
}

func (r *fakeRevisions) set(ref, sha string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs[ref] = sha
}

func (r *fakeRevisions) Snapshot(_ context.Context, rev string) (*source.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.snaps[rev]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("no commit %s", rev)
}

func checker(t *testing.T, srv *statustest.Server) commitstatus.Checker {
	t.Helper()
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := source.OpenTokenFile(tf)
	if err != nil {
		t.Fatal(err)
	}
	o := commitstatus.DefaultOptions()
	o.Provider, o.URL, o.Repository, o.TokenFile = srv.Provider, srv.URL, "acme/universe", tf
	prov, err := commitstatus.NewProvider(o, creds)
	if err != nil {
		t.Fatal(err)
	}
	return prov.(commitstatus.Checker)
}

func results() map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{ResultPosted, ResultFailed, ResultSuperseded, ResultDropped} {
		out[r] = testutil.ToFloat64(metricPreviews.WithLabelValues(r))
	}
	return out
}

func delta(before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range results() {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// TestWorkerQueueAndOutage: Enqueue never waits for the preview, the git host or the check's
// host; a newer head supersedes a pending one and makes a finished stale one unposted; the
// queue drops its oldest pull request when full; a hanging check host holds the worker
// alone, and a refused check counts as failed.
func TestWorkerQueueAndOutage(t *testing.T) {
	base := strings.Repeat("b", 40)
	files := map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n"}
	revs := &fakeRevisions{refs: map[string]string{"main": base}, snaps: map[string]*source.Snapshot{base: snapshot(base, files)},
		gate: make(chan struct{}), entered: make(chan string)}
	for _, h := range []string{"1", "2", "3", "4", "5", "6"} {
		sha := strings.Repeat(h, 40)
		revs.snaps[sha] = snapshot(sha, files) // the same files: a preview that needs no apiserver
	}
	srv := statustest.New(t, commitstatus.GitHub, "tok")
	sc, err := gitops.NewScope([]string{"x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorker(&Previewer{Scope: sc, Differ: &render.Differ{}}, revs, checker(t, srv), commitstatus.DefaultContext, "main", 2, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	before := results()
	event := func(n int, head string) gitops.PullRequest {
		return gitops.PullRequest{Host: gitops.HostGitHub, Number: n, BaseRef: "main", BaseSHA: base,
			HeadSHA: strings.Repeat(head, 40), HeadRef: fmt.Sprintf("refs/pull/%d/head", n)}
	}

	// 1. #1@1 in flight; #1@2 comes while it is: the finished @1 is stale, not posted
	revs.set("refs/pull/1/head", strings.Repeat("1", 40))
	if why := w.Enqueue(event(1, "1")); why != "" {
		t.Fatal(why)
	}
	<-revs.entered
	if why := w.Enqueue(event(1, "2")); why != "" {
		t.Fatal(why)
	}
	if why := w.Enqueue(event(1, "2")); !strings.Contains(why, "already queued") {
		t.Fatalf("a redelivery: %q", why)
	}
	if why := w.Enqueue(gitops.PullRequest{Number: 9, BaseRef: "staging", HeadSHA: strings.Repeat("9", 40)}); !strings.Contains(why, "not the swept branch main") {
		t.Fatalf("a pull request into another branch: %q", why)
	}
	revs.gate <- struct{}{} // @1 reads its revisions, previews, finds @2 pending
	<-revs.entered          // @2 in flight: @1 was not posted
	if d := delta(before); d[ResultSuperseded] != 1 || d[ResultPosted] != 0 {
		t.Fatalf("after the stale preview: %v", d)
	}
	revs.set("refs/pull/1/head", strings.Repeat("2", 40))

	// 2. the check host hangs while @2 posts: the queue takes events, drops the oldest when full
	srv.Hang()
	revs.gate <- struct{}{}
	for _, e := range []gitops.PullRequest{event(2, "3"), event(3, "4"), event(4, "5")} {
		if why := w.Enqueue(e); why != "" {
			t.Fatal(why)
		}
	}
	if d := delta(before); d[ResultDropped] != 1 {
		t.Fatalf("3 pull requests into a queue of 2: %v, want one dropped", d)
	}
	srv.Release()
	if p := <-srv.Posted; p.SHA != strings.Repeat("2", 40) || !p.CheckRun || p.Context != "universe-operator/sync/preview" || p.State != "success" {
		t.Fatalf("posted %+v, want #1's newer head", p)
	}

	// 3. #3's head ref moved on past its event: superseded; #4's check is refused: failed
	revs.set("refs/pull/3/head", strings.Repeat("6", 40))
	revs.set("refs/pull/4/head", strings.Repeat("5", 40))
	<-revs.entered // #3
	revs.gate <- struct{}{}
	<-revs.entered // #4
	srv.Down(2)
	revs.gate <- struct{}{}
	revs.set("refs/pull/5/head", strings.Repeat("1", 40))
	if why := w.Enqueue(event(5, "1")); why != "" {
		t.Fatal(why)
	}
	<-revs.entered // #5: #4 is done
	if d := delta(before); d[ResultPosted] != 1 || d[ResultSuperseded] != 2 || d[ResultDropped] != 1 || d[ResultFailed] != 1 {
		t.Fatalf("outcomes %v; want posted 1 (#1@2), superseded 2 (#1@1, #3), dropped 1 (#2), failed 1 (#4)", d)
	}
	revs.gate <- struct{}{}
	if p := <-srv.Posted; p.SHA != strings.Repeat("1", 40) {
		t.Fatalf("posted %+v, want #5's head", p)
	}
	for _, p := range srv.Posts() {
		if p.SHA == strings.Repeat("4", 40) || p.SHA == strings.Repeat("6", 40) {
			t.Errorf("posted on a dropped or moved head: %+v", p)
		}
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("requests against GitHub's documented check-runs API: %v", v)
	}
}

// TestWorkerPostsPreview: a pull request changing a Service CR's tag, read through the
// RefResolver (its base by SHA, its head by refs/pull/N/head), previewed on the shared
// envtest apiserver, gets a check run on its head naming the Deployment that rolls.
func TestWorkerPostsPreview(t *testing.T) {
	cfg := testbed.APIServer(t)
	const ns = "preview-worker"
	c := setup(t, cfg, ns)
	p := previewer(t, c, ns)
	base := snapshot(strings.Repeat("c", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v1")})
	applyBase(t, c, p.Differ.Renderer, base)
	head := snapshot(strings.Repeat("d", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v2")})
	revs := &fakeRevisions{refs: map[string]string{"refs/pull/7/head": head.Revision},
		snaps: map[string]*source.Snapshot{base.Revision: base, head.Revision: head}}
	srv := statustest.New(t, commitstatus.GitHub, "tok")
	w := NewWorker(p, revs, checker(t, srv), "ops/sync", "main", 0, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if why := w.Enqueue(gitops.PullRequest{Host: gitops.HostGitHub, Number: 7, Action: "opened", BaseRef: "main", BaseSHA: base.Revision,
		HeadSHA: head.Revision, HeadRef: "refs/pull/7/head"}); why != "" {
		t.Fatal(why)
	}
	got := <-srv.Posted
	if !got.CheckRun || got.SHA != head.Revision || got.Context != "ops/sync/preview" || got.State != "success" ||
		!strings.Contains(got.Description, "rolls Deployment/"+ns+"/web (3 pods)") || !strings.Contains(got.Text, "ghcr.io/hanzoai/web:v2") {
		t.Fatalf("check run %+v", got)
	}
}
