package gitops

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestSweepIsFreeWhenIdleWithState is TestSweepIsFreeWhenIdle with the git path's state
// on, as `operator run` sweeps: the inventory ConfigMap, the suspend watch and the GitSync
// status object, over status-watched custom resources. The cold sweep's writes of the
// inventory and the status settle; then an idle sweep sends nothing (no inventory or
// status write, no GET), and ten changed files cost ten applies, one inventory write and
// at most one status write.
func TestSweepIsFreeWhenIdleWithState(t *testing.T) {
	const ns, stateNS, group, n = "idle-state-test", "idle-state-home", "hanzo.ai", 1000
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNS}}); err != nil {
		t.Fatal(err)
	}
	installGitSyncCRD(t, cfg, group)
	src := newMemSource(fixture(ns, n, 0))
	reqs := &requests{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	scope, err := NewScope([]string{All}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.State = State{Namespace: stateNS, Inventory: "inv", Suspend: "suspend", Status: "gitops", APIGroup: group}
	sw, err := NewSweeper(counted, src, scope.WithCRDs(true), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)
	sweep := func(step string) (Report, map[string]int) {
		t.Helper()
		reqs.take()
		r := sw.Sweep(ctx)
		got := reqs.take()
		t.Logf("%s: %+v, requests %v", step, r.Summary, got)
		if r.Error != "" {
			t.Fatalf("%s: %s", step, r.Error)
		}
		return r, got
	}
	r, got := sweep("cold sweep")
	if a := sumVerb(got, "APPLY"); r.Summary.Created != n+2 || a > n+2+3 {
		t.Fatalf("cold sweep: %+v, %d applies; want %d created, one apply each and the state's", r.Summary, a, n+2)
	}
	for i := range 2 {
		if r, got = sweep("idle sweep"); total(got) != 0 || !r.Idle {
			t.Errorf("idle sweep %d: %d requests %v, want 0", i+1, total(got), got)
		}
	}
	changes := map[string][]byte{}
	for i := range 10 {
		changes[widgetPath(i*97)] = widgetFile(ns, i*97, 2)
	}
	src.commit(changes)
	r, got = sweep("ten changed files")
	if a := got["APPLY widgets"]; a != 10 || r.Summary.Updated != 10 || total(got)-a > 2 {
		t.Errorf("ten changed files: %d requests %v, %+v; want 10 widget applies and at most 2 others (the inventory, the status)", total(got), got, r.Summary)
	}
	if r, got = sweep("idle sweep after ten changed files"); total(got) != 0 || !r.Idle {
		t.Errorf("idle sweep after ten changed files: %d requests %v, want 0", total(got), got)
	}
}
