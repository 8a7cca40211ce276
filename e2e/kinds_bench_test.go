package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
)

// BenchmarkKindMaterialize measures the Kind controllers as users run them (`operator run
// --controllers kinds`, the built binary) on the full control plane with kwok: N Service
// CRs created at once, the time until every CR is Ready (at its generation), CRs/s, the
// operator's own requests per CR by verb (its client-go metrics) and the apiserver's
// (apiserver_request_total), throttled requests (429), the operator's peak RSS and CPU;
// then two no-op resyncs of all of them: every CR touched (an annotation: each CR
// reconciled once more through its watch) and the operator restarted (a cold start).
//
//	make bench-kinds KINDS_BENCH_N=200,1000
//
// KINDS_BENCH_N lists the sizes (default 1000), each in its own namespace, deleted after;
// KINDS_BENCH_FLAGS adds flags to `operator run` (e.g. --kind-concurrency 16); OPERATOR_BIN
// measures another build of the operator (a "before"); KINDS_BENCH_CPU_PROFILE=30 saves
// 30 s CPU profiles of the operator and (with TESTBED_APISERVER_PROFILING=true) of
// kube-apiserver from the start of each side. The table is
// printed and written to .cache/bench/kinds.txt.
func BenchmarkKindMaterialize(b *testing.B) {
	sizes := []int{1000}
	if env := os.Getenv("KINDS_BENCH_N"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("KINDS_BENCH_N=%q: want sizes such as 200,1000", env)
			}
			sizes = append(sizes, n)
		}
	}
	bin := operatorBin
	if env := os.Getenv("OPERATOR_BIN"); env != "" {
		bin = env
	}
	cfg, kubeconfig := testbed.FullCluster(b)
	if out, err := exec.Command(bin, "install", "--crds-only", "--kubeconfig", kubeconfig).CombinedOutput(); err != nil {
		b.Fatalf("operator install --crds-only: %v\n%s", err, out)
	}
	report := &teeBuilder{}
	fmt.Fprintf(report, "Kind materialization, %s, operator %s %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), filepath.Base(bin), os.Getenv("KINDS_BENCH_FLAGS"))
	for range b.N {
		for _, n := range sizes {
			kb := &kindsBench{b: b, cfg: cfg, kubeconfig: kubeconfig, bin: bin, n: n, out: report}
			kb.run()
		}
	}
	dir := filepath.Join("..", ".cache", "bench")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "kinds.txt"), []byte(report.String()), 0o644)
	}
}

type kindsBench struct {
	b          *testing.B
	cfg        *rest.Config
	kubeconfig string
	bin        string
	n          int
	ns         string
	c          client.WithWatch
	out        io.Writer
}

// teeBuilder keeps the report and prints it as it is written.
type teeBuilder struct{ strings.Builder }

func (t *teeBuilder) Write(p []byte) (int, error) {
	os.Stdout.Write(p)
	return t.Builder.Write(p)
}

