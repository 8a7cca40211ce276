package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"maps"
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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
)

// The side-by-side benchmark (issue 17): the same corpus applied by kubectl, by `operator up`,
// by `operator run` sweeping from the git server, and by Flux (source-controller and
// kustomize-controller as local processes, built by hack/build-flux.sh), each in turn and in
// its own namespace, on one full control plane (kcm, scheduler, kwok) and one git server.
// For each tool: a cold sync, a no-op and 10 changed files, with the wall time, the
// apiserver's own request counts by verb (apiserver_request_total), the tool's CPU seconds and
// peak RSS, and the apiserver's CPU seconds. Run with `make bench`, or:
//
//	FLUX_BIN_DIR=$(hack/build-flux.sh --dir) go test -run '^$' -bench SideBySide -benchtime 1x -timeout 90m ./e2e/
//
// BENCH_CORPORA narrows the corpora (default services-1000,configmaps-1000,services-10000),
// BENCH_TOOLS the tools (default kubectl,up,run,flux; up-base and run-base run
// BENCH_BASELINE_BIN, another build of the operator, with an operator namespace of its own,
// for a before/after in one run on one machine);
// BENCH_OUT is the directory the table is written to (default ../.cache/bench).
func BenchmarkSideBySide(b *testing.B) {
	tools := strings.Split(envOr("BENCH_TOOLS", "kubectl,up,run,flux"), ",")
	fluxDir := os.Getenv("FLUX_BIN_DIR")
	if fluxDir == "" && slices.Contains(tools, "flux") {
		b.Skip("FLUX_BIN_DIR unset: run `make bench` (it builds Flux with hack/build-flux.sh)")
	}
	corpora := strings.Split(envOr("BENCH_CORPORA", "services-1000,configmaps-1000,services-10000"), ",")
	log.SetOutput(io.Discard) // the git server logs every request
	defer log.SetOutput(os.Stderr)
	cl := getCluster(b)
	bench := newBenchCluster(b, cl)
	var flux *fluxProcs
	if slices.Contains(tools, "flux") {
		flux = startFlux(b, bench, fluxDir)
	}
	kubectl := filepath.Join(testbed.BinDir(), "kubectl")
	for range b.N {
		var rows []benchRow
		out := filepath.Join(envOr("BENCH_OUT", filepath.Join("..", ".cache", "bench")), "bench-"+time.Now().UTC().Format("20060102-150405")+".md")
		for _, name := range corpora {
			kind, n, err := parseCorpus(name)
			if err != nil {
				b.Fatal(err)
			}
			tag := fmt.Sprintf("%s-%d", kind, time.Now().Unix()%100000)
			for _, tool := range tools {
				switch tool {
				case "kubectl":
					rows = append(rows, benchKubectl(b, bench, kubectl, kind, n, tag)...)
				case "up":
					rows = append(rows, benchUp(b, bench, operatorBin, "operator up", "universe-system", kind, n, tag)...)
				case "run":
					rows = append(rows, benchRun(b, bench, operatorBin, "operator run", "universe-system", kind, n, tag)...)
				case "up-base", "run-base":
					base := os.Getenv("BENCH_BASELINE_BIN")
					if base == "" {
						b.Fatalf("BENCH_TOOLS: %s needs BENCH_BASELINE_BIN, another build of the operator", tool)
					}
					if tool == "up-base" {
						rows = append(rows, benchUp(b, bench, base, "up (base)", baseNamespace, kind, n, tag+"-base")...)
					} else {
						rows = append(rows, benchRun(b, bench, base, "run (base)", baseNamespace, kind, n, tag+"-base")...)
					}
				case "flux":
					rows = append(rows, flux.bench(b, bench, kind, n, tag)...)
				default:
					b.Fatalf("BENCH_TOOLS: unknown tool %q (kubectl, up, run, flux, up-base, run-base)", tool)
				}
			}
			for i := range rows {
				if rows[i].corpus == "" {
					rows[i].corpus = name
				}
			}
			writeBenchTable(b, rows, out) // after each corpus, so a long run keeps what it measured
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func parseCorpus(s string) (string, int, error) {
	kind, num, ok := strings.Cut(strings.TrimSpace(s), "-")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n <= 0 || (kind != "services" && kind != "configmaps") {
		return "", 0, fmt.Errorf("BENCH_CORPORA: %q is not services-N or configmaps-N", s)
	}
	return kind, n, nil
}

// corpusFiles is a repository: a Namespace and n objects, one file each (Service CRs of the
// universe, whose CRD `operator install` put in place, or ConfigMaps), at version v.
func corpusFiles(kind, ns string, n, v int) map[string][]byte {
	// 00-: kubectl applies in path order and does not put Namespaces first
	files := map[string][]byte{"00-namespace.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)}
	for i := range n {
		files[corpusPath(kind, i)] = corpusObject(kind, ns, i, v)
	}
	return files
}

func corpusPath(kind string, i int) string {
	return fmt.Sprintf("%s/%03d/%s-%05d.yaml", kind, i/100, kind[:3], i)
}

func corpusObject(kind, ns string, i, v int) []byte {
	if kind == "configmaps" {
		return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-%05d\n  namespace: %s\ndata:\n  mode: production\n  version: \"%d\"\n", i, ns, v)
	}
	return fmt.Appendf(nil, `apiVersion: hanzo.ai/v1
kind: Service
metadata:
  name: svc-%05d
  namespace: %s
spec:
  image: {repository: ghcr.io/hanzoai/notes, tag: "v2.1.%d"}
  replicas: 2
  labels: {team: notes}
  ports:
    - {name: http, containerPort: 8080, servicePort: 80}
  env:
    - {name: MODE, value: production}
`, i, ns, v)
}

// changedFiles is the "10 changed files" commit: ten objects spread over the corpus.
func changedFiles(kind, ns string, n int) map[string][]byte {
	out := map[string][]byte{}
	for i := range 10 {
		j := (i * 97) % n
		out[corpusPath(kind, j)] = corpusObject(kind, ns, j, 1)
	}
	return out
}

// benchCluster is the cluster with what the bench reads from it: the apiserver's metrics and
// its process, for CPU seconds.
type benchCluster struct {
	*cluster
	apiserverPID int // 0 when the cluster is not a local control plane (E2E_KUBECONFIG)
	hc           *http.Client
	git          *testbed.GitServer
}

func newBenchCluster(b *testing.B, cl *cluster) *benchCluster {
	hc, err := rest.HTTPClientFor(cl.cfg)
	if err != nil {
		b.Fatal(err)
	}
	bc := &benchCluster{cluster: cl, hc: hc}
	// The operator's namespace, as `operator install` leaves it (the cluster has the CRDs
	// alone): without it the inventory and GitSync writes of up and run fail (404), run
	// retries them on every sweep, idle ones included, and up has no inventory to skip by.
	// The baseline build (up-base, run-base) has a namespace of its own: its inventory is not
	// the built binary's.
	for _, name := range []string{"universe-system", baseNamespace} {
		home := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
		if err := cl.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(home), client.FieldOwner("bench"), client.ForceOwnership); err != nil {
			b.Fatal(err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(cl.kubeconfig), "pids", "kube-apiserver.pid")); err == nil {
		bc.apiserverPID, _ = strconv.Atoi(strings.Fields(string(data))[0])
	}
	srv, err := testbed.NewGitServer("", "git", "bench-git-password-7f3c")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Stop(); os.RemoveAll(srv.Root()) })
	bc.git = srv
	return bc
}

// baseNamespace is the operator namespace of BENCH_BASELINE_BIN's up-base and run-base.
const baseNamespace = "universe-bench-base"

// benchRow is one tool's step on one corpus.
type benchRow struct {
	corpus, tool, step string
	wall               time.Duration
	requests           map[string]int // apiserver_request_total delta by verb
	byResource         map[string]int // the same by "VERB group/resource[/subresource]"
	toolCPU            time.Duration
	toolRSS            uint64 // peak, bytes
	toolAnon           uint64 // peak anonymous resident set (RssAnon, sampled), bytes; 0 when not sampled
	apiCPU             time.Duration
	note               string
}

// sample is what measure reads before and after a step: request counts by "VERB
// group/resource[/subresource]" (see requests) and the apiserver's CPU.
type sample struct {
	requests map[string]int
	apiCPU   time.Duration
}

func (bc *benchCluster) sample(b *testing.B) sample {
	return sample{requests: bc.requests(b), apiCPU: procCPU(bc.apiserverPID)}
}

// measure runs step and returns the apiserver's side of it; the tool's side (wall, CPU, RSS)
// is what step returns.
func (bc *benchCluster) measure(b *testing.B, tool, step string, f func() toolUse) benchRow {
	b.Helper()
	before := bc.sample(b)
	use := f()
	wall, cpu, rss := use.wall, use.cpu, use.rss
	time.Sleep(300 * time.Millisecond) // let the apiserver record the last requests
	after := bc.sample(b)
	byRes := map[string]int{}
	for k, v := range after.requests {
		if d := v - before.requests[k]; d > 0 {
			byRes[k] = d
		}
	}
	// the scrape before this step is a GET of /metrics, a non-resource URL: not counted
	delta := map[string]int{}
	for k, v := range byRes {
		verb, _, _ := strings.Cut(k, " ")
		delta[verb] += v
	}
	r := benchRow{tool: tool, step: step, wall: wall, requests: delta, byResource: byRes, toolCPU: cpu, toolRSS: rss, toolAnon: use.anon, apiCPU: after.apiCPU - before.apiCPU}
	fmt.Printf("bench %-10s %-16s %8.2fs %6d requests (%s) cpu %.2fs rss %d MiB (anon %d) apiserver cpu %.2fs\n",
		tool, step, wall.Seconds(), total(r.requests), verbs(r.requests), cpu.Seconds(), rss>>20, use.anon>>20, r.apiCPU.Seconds())
	fmt.Printf("bench %-10s %-16s by resource: %s\n", tool, step, verbs(byRes))
	return r
}

var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\d+)`)
var labelRe = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requests sums apiserver_request_total by "VERB group/resource[/subresource]" (a dry run
// as "VERB(dry-run) ..."; the core group as "core"; a status code other than 2xx as
// "...(409)"), leaving out the control plane's own
// upkeep: leases, endpoints, nodes, flow control, API services, and non-resource URLs (the
// bench's own /metrics scrapes). The counts are the whole apiserver's: kcm, the scheduler
// and kwok share them, which the breakdown by resource tells apart.
func (bc *benchCluster) requests(b *testing.B) map[string]int {
	resp, err := bc.hc.Get(strings.TrimSuffix(bc.cfg.Host, "/") + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelRe.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		switch labels["group"] + "/" + labels["resource"] {
		case "coordination.k8s.io/leases", "discovery.k8s.io/endpointslices", "/endpoints", "/nodes",
			"apiregistration.k8s.io/apiservices", "flowcontrol.apiserver.k8s.io/flowschemas",
			"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations":
			continue
		}
		if labels["resource"] == "" {
			continue // /metrics, /version, discovery (/api, /apis) and the like
		}
		v, _ := strconv.Atoi(m[2])
		verb := labels["verb"]
		if labels["dry_run"] != "" {
			verb += "(dry-run)"
		}
		res := labels["group"]
		if res == "" {
			res = "core"
		}
		res += "/" + labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		if c := labels["code"]; c != "" && c[0] != '2' {
			res += "(" + c + ")" // a refused or failed request, by its status code
		}
		out[verb+" "+res] += v
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func verbs(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// procCPU is a process's user+system CPU time from /proc (0 for pid 0 or when unreadable).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// procPeakRSS is a process's peak resident set (VmHWM), in bytes.
func procPeakRSS(pid int) uint64 {
	v, _ := procStatusField(pid, "VmHWM")
	return v
}

// runOnce runs a one-shot command and returns its wall time, CPU time and peak RSS.
func runOnce(b *testing.B, cmd *exec.Cmd) toolUse {
	b.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	anon := sampleAnon(cmd.Process.Pid)
	err := cmd.Wait()
	wall := time.Since(start)
	peakAnon := anon.stop()
	if err != nil {
		b.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, tailOf(out.Bytes(), 30))
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return toolUse{wall: wall, cpu: cpu, rss: uint64(ru.Maxrss) << 10, anon: peakAnon}
}

// toolUse is a tool's side of one step: wall time, CPU time, peak RSS (VmHWM: it counts
// the pages of the binary file it touched, which vary from run to run with the page cache)
// and peak anonymous RSS (RssAnon sampled every 10 ms: the heap, stacks and runtime, what
// the process itself allocated; 0 when not sampled).
type toolUse struct {
	wall, cpu time.Duration
	rss, anon uint64
}

// anonSampler samples a process's RssAnon every 10 ms until it exits or is stopped.
type anonSampler struct {
	peak       atomic.Uint64
	stopc, end chan struct{}
	once       sync.Once
}

func sampleAnon(pid int) *anonSampler {
	a := &anonSampler{stopc: make(chan struct{}), end: make(chan struct{})}
	go func() {
		defer close(a.end)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			v, ok := procStatusField(pid, "RssAnon")
			if !ok {
				return // gone
			}
			if v > a.peak.Load() {
				a.peak.Store(v)
			}
			select {
			case <-a.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return a
}

// max is the peak so far.
func (a *anonSampler) max() uint64 { return a.peak.Load() }

// stop ends the sampling and returns the peak.
func (a *anonSampler) stop() uint64 {
	a.once.Do(func() { close(a.stopc); <-a.end })
	return a.peak.Load()
}

// procStatusField reads a kB field of /proc/<pid>/status, in bytes.
func procStatusField(pid int, field string) (uint64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func tailOf(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func writeFilesTo(b *testing.B, dir string, files map[string][]byte) {
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// benchKubectl: `kubectl apply --server-side -R -f DIR`, with a cold discovery cache.
func benchKubectl(b *testing.B, bc *benchCluster, kubectl, kind string, n int, tag string) []benchRow {
	ns := "bench-kubectl-" + tag
	dir := b.TempDir()
	home := b.TempDir()
	writeFilesTo(b, dir, corpusFiles(kind, ns, n, 0))
	run := func() toolUse {
		cmd := exec.Command(kubectl, "--kubeconfig", bc.kubeconfig, "apply", "--server-side", "-R", "-f", dir)
		cmd.Env = append(os.Environ(), "HOME="+home)
		return runOnce(b, cmd)
	}
	rows := []benchRow{bc.measure(b, "kubectl", "cold sync", run), bc.measure(b, "kubectl", "no-op", run)}
	writeFilesTo(b, dir, changedFiles(kind, ns, n))
	return append(rows, bc.measure(b, "kubectl", "10 changed files", run))
}

// maxFiles raises --gitops-max-files (10 000 by default: a repository past it is refused
// file by file, by name) over a corpus of n objects and its Namespace, as a user with
// such a repository sets it.
func maxFiles(n int) string { return fmt.Sprintf("--gitops-max-files=%d", max(n+100, 10000)) }

// benchUp: `operator up --manifests DIR`, one process per step as a user runs it.
func benchUp(b *testing.B, bc *benchCluster, bin, tool, home, kind string, n int, tag string) []benchRow {
	ns := "bench-up-" + tag
	dir := b.TempDir()
	writeFilesTo(b, dir, corpusFiles(kind, ns, n, 0))
	run := func() toolUse {
		cmd := exec.Command(bin, "up", "--kubeconfig", bc.kubeconfig, "--namespace", home, "--manifests", dir, "--crds-only", "--gitops-namespaces", ns, maxFiles(n))
		return runOnce(b, cmd)
	}
	rows := []benchRow{bc.measure(b, tool, "cold sync", run), bc.measure(b, tool, "no-op", run)}
	writeFilesTo(b, dir, changedFiles(kind, ns, n))
	return append(rows, bc.measure(b, tool, "10 changed files", run))
}

// benchRun: `operator run --controllers gitops` sweeping from the git server. Each step
// starts with the push webhook (after the commit landed) and ends with the sweep's own report
// (its start plus its duration), so the time is the operator's and not the harness's polling.
func benchRun(b *testing.B, bc *benchCluster, bin, tool, home, kind string, n int, tag string) []benchRow {
	ns := "bench-run-" + tag
	repo := &gitRepo{srv: bc.git, name: "run-" + tag + ".git", tokenFile: filepath.Join(b.TempDir(), "token")}
	if err := os.WriteFile(repo.tokenFile, []byte(bc.git.Password), 0o600); err != nil {
		b.Fatal(err)
	}
	repo.push(b, "empty", map[string][]byte{"README.md": []byte("bench\n")})
	defer func(built string) { operatorBin = built }(operatorBin)
	operatorBin = bin // startOperator runs it
	op := startOperator(b, bc.cluster, repo, home, "--controllers", "gitops", "--leader-elect=false",
		"--gitops-namespaces", ns, "--log-level", "error", maxFiles(n))
	pid := op.cmd.Process.Pid
	anon := sampleAnon(pid) // the process's peak so far, as VmHWM is
	defer anon.stop()
	waitFor(b, "the first sweep", time.Minute, func() (bool, string) {
		_, err := op.report()
		return err == nil, fmt.Sprint(err)
	})
	var note string
	step := func(files map[string][]byte, want func(created, updated int) bool) func() toolUse {
		return func() toolUse {
			sha := ""
			if files != nil {
				sha, _ = repo.push(b, "bench", files)
			} else if r, err := op.report(); err == nil {
				sha = r.Revision
			}
			cpu0 := procCPU(pid)
			fired := time.Now()
			op.reconcileNow(b)
			var end time.Time
			waitFor(b, "a sweep of "+sha, 20*time.Minute, func() (bool, string) {
				r, err := op.report()
				if err != nil {
					return false, err.Error()
				}
				if r.Revision != sha || r.Started.Before(fired) {
					return false, fmt.Sprintf("revision %s started %s", r.Revision, r.Started)
				}
				if r.Error != "" || r.Summary.Errors > 0 || !want(r.Summary.Created, r.Summary.Updated) {
					b.Fatalf("sweep of %s: %s %+v", sha, r.Error, r.Summary)
				}
				end = r.Started.Add(time.Duration(r.Duration * float64(time.Second)))
				ph := r.Phases
				note = fmt.Sprintf("sweep %.2fs: head %.3f fetch %.3f parse %.3f plan %.3f resolve %.3f apply %.3f", r.Duration,
					ph.Head, ph.Fetch, ph.Parse, ph.Plan, ph.Resolve, ph.Apply)
				return true, ""
			})
			return toolUse{wall: end.Sub(fired), cpu: procCPU(pid) - cpu0, rss: procPeakRSS(pid), anon: anon.max()}
		}
	}
	var rows []benchRow
	for _, st := range []struct {
		name  string
		files map[string][]byte
		want  func(created, updated int) bool
	}{
		{"cold sync", corpusFiles(kind, ns, n, 0), func(c, _ int) bool { return c == n+1 }},
		{"no-op", nil, func(c, u int) bool { return c+u == 0 }},
		{"10 changed files", changedFiles(kind, ns, n), func(c, u int) bool { return c == 0 && u == 10 }},
	} {
		row := bc.measure(b, tool, st.name, step(st.files, st.want))
		row.note = note
		rows = append(rows, row)
	}
	op.stop(syscall.SIGTERM)
	return rows
}

// fluxProcs is source-controller and kustomize-controller running as local processes.
type fluxProcs struct {
	source, kustomize *exec.Cmd
	watcher           client.WithWatch
}

const fluxNamespace = "flux-system"

func startFlux(b *testing.B, bc *benchCluster, dir string) *fluxProcs {
	for _, bin := range []string{"source-controller", "kustomize-controller"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			b.Fatalf("FLUX_BIN_DIR=%s: %v (run hack/build-flux.sh)", dir, err)
		}
	}
	kubectl := filepath.Join(testbed.BinDir(), "kubectl")
	for _, crds := range []string{"source-controller", "kustomize-controller"} {
		out, err := exec.Command(kubectl, "--kubeconfig", bc.kubeconfig, "apply", "--server-side", "-f", filepath.Join(dir, "crds", crds)).CombinedOutput()
		if err != nil {
			b.Fatalf("install Flux CRDs: %v\n%s", err, out)
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fluxNamespace}}}
	if err := bc.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(ns), client.FieldOwner("bench"), client.ForceOwnership); err != nil {
		b.Fatal(err)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "bench-git", "namespace": fluxNamespace},
		"stringData": map[string]any{"username": bc.git.Username, "password": bc.git.Password}}}
	if err := bc.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(secret), client.FieldOwner("bench"), client.ForceOwnership); err != nil {
		b.Fatal(err)
	}
	logs := b.TempDir()
	env := append(os.Environ(), "RUNTIME_NAMESPACE="+fluxNamespace, "KUBECONFIG="+bc.kubeconfig)
	start := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(dir, name), args...)
		cmd.Env = env
		f, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_, _ = cmd.Process.Wait()
			f.Close()
			if b.Failed() {
				out, _ := os.ReadFile(f.Name())
				b.Logf("%s log:\n%s", name, tailOf(out, 40))
			}
		})
		return cmd
	}
	storage := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	sourceHealth, kustomizeHealth := fmt.Sprintf("127.0.0.1:%d", freePort(b)), fmt.Sprintf("127.0.0.1:%d", freePort(b))
	fp := &fluxProcs{
		source: start("source-controller", "--watch-all-namespaces=false", "--storage-path="+b.TempDir(),
			"--storage-addr="+storage, "--storage-adv-addr="+storage,
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(b)), "--health-addr="+sourceHealth),
		kustomize: start("kustomize-controller", "--watch-all-namespaces=false",
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(b)), "--health-addr="+kustomizeHealth),
	}
	for name, addr := range map[string]string{"source-controller": sourceHealth, "kustomize-controller": kustomizeHealth} {
		waitFor(b, name+" /readyz", time.Minute, func() (bool, string) {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		})
	}
	var err error
	if fp.watcher, err = client.NewWithWatch(bc.cfg, client.Options{}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second) // let both sync their informers before the first measurement
	return fp
}

func (f *fluxProcs) cpu() time.Duration {
	return procCPU(f.source.Process.Pid) + procCPU(f.kustomize.Process.Pid)
}

func (f *fluxProcs) rss() uint64 {
	return procPeakRSS(f.source.Process.Pid) + procPeakRSS(f.kustomize.Process.Pid)
}

func fluxObject(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": fluxNamespace}, "spec": spec}}
}

// bench: a GitRepository and a Kustomization (prune: false, wait: false) over the corpus.
// Cold sync creates both; the no-op asks the Kustomization to reconcile (as `flux reconcile
// kustomization` does); 10 changed files asks the GitRepository (as a webhook receiver does),
// whose new artifact triggers the Kustomization. Each step ends when a watch delivers the
// Kustomization Ready at the expected revision and request.
func (f *fluxProcs) bench(b *testing.B, bc *benchCluster, kind string, n int, tag string) []benchRow {
	ns := "bench-flux-" + tag
	name := "bench-" + tag
	repo := name + ".git"
	ctx := context.Background()
	sha, err := bc.git.Commit(repo, "main", "bench", corpusFiles(kind, ns, n, 0))
	if err != nil {
		b.Fatal(err)
	}
	gr := fluxObject("source.toolkit.fluxcd.io/v1", "GitRepository", name, map[string]any{
		"url": bc.git.HTTPURL(repo), "ref": map[string]any{"branch": "main"}, "interval": "60m",
		"secretRef": map[string]any{"name": "bench-git"}, "timeout": "10m"})
	ks := fluxObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, map[string]any{
		"interval": "60m", "path": "./", "prune": false, "wait": false, "timeout": "30m",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": name}})
	step := func(act func() string, wantRev func() string) func() toolUse {
		return func() toolUse {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
			list.SetKind("KustomizationList")
			w, err := f.watcher.Watch(ctx, list, client.InNamespace(fluxNamespace), client.MatchingFields{"metadata.name": name})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Stop()
			cpu0 := f.cpu()
			start := time.Now()
			token := act()
			deadline := time.After(30 * time.Minute)
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						b.Fatal("the Kustomization watch ended")
					}
					if ev.Type == watch.Error {
						continue
					}
					u, _ := ev.Object.(*unstructured.Unstructured)
					if u != nil && fluxDone(u, "main@sha1:"+wantRev(), token) {
						return toolUse{wall: time.Since(start), cpu: f.cpu() - cpu0, rss: f.rss()}
					}
				case <-deadline:
					b.Fatalf("Flux did not apply %s in 30 minutes", wantRev())
				}
			}
		}
	}
	create := func() string {
		for _, o := range []*unstructured.Unstructured{gr, ks} {
			if err := bc.c.Create(ctx, o.DeepCopy()); err != nil {
				b.Fatal(err)
			}
		}
		return ""
	}
	request := func(kind, apiVersion string) func() string {
		return func() string {
			token := time.Now().Format(time.RFC3339Nano)
			o := fluxObject(apiVersion, kind, name, nil)
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
			if err := bc.c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				b.Fatal(err)
			}
			return token
		}
	}
	rev := func() string { return sha }
	rows := []benchRow{bc.measure(b, "flux", "cold sync", step(create, rev))}
	noop := request("Kustomization", "kustomize.toolkit.fluxcd.io/v1")
	rows = append(rows, bc.measure(b, "flux", "no-op", step(noop, rev)))
	if sha, err = bc.git.Commit(repo, "main", "bench: 10 changed", changedFiles(kind, ns, n)); err != nil {
		b.Fatal(err)
	}
	changed := request("GitRepository", "source.toolkit.fluxcd.io/v1")
	row := bc.measure(b, "flux", "10 changed files", step(func() string { changed(); return "" }, rev))
	rows = append(rows, row)
	// Suspend it, so that it costs the later measurements nothing.
	o := fluxObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, nil)
	if err := bc.c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		b.Fatal(err)
	}
	return rows
}

