package drive

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openuniverse/operator/source"
)

// appsWire is a /v1/apps answer in the platform's shape, with the fields the loop ignores.
const appsWire = `{
  "apps": [
    {"id": "hanzo/cloud/prod", "org": "hanzo", "app": "cloud", "env": "prod",
     "registry": "ghcr.io/hanzo/cloud", "repo": "hanzoai/cloud", "declaredTag": "v1.3.0",
     "runningTag": "v1.2.3", "latestTag": "v1.3.0", "cluster": "hanzo-k8s", "namespace": "hanzo",
     "releaseUrl": "https://example.invalid/r", "releaseAssets": [], "health": {"ok": true},
     "lastObserved": "2026-11-01T10:00:00Z", "updatedAt": "2026-11-01T10:00:00Z", "drift": true},
    {"id": "hanzo/iam/prod", "org": "hanzo", "app": "iam", "env": "prod",
     "registry": "ghcr.io/hanzo/iam", "cluster": "other-cluster"},
    {"id": "bad", "declaredTag": 42},
    {"id": "hanzo/kms/prod", "org": "hanzo", "app": "kms", "env": "prod",
     "registry": "ghcr.io/hanzo/kms", "declaredTag": "v2.0.0", "runningTag": "v2.0.0", "cluster": "hanzo-k8s"}
  ],
  "summary": {"total": 4, "drifting": 1}
}`

