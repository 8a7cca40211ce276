package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
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
	t.Parallel() // its own namespace and operator; runs with the other parallel tests, after the sequential ones
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

// switchable is a git host that can go down (its port refuses connections) and come back
// on the same address: a reverse proxy to the real git server.
type switchable struct {
	addr    string
	handler http.Handler
	srv     *http.Server
}

func newSwitchable(t *testing.T, target string) *switchable {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	s := &switchable{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), handler: httputil.NewSingleHostReverseProxy(u)}
	s.up(t)
	t.Cleanup(s.down)
	return s
}

func (s *switchable) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
}

func (s *switchable) down() { _ = s.srv.Close() }

// TestGitServerDownThenUp: the git host stops answering (connection refused); the sweep
// reports it and applies nothing, the operator keeps running and keeps what it applied;
// when the host is back the next sweep applies the commit pushed meanwhile.
func TestGitServerDownThenUp(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-gitdown"
	deleteNamespaceAfter(t, cl, ns)
	host := newSwitchable(t, strings.TrimSuffix(repo.srv.HTTPURL(repo.name), "/"+repo.name))
	sha, pushed := repo.push(t, "one", map[string][]byte{"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"), "a.yaml": cmFile(ns, "a")})
	op := startOperatorOn(t, cl, []string{"--git-url", "http://" + host.addr + "/" + repo.name, "--git-username", repo.srv.Username,
		"--gitops-token-file", repo.tokenFile}, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-resync", "10m")
	op.sweptAt(t, sha, pushed)

	host.down()
	next, _ := repo.push(t, "two", map[string][]byte{"b.yaml": cmFile(ns, "b")})
	r := op.sweepAfter(t, "a sweep with the git host down", func(r *gitops.Report) bool { return r.Error != "" })
	if !strings.Contains(r.Error, "connection refused") {
		t.Errorf("sweep error %q, want it to say the host refused the connection", r.Error)
	}
	time.Sleep(time.Second)
	op.alive(t)
	if got := existing(t, cl, ns, "a", "b"); len(got) != 1 || got[0] != "a" {
		t.Errorf("with the host down %v exist, want [a]: kept, nothing new", got)
	}
	host.up(t)
	r = op.sweepAfter(t, "a sweep with the host back", func(r *gitops.Report) bool { return r.Error == "" && r.Revision == next })
	if got := existing(t, cl, ns, "a", "b"); len(got) != 2 || r.Summary.Created != 1 {
		t.Errorf("with the host back %v exist (%+v), want [a b]", got, r.Summary)
	}
}

// TestAPIServerRestartMidSweep: the apiserver goes away while a cold sweep of 600
// ConfigMaps is applying them, and comes back 3 s later. The operator does not exit;
// the objects it could not apply are failures of that sweep, by name; the next sweeps
// apply them all, and nothing applied before the restart is lost.
func TestAPIServerRestartMidSweep(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns, n = "e2e-apirestart", 600
	deleteNamespaceAfter(t, cl, ns)
	files := map[string][]byte{"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n")}
	var names []string
	for i := range n {
		name := fmt.Sprintf("cm-%03d", i)
		names = append(names, name)
		files[name+".yaml"] = cmFile(ns, name)
	}
	repo.push(t, "600 config maps", files)
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-resync", "10m")
	waitFor(t, "the sweep under way", time.Minute, func() (bool, string) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvkConfigMap.GroupVersion().WithKind("ConfigMapList"))
		err := cl.c.List(context.Background(), l, client.InNamespace(ns))
		return err == nil && len(l.Items) >= 20, fmt.Sprint(len(l.Items), err)
	})
	testbed.RestartAPIServer(t, 3*time.Second)
	op.alive(t)
	var first *gitops.Report
	waitFor(t, "the interrupted sweep's report", time.Minute, func() (bool, string) {
		r, err := op.report()
		first = r
		return err == nil && r != nil, fmt.Sprint(err)
	})
	t.Logf("the interrupted sweep: error %q %+v", first.Error, first.Summary)
	r := op.sweepAfter(t, "a sweep applying everything", func(r *gitops.Report) bool {
		return r.Error == "" && r.Summary.Errors == 0 && len(existing(t, cl, ns, names...)) == n
	})
	op.alive(t)
	t.Logf("after the restart: %+v", r.Summary)
	if first.Error == "" && first.Summary.Errors == 0 && first.Summary.Created == n+1 {
		t.Log("the restart fell after the sweep had applied everything (no failure to observe)")
	}
}

