package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

const secret = "tok-9f8e7d6c5b4a"

func TestTokenNeverPrints(t *testing.T) {
	tok := NewToken(secret)
	type holder struct {
		Name  string
		Token Token
		Ptr   *Token
	}
	h := holder{Name: "x", Token: tok, Ptr: &tok}
	js, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":       fmt.Sprintf("%v", tok),
		"%s":       fmt.Sprintf("%s", tok),
		"%q":       fmt.Sprintf("%q", tok),
		"%x":       fmt.Sprintf("%x", tok),
		"%#v":      fmt.Sprintf("%#v", tok),
		"%+v":      fmt.Sprintf("%+v", h),
		"%#v held": fmt.Sprintf("%#v", h),
		"String":   tok.String(),
		"json":     string(js),
		"error":    fmt.Errorf("auth with %v failed", tok).Error(),
	}
	for name, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("%s reveals the token: %s", name, out)
		}
		if !strings.Contains(out, "REDACTED") {
			t.Errorf("%s = %q, want it to say [REDACTED]", name, out)
		}
	}
	if tok.Reveal() != secret {
		t.Errorf("Reveal() lost the value")
	}
}

func TestTokenScrub(t *testing.T) {
	tok := NewToken(secret)
	base := errors.New("dial https://x:" + secret + "@host: refused")
	got := tok.Scrub(fmt.Errorf("clone: %w", base))
	if strings.Contains(got.Error(), secret) {
		t.Errorf("Scrub left the token: %v", got)
	}
	if !errors.Is(got, base) {
		t.Errorf("Scrub broke errors.Is")
	}
	if tok.Scrub(nil) != nil {
		t.Errorf("Scrub(nil) != nil")
	}
	clean := errors.New("nothing here")
	if tok.Scrub(clean) != clean {
		t.Errorf("Scrub wrapped an error that needed none")
	}
}

// captureLog returns a logger that records every line, with values, at any
// verbosity.
func captureLog() (logr.Logger, func() string) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(&buf, prefix, args)
	}, funcr.Options{Verbosity: 10})
	return log, func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

func writeToken(t *testing.T, p, v string) {
	t.Helper()
	// Write and rename, as a Secret volume update does.
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func TestTokenFileWatchPicksUpRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	writeToken(t, p, "  "+secret+"\n")
	tf, err := OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := tf.Token().Reveal(); got != secret {
		t.Fatalf("Token() = %q, want it trimmed", got)
	}
	log, logged := captureLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tf.Watch(ctx, log) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}()

	const rotated = "tok-rotated-1234"
	writeToken(t, p, rotated)
	waitFor(t, func() bool { return tf.Token().Reveal() == rotated })

	// An empty file (a half-written Secret) keeps the last good token.
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if got := tf.Token().Reveal(); got != rotated {
		t.Errorf("empty file replaced the token")
	}
	const third = "tok-third-5678"
	writeToken(t, p, third)
	waitFor(t, func() bool { return tf.Token().Reveal() == third })

	out := logged()
	for _, v := range []string{secret, rotated, third} {
		if strings.Contains(out, v) {
			t.Errorf("log reveals a token:\n%s", out)
		}
	}
	if !strings.Contains(out, "Token file reloaded") {
		t.Errorf("rotation not logged:\n%s", out)
	}
}

func TestTokenFileReload(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	writeToken(t, p, secret)
	tf, err := OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeToken(t, p, "tok-new")
	if got, err := tf.Reload(); err != nil || got.Reveal() != "tok-new" {
		t.Errorf("Reload() = %v, %v", got, err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	got, err := tf.Reload()
	if err == nil || got.Reveal() != "tok-new" {
		t.Errorf("Reload() of a missing file = %v, %v; want an error and the old token", got, err)
	}
	if _, err := OpenTokenFile(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Errorf("OpenTokenFile of a missing file succeeded")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	writeToken(t, empty, " \n")
	if _, err := OpenTokenFile(empty); !errors.Is(err, ErrEmptyToken) {
		t.Errorf("OpenTokenFile of an empty file = %v, want ErrEmptyToken", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNilTokenFileFailsClosed(t *testing.T) {
	var tf *TokenFile
	if !tf.Token().IsZero() {
		t.Error("nil TokenFile has a token")
	}
	if _, err := tf.Reload(); err == nil {
		t.Error("nil TokenFile reloaded")
	}
	o := Options{}
	creds, err := o.Credentials()
	if err != nil || creds != nil {
		t.Fatalf("Credentials() without a file = %v, %v", creds, err)
	}
	if !NoCredentials(creds) || !NoCredentials(nil) {
		t.Error("NoCredentials misses a nil *TokenFile in the interface")
	}
}

// TestTokenFileRedactsInEveryVerb: fmt prints a struct's unexported fields
// raw, Formatter or not; *TokenFile formats itself, so no verb shows the
// token.
func TestTokenFileRedactsInEveryVerb(t *testing.T) {
	const secret = "tf-secret-61c0d2" // shadows the package fixture on purpose
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	type holder struct{ Creds *TokenFile }
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		for _, v := range []any{tf, holder{tf}, &holder{tf}, []*TokenFile{tf}, map[string]*TokenFile{"k": tf}} { // a TokenFile value cannot be copied (vet: copylocks)
			if got := fmt.Sprintf(verb, v); strings.Contains(got, secret) || strings.Contains(got, fmt.Sprintf("%x", secret)) {
				t.Errorf("Sprintf(%q, %T) = %q reveals the token", verb, v, got)
			}
		}
	}
	b, _ := json.Marshal(holder{tf})
	if strings.Contains(string(b), secret) {
		t.Errorf("json reveals the token: %s", b)
	}
}