// fluxDone reports whether the Kustomization is Ready at revision, having handled the
// reconcile request token (when set) and observed its latest generation.
func fluxDone(u *unstructured.Unstructured, revision, token string) bool {
	st, _ := u.Object["status"].(map[string]any)
	if st == nil || st["lastAppliedRevision"] != revision {
		return false
	}
	if token != "" && st["lastHandledReconcileAt"] != token {
		return false
	}
	if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og != u.GetGeneration() {
		return false
	}
	status, _, _ := condition(u, "Ready")
	return status == "True"
}

// writeBenchTable prints the table and its ratios and writes them under BENCH_OUT.
func writeBenchTable(b *testing.B, rows []benchRow, path string) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# make bench, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "One full control plane (etcd, kube-apiserver, kcm, scheduler, kwok), one git server, each tool in turn in its own namespace.\n")
	fmt.Fprintf(&sb, "Requests: apiserver_request_total delta by verb, without leases, endpoints, nodes and flow control.\n")
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&sb, "Machine: %d CPUs, load average at the end %s\n\n", runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Fprintf(&sb, "| corpus | step | tool | wall s | requests | by verb | tool CPU s | tool peak RSS MiB | tool peak anon RSS MiB | apiserver CPU s |\n")
	fmt.Fprintf(&sb, "|---|---|---|---:|---:|---|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %s | %s | %.2f | %d | %s | %.2f | %d | %d | %.2f |\n", r.corpus, r.step, r.tool, r.wall.Seconds(),
			total(r.requests), verbs(r.requests), r.toolCPU.Seconds(), r.toolRSS>>20, r.toolAnon>>20, r.apiCPU.Seconds())
	}
	fmt.Fprintf(&sb, "\n")
	for _, r := range rows {
		if r.note != "" {
			fmt.Fprintf(&sb, "- %s, %s, %s: %s\n", r.corpus, r.tool, r.step, r.note)
		}
	}
	fmt.Fprintf(&sb, "\nRequests by resource (the whole apiserver's: kcm, scheduler and kwok included):\n\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "- %s, %s, %s: %s\n", r.corpus, r.tool, r.step, verbs(r.byResource))
	}
	find := func(corpus, tool, step string) *benchRow {
		for i := range rows {
			if rows[i].corpus == corpus && rows[i].tool == tool && rows[i].step == step {
				return &rows[i]
			}
		}
		return nil
	}
	fmt.Fprintf(&sb, "\n| corpus | step | run/kubectl wall | run/flux wall | up/kubectl wall | up/flux wall | requests run / up / kubectl / flux |\n|---|---|---:|---:|---:|---:|---|\n")
	var corpora []string
	for _, r := range rows {
		if !slices.Contains(corpora, r.corpus) {
			corpora = append(corpora, r.corpus)
		}
	}
	ratio := func(a, b *benchRow) string {
		if a == nil || b == nil || b.wall == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a.wall.Seconds()/b.wall.Seconds())
	}
	reqs := func(r *benchRow) string {
		if r == nil {
			return "–"
		}
		return strconv.Itoa(total(r.requests))
	}
	for _, c := range corpora {
		for _, s := range []string{"cold sync", "no-op", "10 changed files"} {
			run, up, k, fx := find(c, "operator run", s), find(c, "operator up", s), find(c, "kubectl", s), find(c, "flux", s)
			fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %s / %s / %s / %s |\n", c, s, ratio(run, k), ratio(run, fx), ratio(up, k), ratio(up, fx),
				reqs(run), reqs(up), reqs(k), reqs(fx))
		}
	}
	fmt.Print("\n" + sb.String())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nwritten to %s\n", path)
}