// TestForeignLeaseHolder: another holder has the operator's Lease. The operator waits as
// a standby — serving /healthz, sweeping nothing, writing nothing — until the foreign
// lease expires, then takes it and sweeps.
func TestForeignLeaseHolder(t *testing.T) {
	t.Parallel() // its own namespace and operator; runs with the other parallel tests, after the sequential ones
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-lease"
	deleteNamespaceAfter(t, cl, ns)
	ensureNamespace(t, cl.c, ns)
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "universe-operator.hanzo.ai", Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("intruder"), LeaseDurationSeconds: ptr.To[int32](8), AcquireTime: &now, RenewTime: &now}}
	if err := cl.c.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	expires := now.Add(8 * time.Second)
	sha, _ := repo.push(t, "one", map[string][]byte{"a.yaml": cmFile(ns, "a")})
	op := startOperator(t, cl, repo, ns, "--gitops-namespaces", ns, "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms")
	for time.Until(expires) > time.Second {
		if r, err := op.report(); err != nil || !r.Started.IsZero() {
			t.Fatalf("a sweep while another holds the Lease: %+v %v", r, err)
		}
		if len(existing(t, cl, ns, "a")) != 0 {
			t.Fatal("a standby applied an object")
		}
		time.Sleep(200 * time.Millisecond)
	}
	op.sweptAt(t, sha, time.Time{})
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") == "intruder" {
		t.Errorf("the Lease after the takeover: holder %q (%v)", ptr.Deref(lease.Spec.HolderIdentity, ""), err)
	}
	if len(existing(t, cl, ns, "a")) != 1 {
		t.Error("the new leader did not apply the object")
	}
	t.Logf("took the Lease %s after the foreign one expired", time.Since(expires).Round(100*time.Millisecond))
}

// TestWebhookFloodBoundedMemory: 10 000 validly signed pushes at the built binary cause at
// most one sweep per --gitops-webhook-min-interval (1 s) and a bounded growth of its
// resident memory.
func TestWebhookFloodBoundedMemory(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns, flood = "e2e-flood", 10000
	deleteNamespaceAfter(t, cl, ns)
	sha, pushed := repo.push(t, "one", map[string][]byte{"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"), "a.yaml": cmFile(ns, "a")})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-resync", "10m")
	op.sweptAt(t, sha, pushed)
	time.Sleep(time.Second)
	sweeps0, rss0 := op.sweepCount(t), procRSS(t, op.cmd.Process.Pid, "VmRSS")

	const body = `{"ref":"refs/heads/main"}`
	sig := sign(op.secret, body)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}
	work := make(chan struct{})
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest(http.MethodPost, op.hook+"/reconcile", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "push")
				req.Header.Set("X-Hub-Signature-256", sig)
				code := 0
				if resp, err := hc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	for range flood {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	time.Sleep(2 * time.Second) // the last deferred sweep
	op.alive(t)
	sweeps := op.sweepCount(t) - sweeps0
	hwm := procRSS(t, op.cmd.Process.Pid, "VmHWM")
	t.Logf("%d signed webhooks in %s: answers %v, %d sweeps, RSS %d MiB before, peak %d MiB", flood, took.Round(time.Millisecond), codes, sweeps, rss0>>10, hwm>>10)
	if codes[http.StatusAccepted] != flood {
		t.Errorf("answers %v, want %d × 202", codes, flood)
	}
	if limit := int(took/time.Second) + 3; sweeps > limit || sweeps < 1 {
		t.Errorf("%d sweeps for the flood of %s, want 1 to %d (one a second)", sweeps, took.Round(time.Millisecond), limit)
	}
	if hwm-rss0 > 64<<10 {
		t.Errorf("peak RSS grew %d MiB during the flood", (hwm-rss0)>>10)
	}
}

