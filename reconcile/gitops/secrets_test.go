package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
)

// logSink keeps every log line, at every verbosity.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (s *logSink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func writeFile(t *testing.T, p, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// TestSweepNeverRevealsSecrets runs the whole git side of the sweep — token
// file watch, webhook, cadence, ls-remote, clone, parse, plan — through a
// rotation and a revocation, and greps every log line, error and skip for
// the token and the webhook secret. (Apply and its events come with the
// reconcile shell.)
func TestSweepNeverRevealsSecrets(t *testing.T) {
	const (
		user     = "bot"
		token1   = "tok-first-0a1b2c3d"
		token2   = "tok-second-4e5f6a7b"
		hookKey  = "hook-secret-8c9d0e1f"
		manifest = "apiVersion: hanzo.ai/v1\nkind: App\nmetadata: {name: web, namespace: hanzo}\n"
	)
	secrets := []string{token1, token2, hookKey}

	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	srv.Auth(user, token1)
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	fixture := t.TempDir()
	writeFile(t, filepath.Join(fixture, "crs/web.yaml"), manifest)
	writeFile(t, filepath.Join(fixture, "crs/zen.yaml"), strings.ReplaceAll(manifest, "hanzo", "zen"))
	writeFile(t, filepath.Join(fixture, "crs/broken.yaml"), "kind: [\n")
	writeFile(t, filepath.Join(fixture, "crs/k/kustomization.yaml"), "resources: [https://example.com/x.yaml]\n")
	if err := srv.InitRepo(fixture, "main", "universe.git"); err != nil {
		t.Fatal(err)
	}

	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, "token"), token1)
	writeFile(t, filepath.Join(creds, "webhook"), hookKey)
	tok, err := source.OpenTokenFile(filepath.Join(creds, "token"))
	if err != nil {
		t.Fatal(err)
	}
	hook, err := source.OpenTokenFile(filepath.Join(creds, "webhook"))
	if err != nil {
		t.Fatal(err)
	}

	sink := &logSink{}
	log := sink.logger()
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), log))
	defer cancel()
	go func() { _ = tok.Watch(ctx, log) }()

	src, err := gitclone.New(tok, gitclone.Options{
		URL: srv.HTTPAddress() + "/universe.git", Branch: "main", Path: "crs", Username: user, CacheDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	scope := mustScope(t, []string{"hanzo"}, nil)

	type outcome struct {
		plan Plan
		err  error
	}
	outcomes := make(chan outcome, 10)
	sweep := func(ctx context.Context) {
		log := logr.FromContextOrDiscard(ctx)
		plan, err := func() (Plan, error) {
			rev, err := src.Head(ctx)
			if err != nil {
				return Plan{}, err
			}
			snap, err := src.Snapshot(ctx, rev)
			if err != nil {
				return Plan{}, err
			}
			return scope.Plan(source.Parse(snap)), nil
		}()
		if err != nil {
			log.Error(err, "Sweep failed, retrying on the next tick")
		}
		for _, s := range plan.Skips {
			log.Info("Skipping", "file", s.File, "object", s.Object(), "reason", s.Reason, "message", s.Message)
		}
		log.Info("Sweep complete", "applies", len(plan.Applies), "skips", len(plan.Skips))
		outcomes <- outcome{plan, err}
	}
	trig := NewTrigger()
	go Run(ctx, time.Hour, trig, sweep)
	wh := &Webhook{Trigger: trig, Secret: hook, Log: log}
	post := func(key string) int {
		body := `{"ref":"refs/heads/main"}`
		req := httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader(body))
		req.Header.Set(HeaderGeneric, "sha256="+sign(key, body))
		rec := httptest.NewRecorder()
		wh.ServeHTTP(rec, req)
		return rec.Code
	}
	next := func() outcome {
		t.Helper()
		select {
		case o := <-outcomes:
			return o
		case <-time.After(30 * time.Second):
			t.Fatal("no sweep within 30s")
			return outcome{}
		}
	}
	var errs []error

	// 1. The sweep at start.
	o := next()
	if o.err != nil || len(o.plan.Applies) != 1 || len(o.plan.Skips) != 3 {
		t.Fatalf("first sweep: %v, %d applies, %v", o.err, len(o.plan.Applies), o.plan.Skips)
	}

	// 2. The token is rotated; a badly signed hook is refused, a signed one
	// sweeps with the new token.
	srv.Auth(user, token2)
	writeFile(t, filepath.Join(creds, "token"), token2)
	if code := post("wrong-key"); code != http.StatusUnauthorized {
		t.Errorf("badly signed hook: %d, want 401", code)
	}
	if code := post(hookKey); code != http.StatusAccepted {
		t.Errorf("signed hook: %d, want 202", code)
	}
	if o = next(); o.err != nil {
		t.Errorf("sweep after rotation: %v", o.err)
	}
	errs = append(errs, o.err)

	// 3. The token is revoked: the sweep fails, and says so without it.
	srv.Auth(user, "revoked-"+token2)
	post(hookKey)
	if o = next(); !errors.Is(o.err, transport.ErrAuthenticationRequired) {
		t.Errorf("sweep with a revoked token: %v, want an authentication error", o.err)
	}
	errs = append(errs, o.err)

	var texts []string
	texts = append(texts, sink.all())
	for _, e := range errs {
		if e != nil {
			texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		}
	}
	for _, s := range o.plan.Skips {
		texts = append(texts, s.String())
	}
	for _, text := range texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("a secret leaked:\n%s", text)
			}
		}
	}
	for _, want := range []string{"Sweep complete", "Skipping", "Rejected webhook", "Sweep failed"} {
		if !strings.Contains(sink.all(), want) {
			t.Errorf("log misses %q", want)
		}
	}
}
