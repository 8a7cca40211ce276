package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

func TestStatusOf(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	ok := Summary{Created: 2, Updated: 1, InSync: 40, Orphaned: 1}
	cases := []struct {
		name   string
		prev   commitstatus.Status
		report Report
		want   commitstatus.Status
		post   bool
	}{
		{"no revision, no status", commitstatus.Status{}, Report{Error: "resolve head: 503"}, commitstatus.Status{}, false},
		{"success after the start", startedStatus(a), Report{Revision: a, Summary: ok},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 3, in sync 40, refused 0, held 0, orphaned 1"}, true},
		{"a failed object", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 3, Errors: 1}},
			commitstatus.Status{SHA: a, State: commitstatus.Failure, Description: "applied 0, in sync 3, refused 0, held 0, orphaned 0, failed 1"}, true},
		{"refused by scope and RBAC", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 3, Denied: 1, OutOfScope: 2}},
			commitstatus.Status{SHA: a, State: commitstatus.Failure, Description: "applied 0, in sync 3, refused 3, held 0, orphaned 0"}, true},
		{"an unusable file", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 3, Skipped: 1}},
			commitstatus.Status{SHA: a, State: commitstatus.Failure, Description: "applied 0, in sync 3, refused 0, held 0, orphaned 0, unusable 1"}, true},
		{"held back: still pending, with the counts", startedStatus(a), Report{Revision: a, Summary: Summary{Created: 1, Held: 2}},
			commitstatus.Status{SHA: a, State: commitstatus.Pending, Description: "applied 1, in sync 0, refused 0, held 2, orphaned 0"}, true},
		{"suspended paths do not fail", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 1, Suspended: 2}},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 0, in sync 1, refused 0, held 0, orphaned 0, suspended 2"}, true},
		{"the sweep stopped", startedStatus(a), Report{Revision: a, Error: "read snapshot: 502 from https://x"},
			commitstatus.Status{SHA: a, State: commitstatus.Error, Description: "sweep failed before applying; see the operator's log and GET /gitops"}, true},
		{"a resync in the same state keeps the first description",
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 3, in sync 40, refused 0, held 0, orphaned 1"},
			Report{Revision: a, Summary: Summary{InSync: 43, Orphaned: 1}},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 3, in sync 40, refused 0, held 0, orphaned 1"}, true},
		{"a change of state posts the new counts",
			commitstatus.Status{SHA: a, State: commitstatus.Failure, Description: "applied 0, in sync 3, refused 0, held 0, orphaned 0, failed 1"},
			Report{Revision: a, Summary: Summary{Updated: 1, InSync: 3}},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 1, in sync 3, refused 0, held 0, orphaned 0"}, true},
		{"rolling out: pending with the count", startedStatus(a), Report{Revision: a, Summary: Summary{Created: 2, Health: HealthCounts{Current: 1, InProgress: 1}}},
			commitstatus.Status{SHA: a, State: commitstatus.Pending, Description: "applied 2, in sync 0, refused 0, held 0, orphaned 0, rolling out 1"}, true},
		{"not found or terminating is rolling out too", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 2, Health: HealthCounts{NotFound: 1, Terminating: 1}}},
			commitstatus.Status{SHA: a, State: commitstatus.Pending, Description: "applied 0, in sync 2, refused 0, held 0, orphaned 0, rolling out 2"}, true},
		{"Current, or unknown to any watch: success", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 2, Health: HealthCounts{Current: 1, Unknown: 1}}},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 0, in sync 2, refused 0, held 0, orphaned 0"}, true},
		{"a Failed health fails the commit", startedStatus(a), Report{Revision: a, Summary: Summary{InSync: 2, Health: HealthCounts{Current: 1, Failed: 1}}},
			commitstatus.Status{SHA: a, State: commitstatus.Failure, Description: "applied 0, in sync 2, refused 0, held 0, orphaned 0, unhealthy 1"}, true},
		{"rolled out after pending: success with the new counts",
			commitstatus.Status{SHA: a, State: commitstatus.Pending, Description: "applied 2, in sync 0, refused 0, held 0, orphaned 0, rolling out 1"},
			Report{Revision: a, Idle: true, Summary: Summary{InSync: 2, Health: HealthCounts{Current: 2}}},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 0, in sync 2, refused 0, held 0, orphaned 0"}, true},
		{"another commit is its own", commitstatus.Status{SHA: b, State: commitstatus.Success, Description: "x"}, Report{Revision: a, Summary: ok},
			commitstatus.Status{SHA: a, State: commitstatus.Success, Description: "applied 3, in sync 40, refused 0, held 0, orphaned 1"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, post := StatusOf(c.prev, &c.report)
			if got != c.want || post != c.post {
				t.Errorf("StatusOf = %+v, %v\nwant %+v, %v", got, post, c.want, c.post)
			}
		})
	}
}

