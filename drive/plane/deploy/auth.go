package deploy

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/openuniverse/operator/kinds"
)

// AuthOptions configures who may use the plane. Identity comes only from an OIDC token the
// issuer signed: never from a header, a parameter or the request body.
type AuthOptions struct {
	// Issuer is the OIDC issuer URL (discovery at <issuer>/.well-known/openid-configuration).
	// Empty: the plane refuses to start.
	Issuer string
	// Audience is the value the token's aud must hold (the dashboard's client id).
	Audience string
	// OrgClaim names the claim holding the caller's organisation (a string).
	OrgClaim string
	// AdminClaim and AdminValues are the admin predicate: a token whose AdminClaim (a string
	// or a list of strings) holds one of AdminValues is an admin, when the token is also of
	// AdminOrg.
	AdminClaim  string
	AdminValues []string
	// AdminOrg is the reserved org of the platform's super-admins: only a token whose OrgClaim
	// is AdminOrg can be an admin, so a tenant's issuer-side group called "admin" grants
	// nothing. Empty: nobody is an admin (the plane is read-only).
	AdminOrg string
}

// DefaultAuthOptions are the claim and label names of the existing platform.
func DefaultAuthOptions() AuthOptions {
	return AuthOptions{OrgClaim: "org", AdminClaim: "groups", AdminValues: []string{"admin"}}
}

// Validate reports a configuration the plane cannot run with; it names the flag.
func (o AuthOptions) Validate() error {
	switch {
	case o.Issuer == "":
		return errors.New("--deploy-plane-oidc-issuer is required: the deploy plane never runs open")
	case o.Audience == "":
		return errors.New("--deploy-plane-oidc-audience is required: tokens are checked against it")
	case o.OrgClaim == "":
		return errors.New("--deploy-plane-org-claim must not be empty")
	case o.AdminClaim == "" || len(o.AdminValues) == 0:
		return errors.New("--deploy-plane-admin-claim and --deploy-plane-admin-values must not be empty")
	case o.AdminOrg != "":
		if err := kinds.ValidOrg(o.AdminOrg); err != nil {
			return fmt.Errorf("--deploy-plane-admin-org: %w", err)
		}
	}
	return nil
}

// Identity is who a validated token names.
type Identity struct {
	Subject string
	// Name is the best human name the token carries (email, preferred_username, subject).
	Name string
	// Org is the caller's organisation from OrgClaim; empty when the token has none.
	Org string
	// Admin is the SuperAdmin: the admin predicate on a token of AuthOptions.AdminOrg.
	Admin bool
	// Expiry is when the token stops being valid; a stream it opened ends then.
	Expiry time.Time
}

// IdentityFromClaims reads the org and applies the admin predicate, which holds only for a
// token of the reserved admin org. It is pure.
func IdentityFromClaims(claims map[string]any, o AuthOptions) Identity {
	id := Identity{}
	id.Subject, _ = claims["sub"].(string)
	id.Name = id.Subject
	for _, k := range []string{"preferred_username", "email"} {
		if s, ok := claims[k].(string); ok && s != "" {
			id.Name = s
			break
		}
	}
	if s, ok := claims[o.OrgClaim].(string); ok {
		id.Org = strings.TrimSpace(s)
	}
	if o.AdminOrg == "" || id.Org != o.AdminOrg {
		return id
	}
	for _, v := range claimStrings(claims[o.AdminClaim]) {
		if slices.Contains(o.AdminValues, v) {
			id.Admin = true
		}
	}
	return id
}

func claimStrings(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Authenticator verifies bearer tokens against the issuer's JWKS (coreos/go-oidc): signature
// by a key the issuer publishes (alg "none" and unsigned tokens never verify), issuer, audience
// and expiry.
type Authenticator struct {
	opts     AuthOptions
	verifier *oidc.IDTokenVerifier
	provider *oidc.Provider
}

// NewAuthenticator runs OIDC discovery against o.Issuer with hc (nil: http.DefaultClient).
// It fails when the options are incomplete or discovery fails: the plane does not start.
func NewAuthenticator(ctx context.Context, o AuthOptions, hc *http.Client, now func() time.Time) (*Authenticator, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if hc != nil {
		ctx = oidc.ClientContext(ctx, hc)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("OIDC discovery at %s: %w", o.Issuer, err)
	}
	cfg := &oidc.Config{ClientID: o.Audience, SupportedSigningAlgs: []string{
		oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}}
	if now != nil {
		cfg.Now = now
	}
	return &Authenticator{opts: o, verifier: p.Verifier(cfg), provider: p}, nil
}

// Provider is the discovered issuer, for the sign-in flow.
func (a *Authenticator) Provider() *oidc.Provider { return a.provider }

// Options returns the options the authenticator was made with.
func (a *Authenticator) Options() AuthOptions { return a.opts }

// errUnauthenticated is the error every failed authentication becomes on the wire: the
// reason (expired, audience, signature) goes to the log only.
var errUnauthenticated = errors.New("no valid bearer token")

// Verify checks a raw token and returns its identity.
func (a *Authenticator) Verify(ctx context.Context, raw string) (Identity, error) {
	tok, err := a.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, err
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("read token claims: %w", err)
	}
	id := IdentityFromClaims(claims, a.opts)
	id.Expiry = tok.Expiry
	return id, nil
}

// SessionCookie is the cookie the sign-in flow stores the ID token in.
const SessionCookie = "deploy.token"

// tokenOf returns the bearer token of r: the Authorization header, else the session cookie
// (fromCookie). Never a query parameter: tokens do not belong in URLs.
func tokenOf(r *http.Request) (raw string, fromCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok), false
		}
		return "", false
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		return c.Value, true
	}
	return "", false
}

// errCrossSite is the refusal of a state-changing request a cookie session did not make itself.
var errCrossSite = errors.New("permission denied: a request authenticated by the session cookie that changes state must be " +
	"application/json from the plane's own origin (Origin or Sec-Fetch-Site: same-origin); use a bearer token otherwise")

// CookieRequestAllowed is the CSRF defence of cookie sessions. The session cookie is
// SameSite=Strict, but a sibling subdomain is the same site, so the cookie rides along on its
// forms: a state-changing request (anything but GET, HEAD, OPTIONS) authenticated by the
// cookie must carry Content-Type application/json (no HTML form can send it without a CORS
// preflight, which the plane never grants) and come from the plane's own origin: an Origin
// equal to origin (scheme://host of --deploy-plane-public-url; empty: any scheme with the
// request's host), or, without Origin, Sec-Fetch-Site: same-origin. A request with neither
// is refused. Bearer-token requests never reach this check. It is pure.
func CookieRequestAllowed(method string, h http.Header, host, origin string) error {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return errCrossSite
	}
	sfs := h.Get("Sec-Fetch-Site")
	if sfs != "" && sfs != "same-origin" {
		return errCrossSite
	}
	o := h.Get("Origin")
	switch {
	case o == "" && sfs == "":
		return errCrossSite
	case o == "":
		return nil
	case origin != "":
		if !strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return errCrossSite
		}
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !strings.EqualFold(u.Host, host) {
		return errCrossSite
	}
	return nil
}

// originOf is scheme://host of a public URL ("" when it has none).
func originOf(public string) string {
	u, err := url.Parse(public)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