func (kb *kindsBench) run() {
	b := kb.b
	ctx := context.Background()
	cfg := rest.CopyConfig(kb.cfg)
	cfg.QPS, cfg.Burst = 2000, 4000 // the bench's own writes must not be what limits
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	kb.c = c
	// 10 minutes, and 300 ms per CR more: 5 000 CRs on a 2-core machine take ~20 minutes
	timeout := 10*time.Minute + time.Duration(kb.n)*300*time.Millisecond
	// the floor first, alone on the control plane, its namespace gone before the operator
	// starts; then once more after the operator (KINDS_BENCH_FLOOR_AFTER=0 skips it)
	fl := kb.floor(ctx, timeout)

	kb.ns = fmt.Sprintf("kinds-bench-%d-%d", kb.n, time.Now().Unix())
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": kb.ns}}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	defer kb.deleteNamespace(ns)

	op := kb.start()
	time.Sleep(2 * time.Second) // caches synced, nothing to do: the idle process
	idleRSS, _ := op.usage()
	apiBefore := scrapeAPIServer(b, kb.cfg)
	opBefore := op.scrape()
	planeBefore := kb.planeCPU()
	start := time.Now()
	profiled := kb.cpuProfiles(ctx, "operator", op)
	defer profiled()
	applied := make(chan time.Duration, 1)
	go func() { applied <- kb.waitChildren(ctx, start, timeout) }()
	// when the cluster had every Deployment Available (the floor's finish line): what lies
	// between it and all Ready is the operator's own status lag
	available := make(chan time.Duration, 1)
	go func() {
		_, last := kb.waitAll(ctx, "apps/v1", "DeploymentList", deploymentAvailable, timeout, nil)
		available <- last.Sub(start)
	}()
	kb.createAll(ctx)
	created := time.Since(start)
	ready, readyAt := kb.waitReady(ctx, start, timeout)
	time.Sleep(time.Second) // let both sides count the last requests
	apiAfter := scrapeAPIServer(b, kb.cfg)
	opAfter := op.scrape()
	rss, cpu := op.usage()
	planeAfter := kb.planeCPU()
	heap := op.heapProfile(kb.n)

	w := kb.out
	fmt.Fprintf(w, "\n%d Service CRs (2 replicas each) created in %.1fs; every Deployment and Service applied after %.1fs, every Deployment Available after %.1fs; %d/%d Ready after %.1fs (%.1f CRs/s)\n",
		kb.n, created.Seconds(), (<-applied).Seconds(), max(0, (<-available).Seconds()), ready, kb.n, readyAt.Seconds(), float64(ready)/readyAt.Seconds())
	opDelta := opAfter.delta(opBefore)
	fmt.Fprintf(w, "  operator requests: %.0f (%.2f per CR)  %s\n", opDelta.sum("rest_client_requests_total", nil), perCR(opDelta.sum("rest_client_requests_total", nil), kb.n), opDelta.by("rest_client_requests_total", "method", kb.n))
	fmt.Fprintf(w, "  operator responses by code: %s\n", opDelta.by("rest_client_requests_total", "code", 0))
	fmt.Fprintf(w, "  reconciles: %.0f (%.2f per CR)\n", opDelta.sum("controller_runtime_reconcile_total", nil), perCR(opDelta.sum("controller_runtime_reconcile_total", nil), kb.n))
	apiDelta := apiAfter.delta(apiBefore)
	for _, res := range []struct{ label, group, resource, sub string }{
		{"Service CRs", "hanzo.ai", "services", ""}, {"Service CR status", "hanzo.ai", "services", "status"},
		{"Deployments", "apps", "deployments", ""}, {"core Services", "", "services", ""},
	} {
		match := map[string]string{"group": res.group, "resource": res.resource, "subresource": res.sub}
		fmt.Fprintf(w, "  apiserver %-18s %s\n", res.label+":", apiDelta.by("apiserver_request_total", "verb+dry_run", kb.n, match))
	}
	fmt.Fprintf(w, "  apiserver mean latency: %s\n", meanLatencies(apiDelta))
	work := map[string]string{"name": "service"}
	if n := opDelta.sum("workqueue_work_duration_seconds_count", work); n > 0 {
		fmt.Fprintf(w, "  operator: mean reconcile %.0f ms, mean wait in the queue %.0f ms\n", 1000*opDelta.sum("workqueue_work_duration_seconds_sum", work)/n,
			1000*opDelta.sum("workqueue_queue_duration_seconds_sum", work)/max(1, opDelta.sum("workqueue_queue_duration_seconds_count", work)))
	}
	fmt.Fprintf(w, "  apiserver all: %.0f requests, throttled (429): %.0f\n", apiDelta.sum("apiserver_request_total", nil), apiDelta.sum("apiserver_request_total", map[string]string{"code": "429"}))
	fmt.Fprintf(w, "  operator peak RSS %.0f MiB (idle %.0f MiB; %.0f KiB per CR over idle), CPU %.1fs; at Ready: heap in use %.0f MiB, %s\n",
		float64(rss)/(1<<20), float64(idleRSS)/(1<<20), float64(rss-min(idleRSS, rss))/1024/float64(kb.n), cpu,
		opAfter.sum("go_memstats_heap_inuse_bytes", nil)/(1<<20), heap)
	planeSum, plane := planeDelta(planeBefore, planeAfter)
	busy := cpu + planeSum
	fmt.Fprintf(w, "  control plane CPU: %s; with the operator %.0f%% of the machine's %d CPUs over %.0fs\n", plane,
		100*busy/(readyAt.Seconds()*float64(runtime.NumCPU())), runtime.NumCPU(), readyAt.Seconds())
	kb.floorLine("floor before", fl)
	operator := floorResult{ready: readyAt, requests: apiDelta.sum("apiserver_request_total", nil), planeCPU: planeSum}
	kb.ratioLine("operator/floor before", operator, fl)
	if ready < kb.n {
		fmt.Fprintf(w, "  not all Ready: resyncs skipped\n")
		op.stop(syscall.SIGTERM)
		return
	}

	// no-op resync 1: every CR changes outside its spec; each is reconciled once more.
	opBefore, apiBefore = op.scrape(), scrapeAPIServer(b, kb.cfg)
	t0 := time.Now()
	kb.touchAll(ctx)
	kb.waitReconciled(op, opBefore.sum("controller_runtime_reconcile_total", nil)+float64(kb.n))
	opDelta = op.scrape().delta(opBefore)
	apiDelta = scrapeAPIServer(b, kb.cfg).delta(apiBefore)
	fmt.Fprintf(w, "  no-op resync (every CR touched, %.1fs): operator requests %d  %s; apiserver writes to children %d\n", time.Since(t0).Seconds(),
		int(opDelta.sum("rest_client_requests_total", nil)), opDelta.by("rest_client_requests_total", "method", 0), int(childWrites(apiDelta)))

	// no-op resync 2: a restart; the new process starts with no memory of its applies.
	op.stop(syscall.SIGTERM)
	apiBefore = scrapeAPIServer(b, kb.cfg)
	t0 = time.Now()
	op = kb.start()
	kb.waitReconciled(op, float64(kb.n))
	opDelta = op.scrape()
	apiDelta = scrapeAPIServer(b, kb.cfg).delta(apiBefore)
	fmt.Fprintf(w, "  no-op resync (restart, %.1fs): operator requests %d  %s; apiserver writes to children %d, dry-runs %d\n", time.Since(t0).Seconds(),
		int(opDelta.sum("rest_client_requests_total", nil)), opDelta.by("rest_client_requests_total", "method", 0), int(childWrites(apiDelta)),
		int(apiDelta.sum("apiserver_request_total", map[string]string{"dry_run": "All"})))
	kb.deleteNamespace(ns) // before the floor again, with the operator still running (as a user would)
	op.stop(syscall.SIGTERM)
	if os.Getenv("KINDS_BENCH_FLOOR_AFTER") == "0" {
		return
	}
	// the floor once more, after the operator: the machine drifts over a run (a neighbour,
	// a busier host), and the mean of a floor before and after cancels a drift that would
	// otherwise fall on the operator's side alone (its CPU per request rose 1.3x within one
	// 5 000-CR run on 2026-12-07)
	after := kb.floor(ctx, timeout)
	kb.floorLine("floor after", after)
	mean := floorResult{ready: (fl.ready + after.ready) / 2, requests: (fl.requests + after.requests) / 2, planeCPU: (fl.planeCPU + after.planeCPU) / 2}
	kb.ratioLine("operator/floor, the mean of before and after", operator, mean)
}

