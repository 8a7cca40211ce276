package e2e

import (
	"context"
	"crypto/sha1" // git object ids
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/gitops"
)

// BenchmarkPushLatency (issue 17 item 4): push → applied and push → Ready of one changed
// file in a 1 000-file repository (990 ConfigMaps and 10 universe Service CRs), over 20
// pushes, for both sources: go-git against the git server, and the GitHub REST path against
// an httptest GitHub speaking the REST shapes the source reads. Each push changes one
// Service CR's image tag; `operator run --controllers kinds,gitops` applies it and its Kind
// controller rolls the Deployment out on kwok until the CR is Ready again.
//
// push → applied is the sweep report's own end (its start plus its duration) minus the
// moment the push returned; the breakdown comes from the same report: webhook (push to the
// trigger firing), queue (trigger to sweep start), head, fetch, parse, plan, resolve, apply.
// push → Ready is when a watch delivers the CR Ready at its new generation.
//
//	go test -run '^$' -bench PushLatency -benchtime 1x ./e2e/
func BenchmarkPushLatency(b *testing.B) {
	log.SetOutput(io.Discard) // the git server logs every request
	defer log.SetOutput(os.Stderr)
	cl := getCluster(b)
	pushes, _ := strconv.Atoi(envOr("BENCH_PUSHES", "20"))
	for range b.N {
		var lines []string
		for _, src := range []string{"go-git", "github"} {
			lines = append(lines, pushLatency(b, cl, src, max(pushes, 1)))
		}
		fmt.Printf("\n%s\n", strings.Join(lines, "\n"))
		appendBenchOut(b, "latency", strings.Join(lines, "\n")+"\n")
	}
}

const latencyServices = 10

