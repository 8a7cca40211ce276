package deploy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/kinds"
)

func noFollow() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestSignIn walks the authorization-code flow with PKCE against the in-test issuer: the
// issuer checks the S256 verifier, the plane the state, and the session cookie then
// authenticates API calls.
func TestSignIn(t *testing.T) {
	iss := newIssuer(t)
	iss.Login = map[string]any{"sub": "ann", "org": "acme"}
	auth := newAuth(t, iss)
	var h http.Handler
	front := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer front.Close()
	opts := deploy.DefaultOptions()
	opts.PublicURL, opts.ClientID = front.URL, audience
	s, err := deploy.New(deploy.Config{Options: opts, Auth: auth, Reader: unreadable{}, Scheme: runtime.NewScheme(), Registry: kinds.Builtin(),
		APIGroup: "hanzo.ai", Served: func(schema.GroupVersionKind) bool { return false }, Metrics: prometheus.NewRegistry(), Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	h = s.Handler()
	c := front.Client()
	c.CheckRedirect = noFollow().CheckRedirect

	resp, err := c.Get(front.URL + "/v1/deploy/auth/login?return_url=/v1/deploy/ui/%23apps")
	if err != nil {
		t.Fatal(err)
	}
	state := cookieNamed(resp, "deploy.oauth")
	authURL, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || state == nil || !state.HttpOnly || !state.Secure || state.SameSite != http.SameSiteLaxMode {
		t.Fatalf("login: %s, state cookie %+v", resp.Status, state)
	}
	if q := authURL.Query(); !strings.HasPrefix(authURL.String(), iss.URL+"/authorize") || q.Get("code_challenge_method") != "S256" ||
		q.Get("redirect_uri") != front.URL+"/v1/deploy/auth/callback" {
		t.Fatalf("authorization URL %s", authURL)
	}
	resp, err = noFollow().Get(authURL.String())
	if err != nil {
		t.Fatal(err)
	}
	callback := resp.Header.Get("Location")

	// a forged state is refused
	cb, _ := url.Parse(callback)
	forged := *cb
	fq := forged.Query()
	fq.Set("state", "forged")
	forged.RawQuery = fq.Encode()
	req, _ := http.NewRequest(http.MethodGet, forged.String(), nil)
	req.AddCookie(state)
	if resp, err = c.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged state: %v %v", resp.Status, err)
	}

	req, _ = http.NewRequest(http.MethodGet, callback, nil)
	req.AddCookie(state)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	session := cookieNamed(resp, deploy.SessionCookie)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/v1/deploy/ui/#apps" {
		t.Fatalf("callback: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 {
		t.Fatalf("session cookie %+v", session)
	}
	if iss.Exchanges != 1 {
		t.Fatalf("%d code exchanges, want 1", iss.Exchanges)
	}
	// the same code a second time is refused by the issuer
	req, _ = http.NewRequest(http.MethodGet, callback, nil)
	req.AddCookie(state)
	if resp, err = c.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("replayed code: %v %v", resp.Status, err)
	}

	req, _ = http.NewRequest(http.MethodGet, front.URL+"/v1/deploy/api/v1/account/can-i/applications/get/acme/web", nil)
	req.AddCookie(session)
	if resp, err = c.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("API with the session cookie: %v %v", resp.Status, err)
	}
	// logout clears it
	resp, _ = c.Get(front.URL + "/v1/deploy/auth/logout")
	if cl := cookieNamed(resp, deploy.SessionCookie); cl == nil || cl.MaxAge >= 0 {
		t.Fatalf("logout cookie %+v", cl)
	}
	// an open redirect is not possible
	resp, _ = c.Get(front.URL + "/v1/deploy/auth/login?return_url=https://evil.example/")
	if v := cookieNamed(resp, "deploy.oauth"); v == nil || strings.Contains(v.Value, "evil") {
		t.Fatalf("return_url kept: %+v", v)
	}
}

func TestSignInOffWithoutPublicURL(t *testing.T) {
	iss := newIssuer(t)
	h := offlineServer(t, newAuth(t, iss)).Handler()
	for _, p := range []string{"/v1/deploy/auth/login", "/v1/deploy/auth/callback?code=x&state=y"} {
		res, body := do(t, h, http.MethodGet, p, "")
		if res.StatusCode != http.StatusNotImplemented || !strings.Contains(string(body), "public-url") {
			t.Errorf("%s: %d %s, want 501 naming the flag", p, res.StatusCode, body)
		}
	}
}