// floorLine prints what one floor run cost.
func (kb *kindsBench) floorLine(label string, fl floorResult) {
	fmt.Fprintf(kb.out, "  %s (the same children, kubectl apply --server-side, %d processes, no owner refs, in its own namespace): applied after %.1fs; %d/%d Deployments Available after %.1fs; apiserver requests %.0f (%.2f per CR); control plane CPU %.1fs (%s); kubectl CPU %.1fs; apiserver mean latency: %s\n",
		label, fl.procs, fl.applied.Seconds(), fl.available, kb.n, fl.ready.Seconds(), fl.requests, perCR(fl.requests, kb.n), fl.planeCPU, fl.planeBy, fl.clientCPU, fl.latency)
}

// ratioLine prints the operator's run against a floor, with the goals: time ≤ 1.2x,
// requests ≤ 1.1x.
func (kb *kindsBench) ratioLine(label string, op, fl floorResult) {
	fmt.Fprintf(kb.out, "  %s: %s, %s, %s\n", label, ratio("time to all Ready", op.ready.Seconds(), fl.ready.Seconds(), 1.2),
		ratio("apiserver requests", op.requests, fl.requests, 1.1),
		ratio("control plane CPU", op.planeCPU, fl.planeCPU, 0))
}

func perCR(v float64, n int) float64 { return v / float64(n) }

