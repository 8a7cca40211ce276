package gitops

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/e2e/testbed"
)

// BenchmarkSweepVsKubectl applies the same 1000 universe Service CRs (plus
// their CRD and a Namespace) with the sweep and with
// `kubectl apply --server-side -f` on the same apiserver, each in a fresh
// namespace: a cold sync, a no-op re-apply, and ten changed files. It prints
// wall times, their ratio, and the apiserver's own request counts by verb
// (apiserver_request_total; open watches are counted by the apiserver only
// when they end, so the sweep's client-side counts are printed too). Run:
//
//	go test -run '^$' -bench SweepVsKubectl -benchtime 1x ./reconcile/gitops/
func BenchmarkSweepVsKubectl(b *testing.B) {
	const n = 1000
	ctrllog.SetLogger(logr.Discard())
	cfg := testbed.APIServer(b)
	kubectl := filepath.Join(testbed.BinDir(), "kubectl")
	kubeconfig := writeKubeconfig(b, cfg)
	for i := range b.N {
		rows := []benchRow{}
		// The CRD is installed once, outside the measurements.
		setup := b.TempDir()
		writeFiles(b, setup, map[string][]byte{"crd.yaml": serviceCRD(b)})
		runKubectl(b, kubectl, kubeconfig, setup)

		// kubectl
		ns := fmt.Sprintf("bench-kubectl-%d-%d", i, time.Now().Unix())
		files := serviceFixture(b, ns, n)
		dir := b.TempDir()
		writeFiles(b, dir, files)
		rows = append(rows, measure(b, cfg, "kubectl", "cold sync", func() { runKubectl(b, kubectl, kubeconfig, dir) }))
		rows = append(rows, measure(b, cfg, "kubectl", "no-op", func() { runKubectl(b, kubectl, kubeconfig, dir) }))
		changes := changed(ns)
		writeFiles(b, dir, changes)
		rows = append(rows, measure(b, cfg, "kubectl", "10 changed files", func() { runKubectl(b, kubectl, kubeconfig, dir) }))

		// the sweep
		ns = fmt.Sprintf("bench-sweep-%d-%d", i, time.Now().Unix())
		src := newMemSource(serviceFixture(b, ns, n))
		scope, _ := NewScope([]string{All}, nil)
		scope = scope.WithCRDs(true) // the fixture declares its CRD
		reqs := &requests{}
		counted := rest.CopyConfig(cfg)
		counted.WrapTransport = reqs.wrap
		var sw *Sweeper
		ctx := context.Background()
		sweep := func(step string) func() {
			return func() {
				if sw == nil {
					var err error
					o := DefaultOptions()
					if c, _ := strconv.Atoi(os.Getenv("BENCH_CONCURRENCY")); c > 0 {
						o.Concurrency = c
					}
					if sw, err = NewSweeper(counted, src, scope, o); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				r := sw.Sweep(ctx)
				if r.Error != "" || r.Summary.Errors > 0 {
					b.Fatalf("%s: %s %+v", step, r.Error, r.Summary)
				}
				if step == "cold" {
					fmt.Printf("sweep cold sync: the Sweep call took %.2fs (the wall time below adds building the clients)\n", time.Since(t0).Seconds())
				}
			}
		}
		row := measure(b, cfg, "sweep", "cold sync", sweep("cold"))
		row.client = reqs.take()
		rows = append(rows, row)
		rssCold := rss()
		row = measure(b, cfg, "sweep", "no-op", sweep("no-op"))
		row.client = reqs.take()
		rows = append(rows, row)
		src.commit(changed(ns))
		row = measure(b, cfg, "sweep", "10 changed files", sweep("changed"))
		row.client = reqs.take()
		rows = append(rows, row)
		sw.Close()
		printRows(rows, rssCold)
	}
}

func changed(ns string) map[string][]byte {
	out := map[string][]byte{}
	for i := range 10 {
		out[servicePath(i*97)] = serviceFile(ns, i*97, 1)
	}
	return out
}

type benchRow struct {
	tool, step string
	wall       time.Duration
	server     map[string]int // apiserver_request_total delta by verb
	client     map[string]int // the sweep's own count, by verb and resource
}

func measure(b *testing.B, cfg *rest.Config, tool, step string, f func()) benchRow {
	before := apiserverRequests(b, cfg)
	start := time.Now()
	f()
	wall := time.Since(start)
	time.Sleep(200 * time.Millisecond) // let the apiserver record the last requests
	after := apiserverRequests(b, cfg)
	delta := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			delta[k] = d
		}
	}
	delta["GET"]-- // the scrape before this measurement
	if delta["GET"] <= 0 {
		delete(delta, "GET")
	}
	return benchRow{tool: tool, step: step, wall: wall, server: delta}
}

var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\d+)`)
var labelRe = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiserverRequests sums apiserver_request_total by verb, leaving out the
// apiserver's own lease and loopback traffic.
func apiserverRequests(b *testing.B, cfg *rest.Config) map[string]int {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
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
		case "coordination.k8s.io/leases", "discovery.k8s.io/endpointslices", "/endpoints", "/services",
			"apiregistration.k8s.io/apiservices", "flowcontrol.apiserver.k8s.io/flowschemas",
			"flowcontrol.apiserver.k8s.io/prioritylevelconfigurations":
			continue // the apiserver's own upkeep
		}
		v, _ := strconv.Atoi(m[2])
		out[labels["verb"]] += v
	}
	return out
}

func printRows(rows []benchRow, rssCold uint64) {
	find := func(tool, step string) benchRow {
		for _, r := range rows {
			if r.tool == tool && r.step == step {
				return r
			}
		}
		return benchRow{}
	}
	fmt.Printf("\n%-8s %-17s %9s %8s  %s\n", "tool", "step", "wall", "requests", "apiserver requests by verb")
	for _, r := range rows {
		fmt.Printf("%-8s %-17s %8.2fs %8d  %s\n", r.tool, r.step, r.wall.Seconds(), total(r.server), verbs(r.server))
		if r.client != nil {
			fmt.Printf("%-8s %-17s %9s %8d  client side: %s\n", "", "", "", total(r.client), verbs(r.client))
		}
	}
	for _, step := range []string{"cold sync", "no-op", "10 changed files"} {
		s, k := find("sweep", step), find("kubectl", step)
		fmt.Printf("sweep/kubectl %-17s wall %.2f×  requests %d/%d\n", step, s.wall.Seconds()/k.wall.Seconds(), total(s.server), total(k.server))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("process RSS after the sweep's cold sync: %d MiB (Go heap in use now: %d MiB; the harness holds the fixtures too)\n",
		rssCold>>20, ms.HeapInuse>>20)
}

func verbs(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// rss reads the resident set size of this process.
func rss() uint64 { return procStatus("VmRSS") }

func writeFiles(b *testing.B, dir string, files map[string][]byte) {
	for p, d := range files {
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, d, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func runKubectl(b *testing.B, kubectl, kubeconfig, dir string) {
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-R", "-f", dir)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(kubeconfig))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// writeKubeconfig writes cfg for kubectl, in a directory that is also its
// HOME (so its discovery cache starts cold).
func writeKubeconfig(b testing.TB, cfg *rest.Config) string {
	c := clientcmdapi.NewConfig()
	c.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	c.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	c.CurrentContext = "envtest"
	p := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, p); err != nil {
		b.Fatal(err)
	}
	return p
}