func latencyFiles(ns string, round int) map[string][]byte {
	files := map[string][]byte{"namespace.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)}
	for i := range 1000 - latencyServices - 1 {
		files[corpusPath("configmaps", i)] = corpusObject("configmaps", ns, i, 0)
	}
	for i := range latencyServices {
		files[corpusPath("services", i)] = corpusObject("services", ns, i, round)
	}
	return files
}

// latencySource is where the operator reads the repository: a git server repo, or a fake
// GitHub.
type latencySource interface {
	push(b *testing.B, files map[string][]byte) (sha string, at time.Time)
	args() []string
}

type gitLatencySource struct{ repo *gitRepo }

func (g gitLatencySource) push(b *testing.B, files map[string][]byte) (string, time.Time) {
	return g.repo.push(b, "bench", files)
}

func (g gitLatencySource) args() []string {
	return []string{"--git-url", g.repo.srv.HTTPURL(g.repo.name), "--git-username", g.repo.srv.Username, "--gitops-token-file", g.repo.tokenFile}
}

func pushLatency(b *testing.B, cl *cluster, srcName string, pushes int) string {
	ns := fmt.Sprintf("bench-latency-%s-%d", srcName, time.Now().Unix()%100000)
	var src latencySource = newBenchGitHub(b)
	if srcName == "go-git" {
		src = gitLatencySource{newGitRepo(b)}
	}
	sha, _ := src.push(b, latencyFiles(ns, 0))
	op := startOperatorOn(b, cl, src.args(), "universe-system", "--controllers", "kinds,gitops", "--leader-elect=false",
		"--gitops-namespaces", ns, "--log-level", "error")
	waitFor(b, "the cold sweep", 5*time.Minute, func() (bool, string) {
		r, err := op.report()
		if err != nil || r == nil {
			return false, fmt.Sprint(err)
		}
		return r.Revision == sha && r.Summary.Errors == 0, fmt.Sprintf("%s %+v", r.Revision, r.Summary)
	})
	ctx := context.Background()
	w, err := newCRWatch(ctx, cl, ns)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()
	for i := range latencyServices {
		w.waitReady(b, fmt.Sprintf("svc-%05d", i), 1, 5*time.Minute)
	}

	var samples []latencySample
	for r := 1; r <= pushes; r++ {
		i := r % latencyServices
		name := fmt.Sprintf("svc-%05d", i)
		gen := w.generation(name)
		sha, pushed := src.push(b, map[string][]byte{corpusPath("services", i): corpusObject("services", ns, i, r)})
		op.reconcileNow(b)
		var rep *gitops.Report
		waitFor(b, "a sweep of "+sha, 2*time.Minute, func() (bool, string) {
			got, err := op.report()
			if err != nil || got == nil {
				return false, fmt.Sprint(err)
			}
			rep = got
			return got.Revision == sha, got.Revision
		})
		if rep.Summary.Applied != 1 || rep.Summary.Updated != 1 {
			b.Errorf("push %d: %+v, want the one changed object applied", r, rep.Summary)
		}
		readyAt := w.waitReady(b, name, gen+1, 2*time.Minute)
		samples = append(samples, newLatencySample(rep, pushed, readyAt))
	}
	op.stop(syscall.SIGTERM)
	return summarizeLatency(srcName, samples)
}

// latencySample is one push: its latencies and the report's breakdown, in seconds.
type latencySample struct {
	applied, ready                                                    float64
	webhook, queue, head, fetch, parse, plan, resolve, apply, toReady float64
}

func newLatencySample(rep *gitops.Report, pushed, readyAt time.Time) latencySample {
	end := rep.Started.Add(time.Duration(rep.Duration * float64(time.Second)))
	s := latencySample{applied: end.Sub(pushed).Seconds(), ready: readyAt.Sub(pushed).Seconds(),
		head: rep.Phases.Head, fetch: rep.Phases.Fetch, parse: rep.Phases.Parse, plan: rep.Phases.Plan,
		resolve: rep.Phases.Resolve, apply: rep.Phases.Apply, toReady: readyAt.Sub(end).Seconds()}
	if rep.Triggered != nil {
		s.webhook = rep.Triggered.Sub(pushed).Seconds()
		s.queue = rep.Started.Sub(*rep.Triggered).Seconds()
	}
	return s
}

func percentile(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func summarizeLatency(src string, samples []latencySample) string {
	col := func(f func(latencySample) float64) []float64 {
		out := make([]float64, len(samples))
		for i, s := range samples {
			out[i] = f(s)
		}
		return out
	}
	ms := func(xs []float64) string {
		return fmt.Sprintf("p50 %.0f ms p90 %.0f ms", 1000*percentile(xs, 50), 1000*percentile(xs, 90))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "push latency, %s source, %d one-file pushes in a 1000-file repo: push→applied %s; push→Ready %s\n", src, len(samples),
		ms(col(func(s latencySample) float64 { return s.applied })), ms(col(func(s latencySample) float64 { return s.ready })))
	fmt.Fprintf(&sb, "  breakdown (p50 ms): webhook %.1f, queue %.1f, head %.1f, fetch %.1f, parse %.1f, plan %.1f, resolve %.1f, apply %.1f, applied→Ready %.0f",
		1000*percentile(col(func(s latencySample) float64 { return s.webhook }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.queue }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.head }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.fetch }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.parse }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.plan }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.resolve }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.apply }), 50),
		1000*percentile(col(func(s latencySample) float64 { return s.toReady }), 50))
	return sb.String()
}

// crWatch follows the Service CRs of a namespace: their generation and when each was
// last delivered Ready at its generation.
type crWatch struct {
	w     watch.Interface
	mu    sync.Mutex
	gen   map[string]int64
	ready map[string]struct {
		gen int64
		at  time.Time
	}
	done chan struct{}
}

func newCRWatch(ctx context.Context, cl *cluster, ns string) (*crWatch, error) {
	wc, err := client.NewWithWatch(cl.cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(universeGVK("Service").GroupVersion().WithKind("ServiceList"))
	w, err := wc.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	cw := &crWatch{w: w, gen: map[string]int64{}, done: make(chan struct{}), ready: map[string]struct {
		gen int64
		at  time.Time
	}{}}
	go func() {
		defer close(cw.done)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			at := time.Now()
			cw.mu.Lock()
			cw.gen[u.GetName()] = u.GetGeneration()
			if ok, _ := ready(u); ok && observed(u) {
				if prev := cw.ready[u.GetName()]; prev.gen < u.GetGeneration() {
					cw.ready[u.GetName()] = struct {
						gen int64
						at  time.Time
					}{u.GetGeneration(), at}
				}
			}
			cw.mu.Unlock()
		}
	}()
	return cw, nil
}