// meanLatencies is the apiserver's mean latency of the requests that make a CR's children
// and status, from a delta of its metrics. "IPAddress create" is the apiserver's own: a
// Service's ClusterIP is allocated by creating an IPAddress object, one at a time (the
// allocator holds its lock across the create), so the Services of a burst queue there.
func meanLatencies(d metricSet) string {
	var lat []string
	for _, res := range []struct{ label, group, resource, sub, verb string }{
		{"Deployment apply", "apps", "deployments", "", "APPLY"}, {"Service apply", "", "services", "", "APPLY"},
		{"CR status apply", "hanzo.ai", "services", "status", "APPLY"}, {"IPAddress create", "networking.k8s.io", "ipaddresses", "", "POST"},
	} {
		match := map[string]string{"group": res.group, "resource": res.resource, "subresource": res.sub, "verb": res.verb}
		if n := d.sum("apiserver_request_duration_seconds_count", match); n > 0 {
			lat = append(lat, fmt.Sprintf("%s %.0f ms", res.label, 1000*d.sum("apiserver_request_duration_seconds_sum", match)/n))
		}
	}
	return strings.Join(lat, ", ")
}

// planeCPU is the CPU time so far of each control plane process (etcd, kube-apiserver,
// kcm, scheduler, kwok) by name, from the testbed's PID files; empty for a cluster the
// testbed did not start.
func (kb *kindsBench) planeCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(kb.kubeconfig), "pids", "*.pid"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || len(strings.Fields(string(data))) == 0 {
			continue
		}
		if pid, err := strconv.Atoi(strings.Fields(string(data))[0]); err == nil {
			out[strings.TrimSuffix(filepath.Base(f), ".pid")] = procCPU(pid)
		}
	}
	return out
}

// planeDelta is the control plane's CPU between two planeCPU readings: the sum, in
// seconds, and per process ("etcd 5.3s, kube-apiserver 45.8s, ...").
func planeDelta(before, after map[string]time.Duration) (float64, string) {
	var sum float64
	var by []string
	for _, name := range slices.Sorted(maps.Keys(after)) {
		d := (after[name] - before[name]).Seconds()
		sum += d
		by = append(by, fmt.Sprintf("%s %.1fs", name, d))
	}
	return sum, strings.Join(by, ", ")
}

// cpuProfiles takes, when KINDS_BENCH_CPU_PROFILE is a number of seconds, CPU profiles over
// that many seconds from now of kube-apiserver (its /debug/pprof: the testbed needs
// TESTBED_APISERVER_PROFILING=true) and, on the operator's side, of the operator, and
// writes them to .cache/bench/<process>-<side>-<N>.pb.gz: where the CPU goes for the floor
// and for the operator, side by side. The returned func waits for them.
func (kb *kindsBench) cpuProfiles(ctx context.Context, side string, op *benchOperator) func() {
	secs, err := strconv.Atoi(os.Getenv("KINDS_BENCH_CPU_PROFILE"))
	if err != nil || secs <= 0 {
		return func() {}
	}
	hc, err := rest.HTTPClientFor(kb.cfg)
	if err != nil {
		kb.b.Fatal(err)
	}
	profiles := map[string]string{}
	if testbed.APIServerProfiling() {
		profiles["apiserver"] = strings.TrimSuffix(kb.cfg.Host, "/") + "/debug/pprof/profile"
	}
	if op != nil {
		profiles["operator"] = op.pprof + "/profile"
	}
	var wg sync.WaitGroup
	for process, url := range profiles {
		wg.Go(func() {
			path := filepath.Join("..", ".cache", "bench", fmt.Sprintf("%s-%s-%d.pb.gz", process, side, kb.n))
			if err := saveProfile(ctx, hc, fmt.Sprintf("%s?seconds=%d", url, secs), path); err != nil {
				fmt.Fprintf(kb.out, "  %s CPU profile (%s): %v\n", process, side, err)
			}
		})
	}
	return wg.Wait
}

