package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/reconcile/gitops"
)

var gvkConfigMap = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// sweepAfter triggers a sweep through the webhook and waits for a report of a sweep that
// started after the trigger and satisfies ok.
func (o *operator) sweepAfter(t *testing.T, what string, ok func(*gitops.Report) bool) *gitops.Report {
	t.Helper()
	since := time.Now()
	o.reconcileNow(t)
	var rep *gitops.Report
	waitFor(t, what, time.Minute, func() (bool, string) {
		r, err := o.report()
		if err != nil || r == nil {
			return false, fmt.Sprint(err)
		}
		rep = r
		return !r.Started.Before(since) && ok(r), fmt.Sprintf("started %s error %q summary %+v", r.Started, r.Error, r.Summary)
	})
	return rep
}

// alive fails t when the operator process has exited.
func (o *operator) alive(t *testing.T) {
	t.Helper()
	select {
	case <-o.done:
		t.Fatalf("the operator exited:\n%s", o.logs())
	default:
	}
}

// existing returns the names of the ConfigMaps in ns that exist, of those named.
func existing(t *testing.T, cl *cluster, ns string, names ...string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		if _, err := getObj(context.Background(), cl.c, gvkConfigMap, ns, n); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func cmFile(ns, name string) []byte {
	return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {k: v}\n")
}

// TestGitHubFaults runs the built operator against an httptest GitHub on the real
// control plane through the faults of the matrix, one sweep each: 429 with
// Retry-After (waited), 429 without it (backed off), Retry-After as an HTTP date, 403 with
// no rate limit left (not retried, reported, and no request until the reset), 502 until
// the retries run out (reported), a truncated tree (reported, nothing applied). After
// each fault the next sweep converges; the operator never exits and nothing is deleted.
func TestGitHubFaults(t *testing.T) {
	cl := getCluster(t)
	const ns, token = "e2e-github", "ghp_e2eFaultMatrixToken7f3a91"
	noteSecret(token)
	deleteNamespaceAfter(t, cl, ns)
	gh, srv := newFakeGitHub(t, token)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gh.commit(map[string][]byte{"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"), "a.yaml": cmFile(ns, "a")})
	op := startOperatorOn(t, cl, []string{"--github-api-url", srv.URL + "/api/", "--github-repository", "o/r",
		"--gitops-token-file", tokenFile, "--github-retry-max", "2"}, ns,
		"--leader-elect=false", "--gitops-namespaces", ns, "--gitops-resync", "10m")
	waitFor(t, "the first sweep", time.Minute, func() (bool, string) {
		r, err := op.report()
		return err == nil && r != nil && r.Error == "" && r.Summary.Created == 2, fmt.Sprint(r, err)
	})
	gh.take()
	applied := []string{"a"}
	ok := func(r *gitops.Report) bool { return r.Error == "" }
	failed := func(r *gitops.Report) bool { return r.Error != "" }
	converged := func(name string) {
		t.Helper()
		applied = append(applied, name)
		if got := existing(t, cl, ns, applied...); len(got) != len(applied) {
			t.Errorf("ConfigMaps %v exist, want %v (nothing deleted, the new one applied)", got, applied)
		}
		op.alive(t)
		gh.take() // the next phase counts its own requests
	}
	statuses := func(reqs []ghRequest, kind string) []int {
		var out []int
		for _, r := range reqs {
			if r.kind == kind {
				out = append(out, r.status)
			}
		}
		return out
	}

	t.Run("429 with Retry-After", func(t *testing.T) {
		gh.commit(map[string][]byte{"b.yaml": cmFile(ns, "b")})
		gh.fail("blob", 1, ghFault{status: http.StatusTooManyRequests, headers: map[string]string{"Retry-After": "1"},
			message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."})
		op.sweepAfter(t, "a sweep past the 429", ok)
		reqs := gh.take()
		var at429, at200 time.Time
		for _, r := range reqs {
			if r.kind == "blob" && r.status == 429 {
				at429 = r.at
			}
			if r.kind == "blob" && r.status == 200 {
				at200 = r.at
			}
		}
		if at429.IsZero() || at200.Sub(at429) < time.Second {
			t.Errorf("blob answers %v: want the 200 at least the 1 s Retry-After after the 429 (waited %v)", statuses(reqs, "blob"), at200.Sub(at429))
		}
		converged("b")
	})
	t.Run("429 without Retry-After", func(t *testing.T) {
		gh.commit(map[string][]byte{"c.yaml": cmFile(ns, "c")})
		gh.fail("head", 1, ghFault{status: http.StatusTooManyRequests, message: "Too Many Requests"})
		op.sweepAfter(t, "a sweep past the 429", ok)
		if got := statuses(gh.take(), "head"); len(got) != 2 || got[0] != 429 || got[1] != 200 {
			t.Errorf("head answers %v, want 429 then 200 (backed off and retried)", got)
		}
		converged("c")
	})
	t.Run("Retry-After as an HTTP date", func(t *testing.T) {
		gh.commit(map[string][]byte{"d.yaml": cmFile(ns, "d")})
		at := time.Now().Add(2 * time.Second).UTC()
		gh.fail("tree", 1, ghFault{status: http.StatusForbidden, headers: map[string]string{"Retry-After": at.Format(http.TimeFormat)},
			message: "You have exceeded a secondary rate limit."})
		op.sweepAfter(t, "a sweep past the dated Retry-After", ok)
		reqs := gh.take()
		var retried time.Time
		for _, r := range reqs {
			if r.kind == "tree" && r.status == 200 {
				retried = r.at
			}
		}
		// HTTP dates have whole seconds: the wait ends at most a second early
		if retried.Before(at.Add(-time.Second)) {
			t.Errorf("tree retried at %s, before the Retry-After date %s", retried.Format(time.RFC3339Nano), at.Format(time.RFC3339))
		}
		converged("d")
	})
	t.Run("403 with no rate limit left", func(t *testing.T) {
		gh.commit(map[string][]byte{"e.yaml": cmFile(ns, "e")})
		reset := time.Now().Add(3 * time.Second)
		gh.fail("head", 1, ghFault{status: http.StatusForbidden, headers: map[string]string{"X-RateLimit-Remaining": "0",
			"X-RateLimit-Used": "5000", "X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)},
			message: "API rate limit exceeded for installation ID 1."})
		r := op.sweepAfter(t, "a sweep refused by the rate limit", failed)
		if !strings.Contains(r.Error, "rate limit") {
			t.Errorf("sweep error %q, want it to name the rate limit", r.Error)
		}
		if got := statuses(gh.take(), "head"); len(got) != 1 {
			t.Errorf("head answers %v, want the one 403, not retried", got)
		}
		if time.Until(reset) > time.Second { // go-github sends nothing until the reset
			r := op.sweepAfter(t, "a sweep before the reset", failed)
			if got := gh.take(); len(got) != 0 || !strings.Contains(r.Error, "rate limit") {
				t.Errorf("before the reset: %d requests, error %q; want none and the rate limit named", len(got), r.Error)
			}
		}
		time.Sleep(time.Until(reset.Add(1100 * time.Millisecond)))
		op.sweepAfter(t, "a sweep after the reset", ok)
		converged("e")
	})
	t.Run("5xx until the retries run out", func(t *testing.T) {
		gh.commit(map[string][]byte{"f.yaml": cmFile(ns, "f")})
		gh.fail("head", 3, ghFault{status: http.StatusBadGateway, message: "Server Error"})
		r := op.sweepAfter(t, "a sweep failed by 502s", failed)
		if !strings.Contains(r.Error, "502") {
			t.Errorf("sweep error %q, want the 502 named", r.Error)
		}
		if got := statuses(gh.take(), "head"); len(got) != 3 {
			t.Errorf("head answers %v, want 3 (the request and --github-retry-max 2)", got)
		}
		if got := existing(t, cl, ns, applied...); len(got) != len(applied) {
			t.Errorf("after the failed sweep %v exist, want %v", got, applied)
		}
		op.sweepAfter(t, "a sweep once GitHub answers again", ok)
		converged("f")
	})
	t.Run("truncated tree", func(t *testing.T) {
		gh.commit(map[string][]byte{"g.yaml": cmFile(ns, "g")})
		gh.setTruncated(true)
		r := op.sweepAfter(t, "a sweep of a truncated tree", failed)
		if !strings.Contains(r.Error, "truncated") {
			t.Errorf("sweep error %q, want the truncation named", r.Error)
		}
		if got := existing(t, cl, ns, append(applied, "g")...); len(got) != len(applied) {
			t.Errorf("after the truncated tree %v exist, want %v: nothing applied from a partial listing, nothing deleted", got, applied)
		}
		gh.setTruncated(false)
		op.sweepAfter(t, "a sweep of the whole tree", ok)
		converged("g")
	})
	if logs := op.logs(); !strings.Contains(logs, "Retrying GitHub request") {
		t.Error("the log never says a GitHub request was retried")
	}
}
