package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/drive/plane/deploy"
)

// recordActions counts the imperatives the plane asked for.
type recordActions struct {
	mu                sync.Mutex
	sweeps, reconcile int
}

func (a *recordActions) Reconcile(context.Context, *unstructured.Unstructured, string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reconcile++
	return nil
}

func (a *recordActions) RequestSweep(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweeps++
	return nil
}

func (a *recordActions) SetImage(context.Context, *unstructured.Unstructured, string, string) error {
	return errors.New("not in this test")
}

func (a *recordActions) Restart(context.Context, *unstructured.Unstructured, string) error {
	return errors.New("not in this test")
}

func (a *recordActions) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sweeps + a.reconcile
}

// TestCookieSessionCSRF is the attack of a page on a sibling subdomain (the same site, so the
// SameSite=Strict session cookie rides along) posting a text/plain form to POST /reconcile
// while an admin who signed in visits it: the plane ran the sweep as that admin. A
// state-changing request authenticated by the cookie now needs application/json and the
// plane's own origin; bearer-token requests are unaffected.
func TestCookieSessionCSRF(t *testing.T) {
	iss := newIssuer(t)
	auth := newAuth(t, iss)
	admin := iss.Token(map[string]any{"sub": "root", "aud": audience, "org": adminOrg, "groups": []string{"admin"}})
	const sibling = "https://evil.example.com"
	cases := []struct {
		name, publicURL string
		bearer          bool
		header          map[string]string
		allowed         bool
	}{
		{name: "text/plain form from a sibling subdomain", header: map[string]string{"Content-Type": "text/plain", "Origin": sibling, "Sec-Fetch-Site": "same-site"}},
		{name: "urlencoded form, no Origin", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
		{name: "multipart form, same-origin claimed", header: map[string]string{"Content-Type": "multipart/form-data; boundary=x", "Sec-Fetch-Site": "same-origin"}},
		{name: "no content type", header: map[string]string{"Origin": "http://example.com"}},
		{name: "json from a sibling origin", header: map[string]string{"Content-Type": "application/json", "Origin": sibling}},
		{name: "json, same-site fetch", header: map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}},
		{name: "json, same Origin but a cross-site fetch", header: map[string]string{"Content-Type": "application/json", "Origin": "http://example.com", "Sec-Fetch-Site": "cross-site"}},
		{name: "json, neither Origin nor Sec-Fetch-Site", header: map[string]string{"Content-Type": "application/json"}},
		{name: "json, Origin null", header: map[string]string{"Content-Type": "application/json", "Origin": "null"}},
		{name: "json, public origin over plain http", publicURL: "https://deploy.example.test",
			header: map[string]string{"Content-Type": "application/json", "Origin": "http://deploy.example.test"}},
		{name: "json, the request's host but not the public origin", publicURL: "https://deploy.example.test",
			header: map[string]string{"Content-Type": "application/json", "Origin": "http://example.com"}},

		{name: "json from the same origin", allowed: true, header: map[string]string{"Content-Type": "application/json", "Origin": "http://example.com"}},
		{name: "json with a charset, same-origin fetch", allowed: true,
			header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Sec-Fetch-Site": "same-origin"}},
		{name: "json from the public origin", publicURL: "https://deploy.example.test", allowed: true,
			header: map[string]string{"Content-Type": "application/json", "Origin": "https://deploy.example.test"}},
		{name: "bearer token, text/plain from anywhere", bearer: true, allowed: true,
			header: map[string]string{"Content-Type": "text/plain", "Origin": sibling, "Sec-Fetch-Site": "cross-site"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acts := &recordActions{}
			h := offlineServerWith(t, auth, func(cfg *deploy.Config) {
				cfg.Actions = acts
				if c.publicURL != "" {
					cfg.Options.PublicURL, cfg.Options.ClientID = c.publicURL, audience
				}
			}).Handler()
			req := httptest.NewRequest(http.MethodPost, "/v1/deploy/reconcile", strings.NewReader("{}"))
			if c.bearer {
				req.Header.Set("Authorization", "Bearer "+admin)
			} else {
				req.AddCookie(&http.Cookie{Name: deploy.SessionCookie, Value: admin})
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if c.allowed {
				if rec.Code != http.StatusOK || acts.count() != 1 {
					t.Fatalf("status %d, %d imperatives, want 200 and the sweep: %s", rec.Code, acts.count(), rec.Body)
				}
				return
			}
			var e deploy.ErrorBody
			if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != 7 || e.Message == "" {
				t.Fatalf("status %d %s, want 403 in the gateway's shape (code 7)", rec.Code, rec.Body)
			}
			if acts.count() != 0 {
				t.Fatalf("the cross-site request ran %d imperatives", acts.count())
			}
		})
	}
	// reads of a cookie session are unaffected (the dashboard's own GETs carry no Origin)
	h := offlineServer(t, auth).Handler()
	req := httptest.NewRequest(http.MethodGet, "/v1/deploy/api/version", nil)
	req.AddCookie(&http.Cookie{Name: deploy.SessionCookie, Value: admin})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("cookie GET: %d %s", rec.Code, rec.Body)
	}
}

// realServer serves s with the server Start would listen with (its timeouts).
func realServer(t *testing.T, s *deploy.Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = s.HTTPServer()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// openStream opens the application stream with token; it returns the status and, on 200, a
// channel of its lines (closed when the server ends the stream).
func openStream(t *testing.T, ctx context.Context, base, token string) (int, http.Header, <-chan string) {
	t.Helper()
	// resourceVersion without a name: no initial burst, so the offline plane reads nothing
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/deploy/api/v1/stream/applications?resourceVersion=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header, nil
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return resp.StatusCode, resp.Header, lines
}

// openWhenFree opens a stream, retrying a 429 for up to 5 s: a closed stream's slot comes back
// when its handler notices the closed connection, a moment after the client closed it.
func openWhenFree(t *testing.T, ctx context.Context, base, token string) (int, <-chan string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, lines := openStream(t, ctx, base, token)
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			return code, lines
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamLimits: streams were unbounded per identity (each one a subscriber the hub fans
// every event out to) and outlived the token that opened them. Now one subject holds at most
// MaxStreamsPerIdentity, the plane MaxStreams, one more is 429 with Retry-After, and a
// stream ends when its token expires.
func TestStreamLimits(t *testing.T) {
	iss := newIssuer(t)
	s := offlineServerWith(t, newAuth(t, iss), func(c *deploy.Config) {
		c.Options.MaxStreamsPerIdentity, c.Options.MaxStreams, c.Options.Keepalive = 2, 3, 100*time.Millisecond
	})
	srv := realServer(t, s)
	tok := func(sub string) string {
		return iss.Token(map[string]any{"sub": sub, "aud": audience, "org": "acme"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	annCtx, closeAnn := context.WithCancel(ctx)
	for i := range 2 {
		if code, _, _ := openStream(t, annCtx, srv.URL, tok("ann")); code != http.StatusOK {
			t.Fatalf("ann's stream %d: %d", i+1, code)
		}
	}
	// attack: one identity opening stream after stream
	code, h, _ := openStream(t, ctx, srv.URL, tok("ann"))
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("ann's third stream: %d (Retry-After %q), want 429 with Retry-After", code, h.Get("Retry-After"))
	}
	if code, _, _ := openStream(t, ctx, srv.URL, tok("bob")); code != http.StatusOK {
		t.Fatalf("bob's first stream: %d, want 200 (ann's bound is ann's)", code)
	}
	if code, _, _ := openStream(t, ctx, srv.URL, tok("carol")); code != http.StatusTooManyRequests {
		t.Fatalf("the fourth stream of the plane: %d, want 429 (MaxStreams 3)", code)
	}
	closeAnn() // ann's streams end: her slots come back, each when its handler returns
	if code, _ := openWhenFree(t, ctx, srv.URL, tok("carol")); code != http.StatusOK {
		t.Fatalf("closed streams never released their slots: %d", code)
	}

	// attack: a stream opened with a token that expires keeps serving after it
	exp := time.Unix(time.Now().Add(2*time.Second).Unix(), 0) // exp is whole seconds
	short := iss.Token(map[string]any{"sub": "dave", "aud": audience, "org": "acme", "exp": exp.Unix()})
	code, lines := openWhenFree(t, ctx, srv.URL, short) // ann's second slot may still be closing
	if code != http.StatusOK {
		t.Fatalf("short-lived token's stream: %d", code)
	}
	timeout := time.After(time.Until(exp) + 3*time.Second)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-timeout:
			t.Fatalf("the stream still runs %s after its token expired", time.Since(exp).Round(time.Millisecond))
		}
	}
	if early := time.Until(exp); early > time.Second {
		t.Fatalf("the stream ended %s before its token expired", early)
	}
	t.Logf("the stream ended %s after its token's exp", time.Since(exp).Round(time.Millisecond))
}

// TestServerTimeouts: the plane's server had only a header timeout, so a client could hold a
// connection and a handler forever by sending a body slowly, or hold idle keep-alive
// connections without bound. Read, write and idle timeouts now end both, while a stream
// outlives all of them (it lifts the read deadline and renews the write deadline per frame).
func TestServerTimeouts(t *testing.T) {
	iss := newIssuer(t)
	const limit = 400 * time.Millisecond
	s := offlineServerWith(t, newAuth(t, iss), func(c *deploy.Config) {
		c.Options.ReadTimeout, c.Options.WriteTimeout, c.Options.IdleTimeout, c.Options.Keepalive = limit, limit, limit, 100*time.Millisecond
	})
	srv := realServer(t, s)
	addr := srv.Listener.Addr().String()
	token := iss.Token(map[string]any{"sub": "ann", "aud": audience, "org": "acme"})

	closedWithin := func(t *testing.T, c net.Conn, max time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		_ = c.SetReadDeadline(start.Add(max))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection is still open after %s", max)
		}
		return time.Since(start)
	}
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/deploy/api/v1/applications/web/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", token)
		t.Logf("a body that never comes: connection closed after %s", closedWithin(t, c, 5*time.Second))
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/deploy/api/version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("version: %v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		t.Logf("an idle keep-alive connection closed after %s", closedWithin(t, c, 5*time.Second))
	})
	t.Run("a stream outlives them", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		code, _, lines := openStream(t, ctx, srv.URL, token)
		if code != http.StatusOK {
			t.Fatalf("stream: %d", code)
		}
		start := time.Now()
		last := time.Duration(0)
		for until := time.After(4 * limit); ; {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended after %s (read/write timeout %s)", time.Since(start), limit)
				}
				if l == ":" {
					last = time.Since(start)
				}
				continue
			case <-until:
			}
			break
		}
		if last < 3*limit {
			t.Fatalf("last keepalive after %s, want one past %s", last, 3*limit)
		}
	})
}