// saveProfile writes what url answers to path.
func saveProfile(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data[:min(len(data), 200)]))
	}
	return os.WriteFile(path, data, 0o644)
}

// childWrites counts the writes that reached Deployments and core Services (dry-runs
// left out): what the no-op resyncs must not cost.
func childWrites(d metricSet) float64 {
	var sum float64
	for _, m := range d {
		if m.name != "apiserver_request_total" || m.labels["dry_run"] != "" {
			continue
		}
		if !slices.Contains([]string{"PATCH", "APPLY", "PUT", "POST", "DELETE", "UPDATE", "CREATE"}, m.labels["verb"]) {
			continue
		}
		if (m.labels["group"] == "apps" && m.labels["resource"] == "deployments" || m.labels["group"] == "" && m.labels["resource"] == "services") && m.labels["subresource"] == "" {
			sum += m.value
		}
	}
	return sum
}

func (kb *kindsBench) cr(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hanzo.ai/v1", "kind": "Service",
		"metadata": map[string]any{"name": fmt.Sprintf("svc-%04d", i), "namespace": kb.ns},
		"spec": map[string]any{
			"image":    map[string]any{"repository": "ghcr.io/hanzoai/notes", "tag": "v2.1.0"},
			"replicas": int64(2),
			"labels":   map[string]any{"team": "notes"},
			"ports":    []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}},
			"env":      []any{map[string]any{"name": "MODE", "value": "production"}},
		},
	}}
}

// parallel runs f(0..n-1) on 32 goroutines.
func parallel(n int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func (kb *kindsBench) createAll(ctx context.Context) {
	if err := parallel(kb.n, func(i int) error { return kb.c.Create(ctx, kb.cr(i)) }); err != nil {
		kb.b.Fatalf("create CRs: %v", err)
	}
}

func (kb *kindsBench) touchAll(ctx context.Context) {
	err := parallel(kb.n, func(i int) error {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.openuniverse.dev/touched":"%d"}}}`, time.Now().UnixNano())
		return kb.c.Patch(ctx, kb.cr(i), client.RawPatch(types.MergePatchType, patch))
	})
	if err != nil {
		kb.b.Fatalf("touch CRs: %v", err)
	}
}

// waitReady watches the CRs until every one is Ready at its generation, or timeout; it
// returns how many were and when the last became so.
func (kb *kindsBench) waitReady(ctx context.Context, start time.Time, timeout time.Duration) (int, time.Duration) {
	n, last := kb.waitAll(ctx, "hanzo.ai/v1", "ServiceList", isReady, timeout, nil)
	if last.IsZero() {
		return n, 0
	}
	return n, last.Sub(start)
}

// waitAll lists and then watches the objects of listKind in the bench's namespace until
// kb.n of them pass ready, or timeout; it returns how many did and when the last did. It
// closes listed (when not nil) once the first list is done: nothing after it is missed.
func (kb *kindsBench) waitAll(ctx context.Context, apiVersion, listKind string, ready func(*unstructured.Unstructured) bool, timeout time.Duration, listed chan struct{}) (int, time.Time) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := map[string]bool{}
	var last time.Time
	see := func(u *unstructured.Unstructured) {
		if ready(u) && !done[u.GetName()] {
			done[u.GetName()], last = true, time.Now()
		}
	}
	for ctx.Err() == nil && len(done) < kb.n {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(apiVersion)
		list.SetKind(listKind)
		if err := kb.c.List(ctx, list, client.InNamespace(kb.ns)); err != nil {
			continue
		}
		if listed != nil {
			close(listed)
			listed = nil
		}
		for i := range list.Items {
			see(&list.Items[i])
		}
		if len(done) == kb.n {
			break
		}
		w, err := kb.c.Watch(ctx, list, client.InNamespace(kb.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || (ev.Type != watch.Modified && ev.Type != watch.Added) {
				continue
			}
			if see(u); len(done) == kb.n {
				break
			}
		}
		w.Stop()
	}
	if listed != nil {
		close(listed)
	}
	return len(done), last
}

// waitChildren watches (as waitReady, no polling: the floor's wait costs the apiserver as
// little) until the namespace holds a Deployment and a Service per CR: the operator's part
// of the way to Ready.
func (kb *kindsBench) waitChildren(ctx context.Context, start time.Time, timeout time.Duration) time.Duration {
	exists := func(*unstructured.Unstructured) bool { return true }
	_, d := kb.waitAll(ctx, "apps/v1", "DeploymentList", exists, timeout, nil)
	_, s := kb.waitAll(ctx, "v1", "ServiceList", exists, timeout, nil)
	if s.Before(d) {
		s = d
	}
	if s.IsZero() {
		return time.Since(start)
	}
	return s.Sub(start)
}

func isReady(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			return m["status"] == "True" && gen == u.GetGeneration()
		}
	}
	return false
}

