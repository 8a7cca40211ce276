package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/e2e/testbed"
)

// floorProcs is how many kubectl processes apply the floor's children at once (the
// operator applies 16 CRs at once by default; 8 processes already keep the apiserver busy
// on 2 cores). KINDS_BENCH_FLOOR_PROCS overrides it.
const floorProcs = 8

// floorResult is what the floor cost: the same children as the operator's run, applied
// straight with kubectl.
type floorResult struct {
	applied, ready time.Duration // every kubectl done; every Deployment Available
	available      int
	requests       float64 // apiserver_request_total delta, all clients
	planeCPU       float64 // the control plane's processes, seconds
	planeBy        string  // the same, per process
	clientCPU      float64 // the kubectl processes, seconds
	procs          int
	latency        string // meanLatencies
}

// floor renders the bench's N CRs with the real builders (`operator render`, the built
// binary: the code the controllers build with), strips the owner references (there is no
// CR), and applies them with `kubectl apply --server-side` from the control plane's bin
// dir, floorProcs processes at once, to a fresh namespace of the same testbed; it waits
// (a watch) until every Deployment is Available with all its replicas, then deletes the
// namespace and waits until it is gone, so that the operator's run does not share the
// control plane with its garbage collection. It runs before the operator is started and,
// unless KINDS_BENCH_FLOOR_AFTER=0, once more after it.
func (kb *kindsBench) floor(ctx context.Context, timeout time.Duration) floorResult {
	b := kb.b
	procs := floorProcs
	if env := os.Getenv("KINDS_BENCH_FLOOR_PROCS"); env != "" {
		if p, err := strconv.Atoi(env); err == nil && p > 0 {
			procs = p
		}
	}
	saved := kb.ns
	defer func() { kb.ns = saved }()
	kb.ns = fmt.Sprintf("kinds-floor-%d-%d", kb.n, time.Now().Unix())
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": kb.ns}}}
	if err := kb.c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	defer kb.deleteNamespace(ns)

	dir := b.TempDir()
	shards := kb.renderFloor(dir, procs)
	kubectl := filepath.Join(testbed.BinDir(), "kubectl")
	cacheDir := filepath.Join(dir, "kube-cache") // one discovery cache, filled by the first process

	res := floorResult{procs: len(shards)}
	apiBefore := scrapeAPIServer(b, kb.cfg)
	planeBefore := kb.planeCPU()
	type readyAt struct {
		n    int
		last time.Time
	}
	readyCh := make(chan readyAt, 1)
	watching := make(chan struct{})
	go func() {
		n, last := kb.waitAll(ctx, "apps/v1", "DeploymentList", deploymentAvailable, timeout, watching)
		readyCh <- readyAt{n, last}
	}()
	<-watching
	start := time.Now()
	profiled := kb.cpuProfiles(ctx, "floor", nil)
	defer profiled()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for _, shard := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kb.kubeconfig, "--cache-dir", cacheDir, "apply", "--server-side",
				"--field-manager", "universe-floor", "-f", shard)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &out
			err := cmd.Run()
			mu.Lock()
			defer mu.Unlock()
			if cmd.ProcessState != nil {
				res.clientCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
			}
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: %v: %s", filepath.Base(shard), err, out.String()))
			}
		}()
	}
	wg.Wait()
	res.applied = time.Since(start)
	if len(failures) > 0 {
		b.Fatalf("floor: kubectl apply: %s", strings.Join(failures, "\n"))
	}
	r := <-readyCh
	res.available = r.n
	if !r.last.IsZero() {
		res.ready = r.last.Sub(start)
	}
	time.Sleep(time.Second) // let the apiserver count the last requests
	apiDelta := scrapeAPIServer(b, kb.cfg).delta(apiBefore)
	res.requests, res.latency = apiDelta.sum("apiserver_request_total", nil), meanLatencies(apiDelta)
	res.planeCPU, res.planeBy = planeDelta(planeBefore, kb.planeCPU())
	return res
}

// renderFloor writes the N CRs to dir/crs/ (500 a file), renders them with `operator render`, and
// writes the children, without owner references, to procs JSON Lists of whole CRs (a CR's
// Deployment and Service in the same shard); it returns their paths.
func (kb *kindsBench) renderFloor(dir string, procs int) []string {
	b := kb.b
	// files of 500 CRs: render refuses a file of more than --gitops-max-documents (1 000)
	in := filepath.Join(dir, "crs")
	if err := os.MkdirAll(in, 0o755); err != nil {
		b.Fatal(err)
	}
	var crs bytes.Buffer
	for i := range kb.n {
		y, err := yaml.Marshal(kb.cr(i).Object)
		if err != nil {
			b.Fatal(err)
		}
		crs.WriteString("---\n")
		crs.Write(y)
		if (i+1)%500 == 0 || i == kb.n-1 {
			if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("crs-%03d.yaml", i/500)), crs.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			crs.Reset()
		}
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(kb.bin, "render", in)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("operator render: %v\n%s", err, stderr.String())
	}
	lists := make([][]any, procs)
	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 1<<20)
	count := 0
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			b.Fatalf("operator render output: %v", err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetOwnerReferences(nil) // no CR: nothing owns them
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		u.SetNamespace(kb.ns)
		// svc-0042: CR 42; both of its children go to the same shard
		i, _ := strconv.Atoi(strings.TrimPrefix(u.GetName(), "svc-"))
		lists[i%procs] = append(lists[i%procs], u.Object)
		count++
	}
	if count != 2*kb.n {
		b.Fatalf("operator render: %d objects for %d CRs, want a Deployment and a Service each", count, kb.n)
	}
	var paths []string
	for p, items := range lists {
		if len(items) == 0 {
			continue
		}
		data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("floor-%02d.json", p))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// deploymentAvailable is the floor's Ready: the Deployment's controller has seen its
// generation and every replica is updated and available (Available True), as a Service
// CR's Ready asks of its Deployment.
func deploymentAvailable(u *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
	avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	if gen < u.GetGeneration() || updated != want || avail != want {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Available" {
			return m["status"] == "True"
		}
	}
	return false
}

// ratio is a/b, printed with the goal it is held to.
func ratio(label string, a, b, goal float64) string {
	if b <= 0 {
		return label + " n/a"
	}
	r := a / b
	verdict := "within"
	if goal > 0 && r > goal {
		verdict = "OVER"
	}
	if goal <= 0 {
		return fmt.Sprintf("%s %.2f×", label, r)
	}
	return fmt.Sprintf("%s %.2f× (goal ≤ %.1f×: %s)", label, r, goal, verdict)
}
