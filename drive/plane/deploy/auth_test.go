package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

const audience = "deploy-dashboard"

// adminOrg is the reserved org of the plane's super-admins in these tests.
const adminOrg = "platform"

func newIssuer(t *testing.T) *testbed.OIDCIssuer {
	t.Helper()
	iss, err := testbed.NewOIDCIssuer(audience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	return iss
}

func authOptions(iss *testbed.OIDCIssuer) deploy.AuthOptions {
	o := deploy.DefaultAuthOptions()
	o.Issuer, o.Audience, o.AdminOrg = iss.URL, audience, adminOrg
	return o
}

func newAuth(t *testing.T, iss *testbed.OIDCIssuer) *deploy.Authenticator {
	t.Helper()
	a, err := deploy.NewAuthenticator(context.Background(), authOptions(iss), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// unreadable is a cache reader for tests that never reach a read.
type unreadable struct{}

var errNoRead = errors.New("this test reads nothing")

func (unreadable) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errNoRead
}
func (unreadable) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNoRead
}

// offlineServer is a plane whose routes fail at any read: enough for authentication.
func offlineServer(t *testing.T, a *deploy.Authenticator) *deploy.Server {
	return offlineServerWith(t, a, nil)
}

// offlineServerWith is offlineServer with its config changed by edit first.
func offlineServerWith(t *testing.T, a *deploy.Authenticator, edit func(*deploy.Config)) *deploy.Server {
	t.Helper()
	c := deploy.Config{Options: deploy.DefaultOptions(), Auth: a, Reader: unreadable{}, Scheme: runtime.NewScheme(),
		Registry: kinds.Builtin(), APIGroup: "hanzo.ai", Served: func(schema.GroupVersionKind) bool { return false },
		Version: deploy.VersionMessage{Version: "test"}, Metrics: prometheus.NewRegistry(), Log: logr.Discard()}
	if edit != nil {
		edit(&c)
	}
	s, err := deploy.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, path, token string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result(), rec.Body.Bytes()
}

func TestNoIssuerRefusesToStart(t *testing.T) {
	if _, err := deploy.New(deploy.Config{Reader: unreadable{}, Scheme: runtime.NewScheme(), Served: func(schema.GroupVersionKind) bool { return false }}); err == nil {
		t.Fatal("a plane without an authenticator started")
	}
	o := deploy.DefaultAuthOptions()
	o.Audience = audience
	if _, err := deploy.NewAuthenticator(context.Background(), o, nil, nil); err == nil || !strings.Contains(err.Error(), "oidc-issuer") {
		t.Fatalf("no issuer: got %v, want an error naming the flag", err)
	}
	iss := newIssuer(t)
	o = authOptions(iss)
	o.Audience = ""
	if _, err := deploy.NewAuthenticator(context.Background(), o, nil, nil); err == nil {
		t.Fatal("no audience accepted")
	}
	o = authOptions(iss)
	o.Issuer = iss.URL + "/elsewhere"
	if _, err := deploy.NewAuthenticator(context.Background(), o, nil, nil); err == nil {
		t.Fatal("an issuer without discovery accepted")
	}
}

func TestTokensThatMustNotAuthenticate(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t)
	h := offlineServer(t, newAuth(t, iss)).Handler()
	admin := map[string]any{"sub": "root", "aud": audience, "groups": []string{"admin"}}
	with := func(extra map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range admin {
			c[k] = v
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	// forged: the other issuer's key, our issuer's name
	forged := other.Token(with(map[string]any{"iss": iss.URL}))
	cases := map[string]string{
		"none":           "",
		"expired":        iss.Token(with(map[string]any{"exp": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Add(-time.Hour).Unix()})),
		"wrong audience": iss.Token(with(map[string]any{"aud": "someone-else"})),
		"alg none":       iss.UnsignedToken(admin),
		"unsigned":       strings.Join(strings.Split(iss.Token(admin), ".")[:2], ".") + ".",
		"forged key":     forged,
		"other issuer":   other.Token(admin),
		"garbage":        "not-a-jwt",
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/v1/deploy/api/version", "/v1/deploy/api/v1/applications", "/v1/deploy/api/v1/account/can-i/applications/get/*"} {
				res, body := do(t, h, http.MethodGet, path, tok)
				if res.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401 (%s)", path, res.StatusCode, body)
				}
				var e deploy.ErrorBody
				if err := json.Unmarshal(body, &e); err != nil || e.Code != 16 || e.Message == "" {
					t.Fatalf("%s: error body %s, want the gateway shape with code 16", path, body)
				}
				if strings.Contains(string(body), "expired") || strings.Contains(string(body), "audience") {
					t.Fatalf("the reason leaked into the response: %s", body)
				}
			}
		})
	}
	// a token in the query string is never read
	res, _ := do(t, h, http.MethodGet, "/v1/deploy/api/version?token="+iss.Token(admin)+"&access_token="+iss.Token(admin), "")
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token in the URL: status %d, want 401", res.StatusCode)
	}
	// and the valid one passes
	res, body := do(t, h, http.MethodGet, "/v1/deploy/api/version", iss.Token(admin))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d %s", res.StatusCode, body)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil || v["Version"] != "test" {
		t.Fatalf("version body %s: want capitalised keys", body)
	}
}

func TestCanIFromTheOnePredicate(t *testing.T) {
	iss := newIssuer(t)
	h := offlineServer(t, newAuth(t, iss)).Handler()
	admin := iss.Token(map[string]any{"sub": "root", "aud": audience, "org": adminOrg, "groups": "admin"})
	member := iss.Token(map[string]any{"sub": "ann", "aud": audience, "org": "acme", "groups": []string{"dev"}})
	noOrg := iss.Token(map[string]any{"sub": "nobody", "aud": audience})
	// attack: a tenant whose issuer-side group is called "admin" (many IdPs let an org's own
	// owner name its groups) is no SuperAdmin: only a token of the reserved admin org is
	tenantAdmin := iss.Token(map[string]any{"sub": "eve", "aud": audience, "org": "acme", "groups": []string{"admin"}})
	groupOnly := iss.Token(map[string]any{"sub": "mallory", "aud": audience, "groups": []string{"admin"}})
	cases := []struct {
		token, path, want string
		code              int
	}{
		{admin, "applications/sync/acme/web", "yes", 200},
		{admin, "applications/rollback/default/demo/web", "yes", 200},
		{member, "applications/get/acme/web", "yes", 200},
		{member, "applications/get/acme/demo/web", "yes", 200},
		{member, "applications/get/other/web", "no", 200},
		{member, "applications/sync/acme/web", "no", 200},
		{member, "applications/rollback/acme/web", "no", 200},
		{member, "applications/action/acme/web", "no", 200},
		{member, "projects/get/acme", "yes", 200},
		{member, "projects/get/other", "no", 200},
		{member, "clusters/get/*", "yes", 200},
		{member, "exec/create/acme/web", "no", 200},
		{noOrg, "applications/get/default/web", "no", 200},
		{tenantAdmin, "applications/sync/acme/web", "no", 200},
		{tenantAdmin, "applications/get/globex/web", "no", 200},
		{groupOnly, "applications/sync/acme/web", "no", 200},
		{groupOnly, "applications/get/acme/web", "no", 200},
		{admin, "applications/fly/x", "", 400},
		{member, "rockets/get/x", "", 400},
	}
	for _, c := range cases {
		res, body := do(t, h, http.MethodGet, "/v1/deploy/api/v1/account/can-i/"+c.path, c.token)
		if res.StatusCode != c.code {
			t.Fatalf("%s: status %d, want %d (%s)", c.path, res.StatusCode, c.code, body)
		}
		if c.code != 200 {
			continue
		}
		var r deploy.CanIResponse
		if err := json.Unmarshal(body, &r); err != nil || r.Value != c.want {
			t.Fatalf("%s: %s, want %q", c.path, body, c.want)
		}
	}
}

func TestIdentityFromClaims(t *testing.T) {
	o := deploy.DefaultAuthOptions()
	o.AdminOrg = "platform"
	cases := []struct {
		claims map[string]any
		want   deploy.Identity
	}{
		{map[string]any{"sub": "a", "org": "platform", "groups": []any{"dev", "admin"}}, deploy.Identity{Subject: "a", Name: "a", Org: "platform", Admin: true}},
		{map[string]any{"sub": "a", "org": "platform", "groups": "admin", "email": "a@x"}, deploy.Identity{Subject: "a", Name: "a@x", Org: "platform", Admin: true}},
		// the admin group without the admin org is no admin: not bare, not of a tenant org
		{map[string]any{"sub": "a", "groups": []any{"dev", "admin"}}, deploy.Identity{Subject: "a", Name: "a"}},
		{map[string]any{"sub": "e", "org": "acme", "groups": []any{"admin"}}, deploy.Identity{Subject: "e", Name: "e", Org: "acme"}},
		{map[string]any{"sub": "p", "org": "platform", "groups": []any{"dev"}}, deploy.Identity{Subject: "p", Name: "p", Org: "platform"}},
		{map[string]any{"sub": "b", "org": " acme ", "groups": []any{"administrators"}}, deploy.Identity{Subject: "b", Name: "b", Org: "acme"}},
		{map[string]any{"sub": "c", "org": 7}, deploy.Identity{Subject: "c", Name: "c"}},
		{map[string]any{"sub": "d", "org": "platform", "preferred_username": "dee", "groups": []any{1, "admin"}}, deploy.Identity{Subject: "d", Name: "dee", Org: "platform", Admin: true}},
	}
	for _, c := range cases {
		if got := deploy.IdentityFromClaims(c.claims, o); got != c.want {
			t.Errorf("%v: got %+v, want %+v", c.claims, got, c.want)
		}
	}
	o.AdminOrg = "" // no admin org: nobody is an admin
	if id := deploy.IdentityFromClaims(map[string]any{"sub": "a", "org": "", "groups": []any{"admin"}}, o); id.Admin {
		t.Errorf("no admin org configured, yet %+v is an admin", id)
	}
}