// waitReconciled waits until the operator has finished at least want reconciles and its
// queues have been empty for two seconds.
func (kb *kindsBench) waitReconciled(op *benchOperator, want float64) {
	quiet := 0
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 15*time.Minute, true, func(context.Context) (bool, error) {
		m := op.scrape()
		if m.sum("controller_runtime_reconcile_total", nil) < want || m.sum("workqueue_depth", nil) > 0 || m.sum("controller_runtime_active_workers", nil) > 0 {
			quiet = 0
			return false, nil
		}
		quiet++
		return quiet >= 4, nil
	})
	if err != nil {
		kb.b.Fatalf("waiting for %v reconciles: %v", want, err)
	}
}

func (kb *kindsBench) deleteNamespace(ns *unstructured.Unstructured) {
	ctx := context.Background()
	_ = kb.c.Delete(ctx, ns)
	// the next size must not share the cluster with this one's garbage collection
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute+time.Duration(kb.n)*100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := kb.c.Get(ctx, client.ObjectKeyFromObject(ns), ns.DeepCopy())
		return apierrors.IsNotFound(err), nil
	})
}

// benchOperator is one `operator run --controllers kinds` process.
type benchOperator struct {
	b       *testing.B
	cmd     *exec.Cmd
	metrics string
	pprof   string
	done    chan struct{}
	mu      sync.Mutex
	tail    []string
}

func (kb *kindsBench) start() *benchOperator {
	b := kb.b
	port := freePortB(b)
	pprofPort := freePortB(b)
	args := []string{"run", "--controllers", "kinds", "--leader-elect=false", "--kubeconfig", kb.kubeconfig,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "--health-probe-bind-address", "0", "--webhook-bind-address", "0",
		"--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", pprofPort)}
	args = append(args, strings.Fields(os.Getenv("KINDS_BENCH_FLAGS"))...)
	op := &benchOperator{b: b, cmd: exec.Command(kb.bin, args...), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port),
		pprof: fmt.Sprintf("http://127.0.0.1:%d/debug/pprof", pprofPort), done: make(chan struct{})}
	op.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	op.cmd.Stdout, op.cmd.Stderr = pw, pw
	if err := op.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			op.mu.Lock()
			op.tail = append(op.tail, sc.Text())
			if len(op.tail) > 50 {
				op.tail = op.tail[1:]
			}
			op.mu.Unlock()
		}
	}()
	go func() { _ = op.cmd.Wait(); pw.Close(); close(op.done) }()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-op.done:
			return false, fmt.Errorf("operator exited: %s", op.log())
		default:
		}
		m, err := op.tryScrape()
		return err == nil && m.sum("controller_runtime_active_workers", nil) >= 0 && len(m) > 0, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return op
}

func (op *benchOperator) log() string {
	op.mu.Lock()
	defer op.mu.Unlock()
	return strings.Join(op.tail, "\n")
}

