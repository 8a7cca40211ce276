package e2e

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// TestPushLatencyLargeRepo measures push→applied for a one-file change in a 1000-file
// repository: the push webhook, head resolution, an incremental fetch, re-reading only the
// changed blob, and one apply. It asserts that exactly the changed object is sent each time
// and prints the latency distribution (a measurement, not a timed assertion).
func TestPushLatencyLargeRepo(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns, n, rounds = "e2e-latency", 1000, 15
	deleteNamespaceAfter(t, cl, ns)
	cm := func(i, v int) []byte {
		return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: %s\ndata:\n  value: \"%d\"\n", i, ns, v)
	}
	files := map[string][]byte{"namespace.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)}
	for i := range n {
		files[fmt.Sprintf("config/%02d/cm-%04d.yaml", i/100, i)] = cm(i, 0)
	}
	sha, pushed := repo.push(t, "1000 files", files)
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	first := op.sweptAt(t, sha, pushed)
	if first.Summary.Created != n+1 {
		t.Fatalf("cold sweep: %+v, want %d created", first.Summary, n+1)
	}
	t.Logf("cold sweep of %d files: %.3fs", n+1, first.Duration)

	var lat []time.Duration
	for r := 1; r <= rounds; r++ {
		i := (r * 37) % n
		sha, pushed := repo.push(t, "change one", map[string][]byte{fmt.Sprintf("config/%02d/cm-%04d.yaml", i/100, i): cm(i, r)})
		op.reconcileNow(t)
		rep := op.sweptAt(t, sha, pushed)
		lat = append(lat, time.Since(pushed))
		if rep.Summary.Applied != 1 || rep.Summary.Updated != 1 || rep.Summary.Refetched != 1 {
			t.Errorf("round %d: %+v, want exactly the changed file refetched and applied", r, rep.Summary)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p90 := lat[len(lat)/2], lat[len(lat)*9/10]
	t.Logf("push→applied over %d one-file pushes in a %d-file repo: p50 %s, p90 %s, max %s", rounds, n, p50.Round(time.Millisecond), p90.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Printf("e2e latency (%d-file repo, one-file change): push→applied p50 %s p90 %s\n", n, p50.Round(time.Millisecond), p90.Round(time.Millisecond))
}
