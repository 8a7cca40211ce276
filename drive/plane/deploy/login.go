package deploy

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/openuniverse/operator/source"
)

// login is the dashboard sign-in: the OIDC authorization-code flow with PKCE (S256). The ID
// token it obtains is verified like any bearer token and kept in an HttpOnly, Secure,
// SameSite=Strict session cookie. Without a public URL or a client id it is off: the routes
// answer 501, and nothing weaker takes its place.
type login struct {
	auth   *Authenticator
	cfg    *oauth2.Config
	secret *source.TokenFile
	off    string // why sign-in is off; "" when on
}

const (
	stateCookie = "deploy.oauth"
	authPath    = Prefix + "/auth"
)

func newLogin(o Options, a *Authenticator) (*login, error) {
	l := &login{auth: a}
	switch {
	case o.PublicURL == "":
		l.off = "sign-in is off: --deploy-plane-public-url is not set"
		return l, nil
	case o.ClientID == "":
		l.off = "sign-in is off: --deploy-plane-oidc-client-id is not set"
		return l, nil
	}
	u, err := url.Parse(o.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--deploy-plane-public-url %q: want an absolute http(s) URL", o.PublicURL)
	}
	if o.ClientSecretFile != "" {
		if l.secret, err = source.OpenTokenFile(o.ClientSecretFile); err != nil {
			return nil, fmt.Errorf("--deploy-plane-oidc-client-secret-file: %w", err)
		}
	}
	l.cfg = &oauth2.Config{
		ClientID:    o.ClientID,
		Endpoint:    a.Provider().Endpoint(),
		RedirectURL: strings.TrimSuffix(o.PublicURL, "/") + authPath + "/callback",
		Scopes:      o.Scopes,
	}
	return l, nil
}

func (l *login) enabled() bool { return l.off == "" }

func (l *login) config() *oauth2.Config {
	c := *l.cfg
	if l.secret != nil {
		c.ClientSecret = l.secret.Token().Reveal()
	}
	return &c
}

func randomString() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// safeReturn keeps the post-login redirect on the plane (no open redirect).
func safeReturn(p string) string {
	if strings.HasPrefix(p, Prefix+"/") && !strings.HasPrefix(p, "//") && !strings.Contains(p, "\\") {
		return p
	}
	return Prefix + "/ui/"
}

// start redirects to the issuer with a fresh state and PKCE verifier, kept in a short-lived
// cookie scoped to the auth paths.
func (l *login) start(w http.ResponseWriter, r *http.Request) {
	if !l.enabled() {
		writeError(w, codeUnimplemented, l.off)
		return
	}
	state, err := randomString()
	if err != nil {
		writeError(w, codeInternal, "random state")
		return
	}
	verifier := oauth2.GenerateVerifier()
	ret := safeReturn(r.URL.Query().Get("return_url"))
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state + "." + verifier + "." + base64.RawURLEncoding.EncodeToString([]byte(ret)),
		Path: authPath, MaxAge: 600, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, l.config().AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// callback checks the state, redeems the code with the verifier, verifies the ID token and
// sets the session cookie.
func (l *login) callback(w http.ResponseWriter, r *http.Request) {
	if !l.enabled() {
		writeError(w, codeUnimplemented, l.off)
		return
	}
	c, err := r.Cookie(stateCookie)
	if err != nil {
		writeError(w, codeInvalidArgument, "sign-in: no sign-in in progress (state cookie missing)")
		return
	}
	parts := strings.SplitN(c.Value, ".", 3)
	if len(parts) != 3 || parts[0] == "" || r.URL.Query().Get("state") != parts[0] {
		writeError(w, codeInvalidArgument, "sign-in: state mismatch")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: authPath, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	if e := r.URL.Query().Get("error"); e != "" {
		writeError(w, codeUnauthenticated, "sign-in refused by the issuer: "+e)
		return
	}
	tok, err := l.config().Exchange(r.Context(), r.URL.Query().Get("code"), oauth2.VerifierOption(parts[1]))
	if err != nil {
		writeError(w, codeUnauthenticated, "sign-in: code exchange failed")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		writeError(w, codeUnauthenticated, "sign-in: the issuer returned no id_token")
		return
	}
	idt, err := l.auth.verifier.Verify(r.Context(), raw)
	if err != nil {
		writeError(w, codeUnauthenticated, errUnauthenticated.Error())
		return
	}
	maxAge := int(time.Until(idt.Expiry).Seconds())
	if maxAge <= 0 {
		writeError(w, codeUnauthenticated, errUnauthenticated.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: raw, Path: Prefix, MaxAge: maxAge, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	ret := Prefix + "/ui/"
	if b, err := base64.RawURLEncoding.DecodeString(parts[2]); err == nil {
		ret = safeReturn(string(b))
	}
	http.Redirect(w, r, ret, http.StatusFound)
}

// logout clears the session cookie.
func (l *login) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/ui/", http.StatusFound)
}
