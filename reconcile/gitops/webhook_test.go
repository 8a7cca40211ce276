package gitops

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1" // the test proves SHA-1 is refused
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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

func sha1Sign(key, body string) string {
	m := hmac.New(sha1.New, []byte(key))
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
		"github sha1 inside the sha256 header": {
			reason: "X-Hub-Signature-256 accepts only sha256=; a sha1= value there is refused",
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitHub, "sha1="+sha1Sign(hookSecret, body)),
			code:    http.StatusUnauthorized,
		},
		"gitlab token": {
			reason: "GitLab sends the secret itself in X-Gitlab-Token",
			secret: staticSecret(hookSecret), body: body,
			headers: with(with(json, HeaderGitLab, hookSecret), "X-Gitlab-Event", "Push Hook"),
			code:    http.StatusAccepted, fired: true,
		},
		"gitlab wrong token": {
			secret: staticSecret(hookSecret), body: body,
			headers: with(json, HeaderGitLab, hookSecret+"x"),
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

// TestWebhookDedupesDeliveries: with Deliveries set, a signed redelivery of
// the same id is answered 200 and queues nothing; an unsigned request never
// reaches the dedupe (it cannot poison it).
func TestWebhookDedupesDeliveries(t *testing.T) {
	trig := NewTrigger()
	h := &Webhook{Trigger: trig, Secret: staticSecret(hookSecret), Log: logr.Discard(), Deliveries: NewDeliveries(2)}
	post := func(id string, signed bool) int {
		req := httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader("{}"))
		req.Header.Set("X-GitHub-Delivery", id)
		if signed {
			req.Header.Set(HeaderGitHub, "sha256="+sign(hookSecret, "{}"))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	drain := func() bool {
		select {
		case <-trig.C():
			return true
		default:
			return false
		}
	}
	if post("a", false) != http.StatusUnauthorized || drain() {
		t.Fatal("unsigned request accepted")
	}
	if post("a", true) != http.StatusAccepted || !drain() {
		t.Fatal("first signed delivery not accepted")
	}
	if post("a", true) != http.StatusOK || drain() {
		t.Error("redelivery of a seen id queued a sweep")
	}
	post("b", true)
	post("c", true) // evicts a: the memory is bounded
	drain()
	if post("a", true) != http.StatusAccepted || !drain() {
		t.Error("an id evicted from the bounded memory is not accepted again")
	}
}

// TestWebhookFloodBoundedSweeps measures a flood of validly signed requests
// against the real handler and sweep loop: with the default minimum
// interval the sweeps are at most one a second (plus the first), however
// many requests arrive; without it (the old behaviour) a flood starts a
// sweep per handful of requests. The heap stays bounded either way.
func TestWebhookFloodBoundedSweeps(t *testing.T) {
	for _, tc := range []struct {
		n      int
		minGap time.Duration
	}{{2000, 0}, {2000, time.Second}, {10000, time.Second}} {
		if testing.Short() && tc.n > 2000 {
			continue
		}
		trig := NewTrigger()
		h := &Webhook{Trigger: trig, Secret: staticSecret(hookSecret), Log: logr.Discard()}
		srv := httptest.NewServer(h)
		ctx, cancel := context.WithCancel(context.Background())
		var sweeps atomic.Int32
		done := make(chan struct{})
		go func() {
			RunLimited(ctx, time.Hour, tc.minGap, trig, func(context.Context) {
				sweeps.Add(1)
				time.Sleep(10 * time.Millisecond) // an idle sweep
			})
			close(done)
		}()
		for sweeps.Load() == 0 { // the sweep at start
			time.Sleep(time.Millisecond)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		body := `{"ref":"refs/heads/main"}`
		sig := "sha256=" + sign(hookSecret, body)
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan struct{})
		for range 16 {
			wg.Go(func() {
				for range work {
					req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
					req.Header.Set(HeaderGitHub, sig)
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						t.Errorf("status %d", resp.StatusCode)
					}
				}
			})
		}
		for range tc.n {
			work <- struct{}{}
		}
		close(work)
		wg.Wait()
		flood := time.Since(start)
		time.Sleep(tc.minGap + 100*time.Millisecond) // the last queued sweep
		runtime.ReadMemStats(&after)
		cancel()
		<-done
		srv.Close()
		got := int(sweeps.Load()) - 1
		t.Logf("%d signed requests in %s with min interval %s: %d sweeps; heap %d → %d KiB",
			tc.n, flood.Round(time.Millisecond), tc.minGap, got, before.HeapInuse>>10, after.HeapInuse>>10)
		if tc.minGap > 0 {
			if limit := int(flood/tc.minGap) + 2; got > limit {
				t.Errorf("%d sweeps for a %s flood, want at most %d (one per %s)", got, flood, limit, tc.minGap)
			}
		}
		if after.HeapInuse > before.HeapInuse+64<<20 {
			t.Errorf("heap grew by %d MiB during the flood", (after.HeapInuse-before.HeapInuse)>>20)
		}
	}
}