// observed reports whether the CR's status speaks of its current generation.
func observed(u *unstructured.Unstructured) bool {
	og, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return !found || og == u.GetGeneration()
}

func (cw *crWatch) stop() { cw.w.Stop(); <-cw.done }

func (cw *crWatch) generation(name string) int64 {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.gen[name]
}

// waitReady waits until name was delivered Ready at a generation of at least gen and
// returns when.
func (cw *crWatch) waitReady(b *testing.B, name string, gen int64, timeout time.Duration) time.Time {
	var at time.Time
	waitFor(b, name+" Ready at generation "+strconv.FormatInt(gen, 10), timeout, func() (bool, string) {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		r := cw.ready[name]
		at = r.at
		return r.gen >= gen, fmt.Sprintf("ready at generation %d, at %d now", r.gen, cw.gen[name])
	})
	return at
}

// benchGitHub serves the REST endpoints the GitHub source reads — the branch head with
// ETags (If-None-Match answered 304), the recursive tree and raw blobs — to requests that
// carry the token, as GitHub does.
type benchGitHub struct {
	mu        sync.Mutex
	srv       *httptest.Server
	token     string
	tokenFile string
	head      string
	files     map[string][]byte
	blobs     map[string][]byte
}

func newBenchGitHub(b *testing.B) *benchGitHub {
	f := &benchGitHub{token: "ghs_benchtoken0123456789", files: map[string][]byte{}, blobs: map[string][]byte{}}
	f.tokenFile = filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(f.tokenFile, []byte(f.token), 0o600); err != nil {
		b.Fatal(err)
	}
	f.srv = httptest.NewServer(f)
	b.Cleanup(f.srv.Close)
	return f
}

func (f *benchGitHub) push(_ *testing.B, files map[string][]byte) (string, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := sha1.New() // git object ids
	fmt.Fprint(h, f.head)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f.files[p] = files[p]
		f.blobs[gitBlobID(files[p])] = files[p]
		fmt.Fprint(h, p, gitBlobID(files[p]))
	}
	f.head = hex.EncodeToString(h.Sum(nil))
	return f.head, time.Now()
}

func (f *benchGitHub) args() []string {
	return []string{"--github-api-url", f.srv.URL + "/api/", "--github-repository", "o/r", "--github-branch", "main", "--gitops-token-file", f.tokenFile}
}

func (f *benchGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, _ := strings.CutPrefix(r.URL.Path, "/api/repos/o/r/")
	switch {
	case rest == "commits/main":
		etag := `"` + f.head + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		_, _ = w.Write([]byte(f.head))
	case rest == "git/trees/"+f.head:
		type entry struct {
			Path string `json:"path"`
			Mode string `json:"mode"`
			Type string `json:"type"`
			SHA  string `json:"sha"`
		}
		var tree []entry
		for _, p := range slices.Sorted(maps.Keys(f.files)) {
			tree = append(tree, entry{p, "100644", "blob", gitBlobID(f.files[p])})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": f.head, "tree": tree, "truncated": false})
	case strings.HasPrefix(rest, "git/blobs/"):
		data, ok := f.blobs[strings.TrimPrefix(rest, "git/blobs/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	default:
		http.NotFound(w, r)
	}
}

// appendBenchOut adds text to this run's file under BENCH_OUT.
func appendBenchOut(b *testing.B, name, text string) {
	dir := envOr("BENCH_OUT", filepath.Join("..", ".cache", "bench"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, name+"-"+time.Now().UTC().Format("20060102-150405")+".md")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("# make bench %s, %s\n\n```\n%s```\n", name, time.Now().UTC().Format("2006-01-02 15:04 MST"), text)), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("written to %s\n", p)
}