// sweepCount is the sum of universe_operator_gitops_sweeps_total over its outcomes.
func (o *operator) sweepCount(t *testing.T) int {
	t.Helper()
	resp, err := http.Get("http://" + o.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "universe_operator_gitops_sweeps_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// procRSS reads a memory figure (VmRSS, VmHWM) of pid, in KiB.
func procRSS(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestDiscoveryOutageAndCRDNeverEstablished: an aggregated API whose backend is missing
// (discovery of its group fails, as with a metrics-server down) and a CRD from git that
// never becomes Established (its short name is another CRD's plural). The sweep waits a
// bounded time for the CRD, fails the two objects whose kinds no API serves by file and
// object, applies the rest of the same commit, and the next sweep, which has no CRD to
// wait for, is prompt. The operator keeps running.
func TestDiscoveryOutageAndCRDNeverEstablished(t *testing.T) {
	t.Parallel() // its own namespace and operator; runs with the other parallel tests, after the sequential ones
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-discovery"
	deleteNamespaceAfter(t, cl, ns)
	ctx := context.Background()
	crd := func(plural, kind string, short ...string) *unstructured.Unstructured {
		u := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", plural+".never.e2e.example")
		u.Object["spec"] = map[string]any{"group": "never.e2e.example", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.TrimSuffix(plural, "s"), "kind": kind, "listKind": kind + "List", "shortNames": toAny(short)},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}
		return u
	}
	apiService := obj("apiregistration.k8s.io/v1", "APIService", "", "v1.outage.e2e.example")
	apiService.Object["spec"] = map[string]any{"group": "outage.e2e.example", "version": "v1", "insecureSkipTLSVerify": true,
		"groupPriorityMinimum": int64(1000), "versionPriority": int64(15), "service": map[string]any{"namespace": ns, "name": "nothing", "port": int64(443)}}
	things := crd("things", "Thing")
	for _, o := range []*unstructured.Unstructured{things, apiService} {
		if err := cl.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// last registered, first run: the namespace's deletion waits on a working discovery
	t.Cleanup(func() {
		for _, o := range []*unstructured.Unstructured{apiService, things, crd("stuffs", "Stuff")} {
			_ = cl.c.Delete(context.Background(), o)
		}
	})
	never, err := yaml.Marshal(crd("stuffs", "Stuff", "things").Object)
	if err != nil {
		t.Fatal(err)
	}
	sha, pushed := repo.push(t, "a CRD that cannot be established, kinds discovery cannot serve", map[string][]byte{
		"ns.yaml":    []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"crd.yaml":   never,
		"stuff.yaml": []byte("apiVersion: never.e2e.example/v1\nkind: Stuff\nmetadata: {name: s, namespace: " + ns + "}\n"),
		"gauge.yaml": []byte("apiVersion: outage.e2e.example/v1\nkind: Gauge\nmetadata: {name: g, namespace: " + ns + "}\n"),
		"cm.yaml":    cmFile(ns, "good"),
	})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-allow-crds", "--gitops-resync", "10m")
	check := func(r *gitops.Report) {
		t.Helper()
		if r.Error != "" {
			t.Fatalf("the sweep stopped: %s", r.Error)
		}
		for object, file := range map[string]string{"Stuff/" + ns + "/s": "stuff.yaml", "Gauge/" + ns + "/g": "gauge.yaml"} {
			if !slices.ContainsFunc(r.Results, func(res apply.Result) bool {
				return res.Object.String() == object && res.Action == apply.Failed && strings.HasPrefix(res.Message, file+": no API serves")
			}) {
				t.Errorf("%s not failed by file: %+v", object, r.Results)
			}
		}
		if len(existing(t, cl, ns, "good")) != 1 {
			t.Error("the good ConfigMap of the same commit was not applied")
		}
		op.alive(t)
	}
	first := op.sweptAt(t, sha, pushed)
	check(first)
	t.Logf("first sweep (waits for the CRD): %.1f s", first.Duration)
	second := op.sweepAfter(t, "the next sweep", func(r *gitops.Report) bool { return true })
	check(second)
	t.Logf("next sweep: %.1f s", second.Duration)
	if second.Duration > 5 {
		t.Errorf("the next sweep took %.1f s: it waited again for the CRD it did not change", second.Duration)
	}
	u := crd("stuffs", "Stuff")
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		t.Fatal(err)
	}
	if conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); !slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Established" && m["status"] != "True"
	}) {
		t.Errorf("the CRD's conditions %v: want it never Established", conds)
	}
}

func toAny(ss []string) []any {
	out := make([]any, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}
