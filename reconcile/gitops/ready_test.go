package gitops

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
)

func TestReadinessHandler(t *testing.T) {
	pass := func(*http.Request) error { return nil }
	fail := func(*http.Request) error { return errors.New("secret detail") }
	cases := map[string]struct {
		checks Readiness
		code   int
		body   string
	}{
		"all pass":    {checks: Readiness{"caches": pass, "gitops": pass}, code: 200, body: "ok"},
		"none":        {checks: Readiness{}, code: 200, body: "ok"},
		"one fails":   {checks: Readiness{"caches": pass, "gitops": fail}, code: 503, body: "[+]caches ok\n[-]gitops not ready\n"},
		"both fail":   {checks: Readiness{"caches": fail, "gitops": fail}, code: 503, body: "[-]caches not ready\n[-]gitops not ready\n"},
		"sorted form": {checks: Readiness{"b": pass, "a": fail}, code: 503, body: "[-]a not ready\n[+]b ok\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.checks.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
			if strings.Contains(rec.Body.String(), "secret detail") {
				t.Error("the body carries a check's error")
			}
		})
	}
}

// gatedSource holds Head until open is closed.
type gatedSource struct {
	source.Source
	open chan struct{}
	err  error
}

func (g *gatedSource) Head(ctx context.Context) (string, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if g.err != nil {
		return "", g.err
	}
	return g.Source.Head(ctx)
}

// TestSweeperReady runs the sweep in a manager as cmd/operator does, with its git source
// held: the leader's /readyz is 503 until the first sweep reports, then 200 — also when
// that sweep failed (it reported its error). A standby, which never sweeps, is ready.
func TestSweeperReady(t *testing.T) {
	cfg := testbed.APIServer(t)
	for name, headErr := range map[string]error{"sweep succeeds": nil, "sweep fails": errors.New("git host unreachable")} {
		t.Run(name, func(t *testing.T) {
			mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
			if err != nil {
				t.Fatal(err)
			}
			src := &gatedSource{open: make(chan struct{}), err: headErr, Source: newMemSource(map[string][]byte{
				"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ready, namespace: default}\ndata: {k: v}\n"),
			})}
			sw, err := NewSweeper(mgr.GetConfig(), src, mustScope(t, []string{"default"}, nil), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := mgr.Add(sw); err != nil {
				t.Fatal(err)
			}
			elected := func() bool {
				select {
				case <-mgr.Elected():
					return true
				default:
					return false
				}
			}
			leader := httptest.NewServer(Readiness{"gitops": sw.Ready(elected)})
			defer leader.Close()
			standby := httptest.NewServer(Readiness{"gitops": sw.Ready(func() bool { return false })})
			defer standby.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			defer func() { cancel(); <-done }() //nolint:errcheck // the manager's exit error is not this test's subject

			<-mgr.Elected()
			for range 10 { // the sweep has started and is held at Head
				if code := status(t, leader.URL); code != http.StatusServiceUnavailable {
					t.Fatalf("leader /readyz %d before the first sweep, want 503", code)
				}
				if code := status(t, standby.URL); code != http.StatusOK {
					t.Fatalf("standby /readyz %d, want 200", code)
				}
				time.Sleep(50 * time.Millisecond)
			}
			close(src.open)
			deadline := time.Now().Add(30 * time.Second)
			for status(t, leader.URL) != http.StatusOK {
				if time.Now().After(deadline) {
					t.Fatal("leader /readyz not 200 after the first sweep")
				}
				time.Sleep(20 * time.Millisecond)
			}
			r := sw.Last()
			if r == nil || (headErr == nil) != (r.Error == "") || (headErr != nil && !strings.Contains(r.Error, headErr.Error())) {
				t.Errorf("first sweep report %+v", r)
			}
		})
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
