package gitops

import (
	"context"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestSweeperRunsInManager wires the sweeper as cmd/operator does: added to
// a manager, it sweeps once elected (here: leader election off) and stops
// with the manager.
func TestSweeperRunsInManager(t *testing.T) {
	cfg := testbed.APIServer(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	src := newMemSource(map[string][]byte{
		"crs/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: runnable, namespace: default}\ndata: {k: v}\n"),
	})
	sw, err := NewSweeper(mgr.GetConfig(), src, mustScope(t, []string{"default"}, nil), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(sw); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for sw.Last() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if r := sw.Last(); r == nil || r.Summary.Created+r.Summary.InSync != 1 {
		t.Errorf("no sweep through the manager: %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
}