// queued records what a sweep enqueued, and what the poster took.
type queued struct {
	mu     sync.Mutex
	poster *commitstatus.Poster
	got    []string
}

func (q *queued) Enqueue(st commitstatus.Status) bool {
	ok := q.poster.Enqueue(st)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got = append(q.got, fmt.Sprintf("%s %s %v", st.SHA[:8], st.State, ok))
	return ok
}

func (q *queued) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	g := q.got
	q.got = nil
	return g
}

// githubPoster is a poster to a GitHub-shaped statustest server, and the server.
func githubPoster(t *testing.T) (*queued, *statustest.Server, commitstatus.Options) {
	t.Helper()
	const token = "ghp_sweep-t0ken"
	srv := statustest.New(t, commitstatus.GitHub, token)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o := commitstatus.DefaultOptions()
	o.Provider, o.URL, o.Repository, o.TokenFile, o.TargetURL = commitstatus.GitHub, srv.URL, "o/r", path, "https://operator.example/gitops"
	prov, err := commitstatus.NewProvider(o, tf)
	if err != nil {
		t.Fatal(err)
	}
	return &queued{poster: commitstatus.NewPoster(prov, o, time.Now)}, srv, o
}

// next waits for the server's next accepted post (the poster is another goroutine).
func next(t *testing.T, srv *statustest.Server) statustest.Post {
	t.Helper()
	select {
	case p := <-srv.Posted:
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("no status posted; violations %v", srv.Violations())
		return statustest.Post{}
	}
}

// TestSweepPostsCommitStatus: on the real apiserver, the first sweep of a revision posts
// pending, then success with its counts, on that revision's SHA, to a server speaking
// GitHub's statuses API; an idle resync enqueues nothing new; a commit with an unusable file
// gets pending, then failure.
func TestSweepPostsCommitStatus(t *testing.T) {
	const ns = "status-test"
	src := newMemSource(map[string][]byte{
		"ns.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		"cm.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: %s}\ndata: {k: v}\n", ns),
	})
	sw, _, _ := newTestSweeper(t, src, All)
	q, srv, o := githubPoster(t)
	sw.Statuses = q
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go q.poster.Run(ctx, logr.Discard())

	r := sw.Sweep(ctx)
	if r.Error != "" || r.Summary.Created != 2 {
		t.Fatalf("first sweep: %+v %s", r.Summary, r.Error)
	}
	rev := r.Revision
	want := []statustest.Post{
		{Repository: "o/r", SHA: rev, State: "pending", Context: o.Context, Description: "sweep started", TargetURL: o.TargetURL},
		{Repository: "o/r", SHA: rev, State: "success", Context: o.Context, Description: "applied 2, in sync 0, refused 0, held 0, orphaned 0", TargetURL: o.TargetURL},
	}
	for i, w := range want {
		if got := next(t, srv); got != w {
			t.Errorf("post %d = %+v\nwant %+v", i, got, w)
		}
	}
	if got := q.take(); strings.Join(got, "; ") != rev[:8]+" pending true; "+rev[:8]+" success true" {
		t.Errorf("first sweep enqueued %q", got)
	}

	if r := sw.Sweep(ctx); !r.Idle {
		t.Fatalf("second sweep not idle: %+v", r.Summary)
	}
	if got := q.take(); strings.Join(got, "; ") != rev[:8]+" success false" {
		t.Errorf("idle sweep enqueued %q, want the same success, refused as a duplicate", got)
	}

	src.commit(map[string][]byte{"broken.yaml": []byte("kind: [unclosed\n")})
	r = sw.Sweep(ctx)
	if r.Summary.Skipped != 1 {
		t.Fatalf("broken commit: %+v", r.Summary)
	}
	for i, w := range []string{"pending", "failure"} {
		if got := next(t, srv); got.SHA != r.Revision || got.State != w {
			t.Errorf("broken commit post %d = %+v, want %s on %s", i, got, w, r.Revision)
		}
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("requests against GitHub's documented API: %v", v)
	}
}

