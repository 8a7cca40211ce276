package gitops

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/openuniverse/operator/source"
)

const hookSecret = "whsec-4f3e2d1c"

type staticSecret string

func (s staticSecret) Token() source.Token { return source.NewToken(string(s)) }

func sign(key, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestWebhook(t *testing.T) {
	const body = `{"ref":"refs/heads/main","after":"abc"}`
	form := "payload=" + url.QueryEscape(body)
	json := map[string]string{"Content-Type": "application/json"}
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for hk, hv := range h {
			out[hk] = hv
		}
		return out
	}
	cases := map[string]struct {
		reason  string
		secret  Secret
		method  string
		body    string
		headers map[string]string
		max     int64
		code    int
		fired   bool
	}{
		"no secret accepts unsigned": {
			reason: "without a configured secret the endpoint behaves like the reference loop's",
			body:   body, headers: json, code: http.StatusAccepted, fired: true,
		},
		"github signed": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitHub, "sha256="+sign(hookSecret, body)),
			code:    http.StatusAccepted, fired: true,
		},
		"github form signed": {
			reason: "GitHub signs the raw form body",
			secret: staticSecret(hookSecret), body: form,
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded", HeaderGitHub: "sha256=" + sign(hookSecret, form)},
			code:    http.StatusAccepted, fired: true,
		},
		"github bad signature": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitHub, "sha256="+sign("wrong", body)),
			code:    http.StatusUnauthorized,
		},
		"github signature of another body": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitHub, "sha256="+sign(hookSecret, body+" ")),
			code:    http.StatusUnauthorized,
		},
		"github sha1 only is not enough": {
			reason: "X-Hub-Signature (SHA-1) alone is treated as unsigned",
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, "X-Hub-Signature", "sha1=00"),
			code:    http.StatusUnauthorized,
		},
		"gitea signed": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitea, sign(hookSecret, body)),
			code:    http.StatusAccepted, fired: true,
		},
		"forgejo signed": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderForgejo, sign(hookSecret, body)),
			code:    http.StatusAccepted, fired: true,
		},
		"forgejo bad hex": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderForgejo, "zz"),
			code:    http.StatusUnauthorized,
		},
		"generic signed": {
			secret: staticSecret(hookSecret), body: "anything",
			headers: map[string]string{HeaderGeneric: "sha256=" + sign(hookSecret, "anything")},
			code:    http.StatusAccepted, fired: true,
		},
		"generic without prefix": {
			secret: staticSecret(hookSecret), body: "anything",
			headers: map[string]string{HeaderGeneric: sign(hookSecret, "anything")},
			code:    http.StatusUnauthorized,
		},
		"unsigned with a secret": {
			secret: staticSecret(hookSecret), body: body, headers: json,
			code: http.StatusUnauthorized,
		},
		"empty secret refuses everything": {
			reason: "a blank secret file must not turn into no authentication",
			secret: staticSecret(""), body: body,
			headers: with(json, HeaderGeneric, "sha256="+sign("", body)),
			code:    http.StatusUnauthorized,
		},
		"nil token file fails closed": {
			reason: "a nil *source.TokenFile stored as the Secret refuses, never panics or accepts",
			secret: (*source.TokenFile)(nil), body: body,
			headers: with(json, HeaderGeneric, "sha256="+sign("", body)),
			code:    http.StatusUnauthorized,
		},
		"too large": {
			secret: staticSecret(hookSecret), body: strings.Repeat("x", 65),
			headers: map[string]string{HeaderGeneric: "sha256=" + sign(hookSecret, strings.Repeat("x", 65))},
			max:     64, code: http.StatusRequestEntityTooLarge,
		},
		"at the cap": {
			secret: staticSecret(hookSecret), body: strings.Repeat("x", 64),
			headers: map[string]string{HeaderGeneric: "sha256=" + sign(hookSecret, strings.Repeat("x", 64))},
			max:     64, code: http.StatusAccepted, fired: true,
		},
		"get": {
			method: http.MethodGet, code: http.StatusMethodNotAllowed,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/reconcile", strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			trig := NewTrigger()
			h := &Webhook{Trigger: trig, Secret: tc.secret, MaxBytes: tc.max, Log: logr.Discard()}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Errorf("%s\nstatus = %d, want %d (%s)", tc.reason, rec.Code, tc.code, rec.Body)
			}
			fired := len(trig.C()) == 1
			if fired != tc.fired {
				t.Errorf("%s\nsweep queued = %v, want %v", tc.reason, fired, tc.fired)
			}
		})
	}
}

// The size cap holds even when the client lies about, or omits, the length.
func TestWebhookCapsUnknownLength(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader(strings.Repeat("x", 1000)))
	req.ContentLength = -1
	trig := NewTrigger()
	rec := httptest.NewRecorder()
	(&Webhook{Trigger: trig, MaxBytes: 100, Log: logr.Discard()}).ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || len(trig.C()) != 0 {
		t.Errorf("status %d, queued %d; want 413 and nothing queued", rec.Code, len(trig.C()))
	}
}

func TestWebhookLogsNoSecret(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := funcr.New(func(p, a string) { mu.Lock(); buf.WriteString(p + a + "\n"); mu.Unlock() }, funcr.Options{Verbosity: 10})
	h := &Webhook{Trigger: NewTrigger(), Secret: staticSecret(hookSecret), Log: log}
	for _, sig := range []string{"", "sha256=" + sign("x", "b"), "sha256=" + sign(hookSecret, "b")} {
		req := httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader("b"))
		req.Header.Set(HeaderGeneric, sig)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(buf.String(), hookSecret) {
		t.Errorf("log reveals the secret:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "Rejected webhook") || !strings.Contains(buf.String(), "Webhook accepted") {
		t.Errorf("log misses the outcomes:\n%s", buf.String())
	}
}

func TestTriggerCoalesces(t *testing.T) {
	trig := NewTrigger()
	if !trig.Fire() {
		t.Fatal("first Fire did not queue")
	}
	for range 10 {
		if trig.Fire() {
			t.Fatal("Fire queued a second sweep while one was pending")
		}
	}
	<-trig.C()
	select {
	case <-trig.C():
		t.Fatal("more than one sweep pending")
	default:
	}
	if !trig.Fire() {
		t.Error("Fire after the pending sweep was taken did not queue")
	}
}

// A burst of hooks during a sweep costs at most one extra sweep.
func TestWebhookBurstIsOneExtraSweep(t *testing.T) {
	trig := NewTrigger()
	h := &Webhook{Trigger: trig, Log: logr.Discard()}
	sweeping := make(chan struct{})
	done := make(chan int)
	go func() { // the sweep loop
		sweeps := 0
		for {
			select {
			case <-trig.C():
				sweeps++
				if sweeps == 1 {
					<-sweeping // the first sweep runs through the burst
				}
			case <-time.After(200 * time.Millisecond):
				done <- sweeps
				return
			}
		}
	}()
	trig.Fire() // starts the first sweep
	time.Sleep(20 * time.Millisecond)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader("{}")))
			if rec.Code != http.StatusAccepted {
				t.Errorf("status %d, want 202", rec.Code)
			}
		})
	}
	wg.Wait()
	close(sweeping)
	if got := <-done; got != 2 {
		t.Errorf("sweeps = %d, want 2 (the running one and one extra)", got)
	}
}