func tokenFile(t *testing.T, value string) *source.TokenFile {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestDecodeAppsLenient(t *testing.T) {
	rows, bad, err := DecodeApps([]byte(appsWire))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(bad) != 1 {
		t.Fatalf("rows %d, bad %d; want 3 rows and the malformed one reported", len(rows), len(bad))
	}
	want := Row{ID: "hanzo/cloud/prod", Org: "hanzo", App: "cloud", Env: "prod", Registry: "ghcr.io/hanzo/cloud",
		DeclaredTag: "v1.3.0", RunningTag: "v1.2.3", Cluster: "hanzo-k8s", Namespace: "hanzo"}
	if rows[0] != want {
		t.Errorf("row 0 = %+v, want %+v", rows[0], want)
	}
	if got := RowsFor(rows, "hanzo-k8s"); len(got) != 2 || got[0].App != "cloud" || got[1].App != "kms" {
		t.Errorf("RowsFor(hanzo-k8s) = %+v", got)
	}
	if rows, _, err := DecodeApps([]byte(`{"summary": {}}`)); err != nil || len(rows) != 0 {
		t.Errorf("missing apps key: rows %v err %v, want an empty table", rows, err)
	}
	if _, _, err := DecodeApps([]byte(`<html>`)); err == nil {
		t.Error("a non-JSON body decoded")
	}
}

func TestPlatformHeaders(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodGet || r.URL.Path != "/v1/apps" || r.URL.RawQuery != "" {
			http.Error(w, "wrong request "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer s3cr3t-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("X-Org-Id") != "hanzo" {
			http.Error(w, "missing X-Org-Id", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(appsWire))
	}))
	defer srv.Close()
	p, err := NewPlatform(srv.URL+"/", "hanzo", tokenFile(t, "s3cr3t-token"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := p.Apps(context.Background())
	if err != nil || len(rows) != 3 {
		t.Fatalf("Apps = %d rows, %v", len(rows), err)
	}

	// a wrong token: 401 is ErrUnauthorized, not retried, and the token never shows
	p2, _ := NewPlatform(srv.URL, "hanzo", tokenFile(t, "wr0ng-token"))
	calls.Store(0)
	_, err = p2.Apps(context.Background())
	if !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "wr0ng") {
		t.Errorf("401: err = %v, want ErrUnauthorized without the token", err)
	}
	if calls.Load() != 1 {
		t.Errorf("401 sent %d requests, want 1 (no retry)", calls.Load())
	}
	// no X-Org-Id: a 400 carrying the body
	p3, _ := NewPlatform(srv.URL, "", tokenFile(t, "s3cr3t-token"))
	var se *StatusError
	if _, err = p3.Apps(context.Background()); !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Body, "X-Org-Id") {
		t.Errorf("400: err = %v", err)
	}
	// no token file: nothing is sent
	calls.Store(0)
	p4, _ := NewPlatform(srv.URL, "hanzo", (*source.TokenFile)(nil))
	if _, err = p4.Apps(context.Background()); !errors.Is(err, ErrNoCredentials) || calls.Load() != 0 {
		t.Errorf("no token: err = %v after %d requests, want ErrNoCredentials and none sent", err, calls.Load())
	}
	for _, bad := range []string{"ftp://x", "https://user:pw@host", "host-only"} {
		if _, err := NewPlatform(bad, "", nil); err == nil {
			t.Errorf("NewPlatform(%q) accepted", bad)
		}
	}
}

func TestPlatformUnreachableRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"apps": []}`))
	}))
	p, _ := NewPlatform(srv.URL, "", tokenFile(t, "tok"))
	if _, err := p.Apps(context.Background()); err != nil || calls.Load() != 3 {
		t.Errorf("503 twice then 200: err %v after %d calls, want success after 3", err, calls.Load())
	}
	srv.Close()
	if _, err := p.Apps(context.Background()); err == nil {
		t.Error("a closed server answered")
	}
}

func TestAppsTickFailuresAreMeteredNotFatal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	p, _ := NewPlatform(srv.URL, "", tokenFile(t, "tok"))
	a := &Apps{Platform: p, Mode: ModeOn, Allow: AllowList{"*"}, Cluster: "c"}
	before := testutil.ToFloat64(metricPolls.WithLabelValues("unauthorized"))
	if _, err := a.Tick(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("401 tick: %v", err)
	}
	if got := testutil.ToFloat64(metricPolls.WithLabelValues("unauthorized")) - before; got != 1 {
		t.Errorf("unauthorized polls metered %v, want 1", got)
	}
	srv.Close()
	before = testutil.ToFloat64(metricPolls.WithLabelValues("unreachable"))
	if _, err := a.Tick(context.Background()); err == nil {
		t.Error("a closed platform answered")
	}
	if got := testutil.ToFloat64(metricPolls.WithLabelValues("unreachable")) - before; got != 1 {
		t.Errorf("unreachable polls metered %v, want 1", got)
	}
}

// TestPeersSendCredentialsOnlyToTheirHost is the attack on the outbound clients: the
// platform, cloud and visor answer every request with a 302 to a second server on another
// host; it must never see the Bearer token or visor's Basic client secret. And no client
// is built for plain http beyond loopback.
func TestPeersSendCredentialsOnlyToTheirHost(t *testing.T) {
	var leaked atomic.Int32
	var reached atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		_, _ = w.Write([]byte(`{"apps": []}`))
	}))
	defer thief.Close()
	away := strings.Replace(thief.URL, "127.0.0.1", "localhost", 1) // another host to the client
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, away+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	ctx := context.Background()
	p, err := NewPlatform(srv.URL, "hanzo", tokenFile(t, "pl4tform-t0ken"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = p.Apps(ctx)
	cl, err := NewCloud(srv.URL, tokenFile(t, "cl0ud-t0ken"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = cl.GetAgent(ctx, "hanzo", "a")
	v, err := NewVisor(srv.URL, tokenFile(t, "iam-client"), tokenFile(t, "iam-s3cr3t"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = v.GetMachine(ctx, "m1")
	if reached.Load() != 3 {
		t.Errorf("the redirect target got %d requests, want 3", reached.Load())
	}
	if leaked.Load() != 0 {
		t.Errorf("%d requests carried the Authorization header to another host", leaked.Load())
	}
	for _, bad := range []string{"http://platform.example.com", "http://10.0.0.7:8080", "http://169.254.169.254"} {
		if _, err := NewPlatform(bad, "", tokenFile(t, "t")); err == nil {
			t.Errorf("NewPlatform(%q) accepted plain http beyond loopback", bad)
		}
		if _, err := NewCloud(bad, tokenFile(t, "t")); err == nil {
			t.Errorf("NewCloud(%q) accepted plain http beyond loopback", bad)
		}
		if _, err := NewVisor(bad, tokenFile(t, "id"), tokenFile(t, "s")); err == nil {
			t.Errorf("NewVisor(%q) accepted plain http beyond loopback", bad)
		}
	}
}
