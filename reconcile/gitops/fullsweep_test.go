package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
)

// TestFullSweepNeverRevealsSecrets runs the whole sweep — token file, git
// server with a password, webhook, Runnable, clone, plan, apply on the real
// apiserver, report, GET /gitops — through a success, a failing object and
// a revoked token, and greps every log line, error and report for the token,
// the webhook secret and the data of a Secret declared in git.
func TestFullSweepNeverRevealsSecrets(t *testing.T) {
	const (
		user       = "bot"
		token      = "tok-full-sweep-5d6e7f80"
		hookKey    = "hook-full-sweep-91a2b3c4"
		secretData = "s3cr3t-data-value-77aa"
		ns         = "secrets-test"
	)
	// base64 of secretData, as it would sit in the manifest
	secretB64 := "czNjcjN0LWRhdGEtdmFsdWUtNzdhYQ=="
	secrets := []string{token, hookKey, secretData, secretB64}

	git, err := testbed.NewGitServer("", user, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(git.Stop)
	files := map[string][]byte{
		"crs/ns.yaml":     fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		"crs/secret.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: %s}\ndata: {password: %s}\n", ns, secretB64),
		"crs/cm.yaml":     fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: %s}\ndata: {k: v}\n", ns),
		"crs/bad.yaml":    fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: %s}\ndata: {Not A Valid Key!: %s}\n", ns, secretData),
		"crs/other.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: elsewhere}\ndata: {k: v}\n"),
		"crs/broken.yaml": []byte("kind: [\n"),
	}
	if _, err := git.Commit("universe.git", "main", "initial", files); err != nil {
		t.Fatal(err)
	}

	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, "token"), token)
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

	src, err := gitclone.New(tok, gitclone.Options{URL: git.HTTPURL("universe.git"), Branch: "main", Path: "crs", Username: user, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	scope := mustScope(t, []string{ns}, nil)
	opts := DefaultOptions()
	sw, err := NewSweeper(testbed.APIServer(t), src, scope, opts)
	if err != nil {
		t.Fatal(err)
	}
	recorder := events.NewFakeRecorder(100) // captures the Events' text, to grep it
	sw.Recorder = recorder
	mux := http.NewServeMux()
	sw.Routes(mux, sw.Webhook(hook, opts, log))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- sw.Start(ctx) }()

	report := func() *Report {
		resp, err := http.Get(srv.URL + "/gitops")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r *Report
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// waitFor polls GET /gitops until a report newer than after satisfies ok.
	waitFor := func(after time.Time, ok func(*Report) bool) *Report {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if r := report(); r != nil && r.Started.After(after) && ok(r) {
				return r
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no matching sweep within 60s; last: %+v", report())
		return nil
	}
	post := func(key string) int {
		body := `{"ref":"refs/heads/main"}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/reconcile", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderGitHub, "sha256="+sign(key, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// 1. The sweep at start applies what is in scope; the bad object fails alone.
	first := waitFor(time.Time{}, func(r *Report) bool { return r.Error == "" })
	want := Summary{Files: 6, Refetched: 6, Created: 3, Errors: 1, Skipped: 1, OutOfScope: 1, Applied: 4}
	got := first.Summary
	got.Health = HealthCounts{} // health comes from the watches, asserted by TestSweepHealth
	if got != want {
		t.Errorf("first sweep: %+v, want %+v", first.Summary, want)
	}

	// 2. A push and a signed hook: the next sweep reads the new head.
	files["crs/cm.yaml"] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: %s}\ndata: {k: v2}\n", ns)
	if _, err := git.Commit("universe.git", "main", "change", map[string][]byte{"crs/cm.yaml": files["crs/cm.yaml"]}); err != nil {
		t.Fatal(err)
	}
	if code := post("wrong-key"); code != http.StatusUnauthorized {
		t.Errorf("badly signed hook: %d, want 401", code)
	}
	now := time.Now()
	if code := post(hookKey); code != http.StatusAccepted {
		t.Errorf("signed hook: %d, want 202", code)
	}
	second := waitFor(now, func(r *Report) bool { return r.Revision != first.Revision })
	if second.Summary.Updated != 1 || second.Summary.Applied != 2 {
		t.Errorf("sweep after a push: %+v, want the changed ConfigMap updated (and the bad one retried)", second.Summary)
	}

	// 3. The token is revoked: the sweep fails and says so without it.
	writeFile(t, filepath.Join(creds, "token"), "revoked-"+token)
	time.Sleep(500 * time.Millisecond) // let the token file watch reload
	now = time.Now()
	post(hookKey)
	failed := waitFor(now, func(r *Report) bool { return r.Error != "" })

	cancel()
	if err := <-done; err != nil {
		t.Errorf("sweeper stopped with %v", err)
	}
	body, _ := json.Marshal(report())
	texts := []string{sink.all(), failed.Error, string(body)}
	for _, r := range []*Report{first, second, failed} {
		b, _ := json.Marshal(r)
		texts = append(texts, string(b))
		for _, res := range r.Results {
			if res.Err != nil {
				texts = append(texts, res.Err.Error(), fmt.Sprintf("%+v", res.Err))
			}
		}
	}
	var recorded []string
	for len(recorder.Events) > 0 {
		recorded = append(recorded, <-recorder.Events)
	}
	if !strings.Contains(strings.Join(recorded, "\n"), EventApplyFailed) {
		t.Errorf("no %s event for the object that failed: %q", EventApplyFailed, recorded)
	}
	texts = append(texts, recorded...)
	for _, text := range texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("a secret (%.4s…) leaked:\n%s", secret, text)
			}
		}
	}
	for _, want := range []string{"Created object", "Apply failed", "Skipping", "Sweep complete", "Sweep failed", "Rejected webhook"} {
		if !strings.Contains(sink.all(), want) {
			t.Errorf("log misses %q", want)
		}
	}
}