func (op *benchOperator) stop(sig syscall.Signal) {
	_ = op.cmd.Process.Signal(sig)
	select {
	case <-op.done:
	case <-time.After(20 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.done
	}
}

// usage is the process's peak RSS (VmHWM) and CPU seconds so far.
func (op *benchOperator) usage() (uint64, float64) {
	pid := op.cmd.Process.Pid
	var rss uint64
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	var cpu float64
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			f := strings.Fields(s[i+2:])
			if len(f) > 12 {
				ut, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				cpu = (ut + st) / 100 // USER_HZ
			}
		}
	}
	return rss, cpu
}

func (op *benchOperator) tryScrape() (metricSet, error) {
	resp, err := http.Get(op.metrics)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body, "rest_client_requests_total", "controller_runtime_reconcile_total", "workqueue_depth", "controller_runtime_active_workers",
		"workqueue_work_duration_seconds_sum", "workqueue_work_duration_seconds_count", "workqueue_queue_duration_seconds_sum", "workqueue_queue_duration_seconds_count",
		"go_memstats_heap_inuse_bytes"), nil
}

func (op *benchOperator) scrape() metricSet {
	m, err := op.tryScrape()
	if err != nil {
		op.b.Fatalf("scrape operator metrics: %v\n%s", err, op.log())
	}
	return m
}

func scrapeAPIServer(b *testing.B, cfg *rest.Config) metricSet {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body, "apiserver_request_total", "apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count")
}

type metric struct {
	name   string
	labels map[string]string
	value  float64
}

// metricSet is one scrape, keyed by the sample's line up to its value.
type metricSet map[string]metric

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? ([0-9.eE+-]+)$`)
var sampleLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

func parseMetrics(r io.Reader, names ...string) metricSet {
	out := metricSet{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil || !slices.Contains(names, m[1]) {
			continue
		}
		labels := map[string]string{}
		for _, l := range sampleLabel.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		out[m[1]+m[2]] = metric{name: m[1], labels: labels, value: v}
	}
	return out
}

func (s metricSet) delta(before metricSet) metricSet {
	out := metricSet{}
	for k, m := range s {
		m.value -= before[k].value
		if m.value != 0 {
			out[k] = m
		}
	}
	return out
}

func matches(m metric, match map[string]string) bool {
	for k, v := range match {
		if m.labels[k] != v {
			return false
		}
	}
	return true
}

func (s metricSet) sum(name string, match map[string]string) float64 {
	var sum float64
	for _, m := range s {
		if m.name == name && matches(m, match) {
			sum += m.value
		}
	}
	return sum
}

// by renders the samples of name summed by label ("a+b" joins two labels), with the count
// per CR when n > 0.
func (s metricSet) by(name, label string, n int, match ...map[string]string) string {
	sums := map[string]float64{}
	for _, m := range s {
		if m.name != name || (len(match) > 0 && !matches(m, match[0])) {
			continue
		}
		var key []string
		for _, l := range strings.Split(label, "+") {
			if v := m.labels[l]; v != "" {
				key = append(key, v)
			}
		}
		sums[strings.Join(key, "/")] += m.value
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f (%.2f/CR)", k, sums[k], sums[k]/float64(n)))
		} else {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, sums[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func freePortB(b *testing.B) int {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// heapProfile saves the operator's heap profile (after a GC: what is live) to
// .cache/bench/kinds-heap-N.pb.gz and returns where it is and its largest in-use
// allocation sites (`go tool pprof -top`), for the report; what went wrong, if anything.
func (op *benchOperator) heapProfile(n int) string {
	resp, err := http.Get(op.pprof + "/heap?gc=1")
	if err != nil {
		return "no heap profile: " + err.Error()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "no heap profile: " + err.Error()
	}
	dir := filepath.Join("..", ".cache", "bench")
	path := filepath.Join(dir, fmt.Sprintf("kinds-heap-%d.pb.gz", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "no heap profile: " + err.Error()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "no heap profile: " + err.Error()
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=12", "-sample_index=inuse_space", op.cmd.Path, path).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("heap profile in %s (go tool pprof: %v)", path, err)
	}
	var top []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && strings.HasSuffix(f[1], "%") {
			top = append(top, "      "+strings.TrimSpace(line))
		}
	}
	return fmt.Sprintf("heap profile in %s, live heap by allocation site (flat, flat%%, sum%%, cum, cum%%):\n%s", path, strings.Join(top, "\n"))
}