// TestSweepDoesNotWaitForTheStatusHost: with the status host hanging, a sweep finishes
// while the first post is still unanswered, its statuses queued behind it.
func TestSweepDoesNotWaitForTheStatusHost(t *testing.T) {
	const ns = "status-outage-test"
	src := newMemSource(map[string][]byte{
		"ns.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
	})
	sw, _, _ := newTestSweeper(t, src, All)
	q, srv, _ := githubPoster(t)
	srv.Hang()
	sw.Statuses = q
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go q.poster.Run(ctx, logr.Discard())

	r := sw.Sweep(ctx)
	if r.Error != "" || r.Summary.Created != 1 {
		t.Fatalf("sweep: %+v %s", r.Summary, r.Error)
	}
	if n := len(srv.Posts()); n != 0 {
		t.Errorf("the hanging host accepted %d posts before the sweep returned", n)
	}
	if got := q.take(); len(got) != 2 {
		t.Errorf("enqueued %q, want pending and success", got)
	}
	srv.Release()
	for _, w := range []string{"pending", "success"} {
		if got := next(t, srv); got.State != w {
			t.Errorf("after the outage: %+v, want %s", got, w)
		}
	}
}

// TestSweepStatusWaitsForHealth, on the apiserver: a commit whose Deployment is still
// rolling out stays pending ("rolling out 1"); the watch seeing it turn Current fires a sweep
// (idle: 0 requests), which posts success; past its progress deadline (Failed) the next
// fired sweep posts failure and alerts SweepFailed naming it; rolled out again, success and
// one SweepRecovered. The test writes the Deployment's status as its controller would.
func TestSweepStatusWaitsForHealth(t *testing.T) {
	const ns = "status-health-test"
	src := newMemSource(map[string][]byte{
		"ns.yaml":  fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		"web.yaml": healthDeployment("web", ns),
	})
	sw, reqs, admin := newTestSweeper(t, src, All)
	q, srv, _ := githubPoster(t)
	alerts := &alertLog{}
	sw.Statuses, sw.Alerts = q, alerts
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go q.poster.Run(ctx, logr.Discard())

	r := sw.Sweep(ctx)
	rev := r.Revision
	if r.Error != "" || r.Summary.Created != 2 || r.Summary.Health.InProgress != 1 || !Settling(&r) {
		t.Fatalf("first sweep: %+v %s", r.Summary, r.Error)
	}
	for _, w := range []string{"pending sweep started", "pending applied 2, in sync 0, refused 0, held 0, orphaned 0, rolling out 1"} {
		if got := next(t, srv); got.SHA != rev || got.State+" "+got.Description != w {
			t.Fatalf("post %+v, want %q", got, w)
		}
	}

	step := func(what string, st appsv1.DeploymentStatus, want commitstatus.State) Report {
		t.Helper()
		setDeploymentStatus(t, admin, ns, "web", st)
		waitFired(t, sw, what)
		reqs.take()
		r := sw.Sweep(ctx)
		if n := reqs.take(); !r.Idle || total(n)-sumVerb(n, "WATCH") != 0 {
			t.Errorf("%s: the fired sweep sent %v (idle %v), want an idle one", what, n, r.Idle)
		}
		if got := next(t, srv); got.SHA != rev || got.State != string(want) {
			t.Fatalf("%s: post %+v, want %s", what, got, want)
		}
		return r
	}
	step("web turning Current", rolledOut, commitstatus.Success)
	if len(alerts.got) != 0 {
		t.Errorf("alerts before anything failed: %+v", alerts.got)
	}
	r = step("web past its progress deadline", appsv1.DeploymentStatus{Replicas: 1, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
	}}, commitstatus.Failure)
	if len(alerts.got) != 1 || alerts.got[0].Kind != alert.SweepFailed || !strings.Contains(strings.Join(alerts.got[0].Details, "\n"), "Deployment/"+ns+"/web: health Failed") {
		t.Fatalf("alerts after the deadline: %+v, want one SweepFailed naming web", alerts.got)
	}
	step("web rolled out again", rolledOut, commitstatus.Success)
	if len(alerts.got) != 2 || alerts.got[1].Kind != alert.SweepRecovered || alerts.got[1].Revision != rev {
		t.Fatalf("alerts after recovery: %+v, want SweepFailed then SweepRecovered", alerts.got)
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("requests against GitHub's documented API: %v", v)
	}
}
