package drive

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/openuniverse/operator/source"
)

// Auth is the one credential a peer is called with: a Bearer token (platform, cloud) or
// HTTP Basic with a client id and secret (visor). The values come from files and print as
// [REDACTED].
type Auth struct {
	Bearer source.Credentials
	// Basic: the IAM client id and secret.
	BasicUser, BasicPassword source.Credentials
}

// ErrNoCredentials: the peer's credentials are not configured or empty; nothing is sent.
var ErrNoCredentials = errors.New("no credentials configured")

// header returns the value of the Authorization header for a. Exactly one scheme must be
// configured: a is refused when it holds both or neither, so a request never carries two
// Authorization headers (a proxy or peer may pick either) and never leaves anonymous.
func (a Auth) header() (string, error) {
	bearer := !source.NoCredentials(a.Bearer)
	basic := !source.NoCredentials(a.BasicUser) || !source.NoCredentials(a.BasicPassword)
	switch {
	case bearer && basic:
		return "", errors.New("both Bearer and Basic credentials configured; exactly one Authorization header is sent")
	case bearer:
		t := a.Bearer.Token()
		if t.IsZero() {
			return "", ErrNoCredentials
		}
		return "Bearer " + t.Reveal(), nil
	case basic:
		if source.NoCredentials(a.BasicUser) || source.NoCredentials(a.BasicPassword) {
			return "", errors.New("basic credentials need both the client id and the client secret")
		}
		u, p := a.BasicUser.Token(), a.BasicPassword.Token()
		if u.IsZero() || p.IsZero() {
			return "", ErrNoCredentials
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Reveal()+":"+p.Reveal())), nil
	default:
		return "", ErrNoCredentials
	}
}

// Authorize sets exactly one Authorization header on h, replacing any already there.
func (a Auth) Authorize(h http.Header) error {
	v, err := a.header()
	if err != nil {
		return err
	}
	h.Del("Authorization")
	h.Set("Authorization", v)
	return nil
}

// checkOneAuthorization is the last check before a request leaves: exactly one
// Authorization header value, never zero and never two.
func checkOneAuthorization(h http.Header) error {
	if n := len(h.Values("Authorization")); n != 1 {
		return fmt.Errorf("refusing to send a request with %d Authorization headers (want exactly 1)", n)
	}
	return nil
}

// authTransport authorizes every request with one header and re-checks it on the way out.
type authTransport struct {
	auth Auth
	base http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if err := t.auth.Authorize(r.Header); err != nil {
		return nil, err
	}
	if err := checkOneAuthorization(r.Header); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}
