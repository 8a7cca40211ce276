// Package transport is the one constructor of outbound HTTP clients that carry a credential
// (the drive loop's platform, cloud and visor peers, the GitHub source): retryablehttp with
// timeouts, and an Authorization header that goes only to the configured origin.
//
// The rules, per request and per redirect hop:
//   - the credential is set only on a request to the configured origin (scheme, host and
//     port); a request to any other origin — a redirect to a CDN, an object store or a
//     hostile host — is sent without Authorization, Proxy-Authorization and Cookie headers
//     (redirects are followed, credentials dropped: GitHub sends blobs to its CDN that way);
//   - plain http is refused, at construction and on every hop, except to a loopback host;
//   - a URL carrying user info is refused (credentials come from files, never from URLs);
//   - every error is scrubbed of the credential's values before it leaves.
package transport

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/openuniverse/operator/source"
)

// DefaultTimeout bounds one attempt (connect to the last byte of the body).
const DefaultTimeout = 15 * time.Second

// DefaultMaxRedirects is how many redirects one request follows.
const DefaultMaxRedirects = 5

// ErrNoCredentials: the credential is not configured or empty, and the client was not built
// to go anonymous; nothing is sent.
var ErrNoCredentials = errors.New("no credentials configured")

// ErrRefused marks a request the client refused to send (plain http beyond loopback, a
// credential misconfigured, too many redirects). It is never retried.
var ErrRefused = errors.New("request refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Auth is the one credential a peer is called with: a Bearer token (platform, cloud,
// GitHub) or HTTP Basic with a client id and secret (visor). The values are read from their
// files on every request and print as [REDACTED].
type Auth struct {
	Bearer source.Credentials
	// Scheme replaces "Bearer" before the Bearer credential (Gitea's "token").
	Scheme string
	// HeaderName, when set, carries the Bearer credential bare in this header instead of
	// Authorization with a scheme (GitLab's PRIVATE-TOKEN).
	HeaderName string
	// BasicUser and BasicPassword: HTTP Basic (an IAM client id and secret).
	BasicUser, BasicPassword source.Credentials
}

func (a Auth) creds() []source.Credentials {
	var out []source.Credentials
	for _, c := range []source.Credentials{a.Bearer, a.BasicUser, a.BasicPassword} {
		if !source.NoCredentials(c) {
			out = append(out, c)
		}
	}
	return out
}

// name is the header the credential goes in: Authorization unless HeaderName says otherwise.
func (a Auth) name() string {
	if a.HeaderName != "" && !source.NoCredentials(a.Bearer) {
		return a.HeaderName
	}
	return "Authorization"
}

// Header returns the value of the Authorization header (or of HeaderName) for a. Exactly
// one scheme must be configured: a is refused when it holds both or neither, so a request never carries two
// Authorization headers (a proxy or peer may pick either) and never leaves anonymous.
func (a Auth) Header() (string, error) {
	bearer := !source.NoCredentials(a.Bearer)
	basic := !source.NoCredentials(a.BasicUser) || !source.NoCredentials(a.BasicPassword)
	switch {
	case bearer && basic:
		return "", refused("both Bearer and Basic credentials configured; exactly one Authorization header is sent")
	case bearer:
		t := a.Bearer.Token()
		if t.IsZero() {
			return "", ErrNoCredentials
		}
		if a.HeaderName != "" {
			return t.Reveal(), nil
		}
		scheme := a.Scheme
		if scheme == "" {
			scheme = "Bearer"
		}
		return scheme + " " + t.Reveal(), nil
	case basic:
		if source.NoCredentials(a.BasicUser) || source.NoCredentials(a.BasicPassword) {
			return "", refused("basic credentials need both the client id and the client secret")
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

// Scrub returns err with every value of a's credentials, and the Basic header they make,
// replaced by [REDACTED].
func (a Auth) Scrub(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range a.creds() {
		err = c.Token().Scrub(err)
	}
	if h, herr := a.Header(); herr == nil {
		_, v, _ := strings.Cut(h, " ")
		err = source.NewToken(v).Scrub(err)
	}
	return err
}

// reload re-reads every credential file and reports whether any value changed.
func (a Auth) reload() (bool, error) {
	changed := false
	for _, c := range a.creds() {
		before := c.Token()
		after, err := c.Reload()
		if err != nil {
			return false, err
		}
		changed = changed || after != before
	}
	return changed, nil
}

// Options tune a client. The zero value is 15 s per attempt, no retries, 5 redirects.
type Options struct {
	// Peer names the remote in log lines ("GitHub", "the platform").
	Peer string
	// Anonymous sends requests without an Authorization header when Auth holds no
	// credential (a public GitHub repository); otherwise such a request is refused.
	Anonymous bool
	// Timeout bounds one attempt; the response headers must arrive within it too.
	Timeout time.Duration
	// RetryMax is how many times a failed attempt is retried (5xx, network errors, 429).
	RetryMax                   int
	RetryWaitMin, RetryWaitMax time.Duration
	// CheckRetry and Backoff replace retryablehttp's defaults; a refused request is never
	// retried whatever they say.
	CheckRetry retryablehttp.CheckRetry
	Backoff    retryablehttp.Backoff
	// RequestLogHook and ResponseLogHook are retryablehttp's hooks.
	RequestLogHook  retryablehttp.RequestLogHook
	ResponseLogHook retryablehttp.ResponseLogHook
	// MaxRedirects bounds the redirects one request follows (DefaultMaxRedirects when 0).
	MaxRedirects int
	// Base is the transport under the credential layer (tests); cleanhttp's pooled one when nil.
	Base http.RoundTripper
}

// CheckURL parses the configured URL of a peer: absolute, no user info, https or plain http
// to a loopback host. The error does not echo the value (a mistyped URL may carry a secret).
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, errors.New("want an absolute http(s)://host URL")
	case u.User != nil:
		return nil, errors.New("the URL must not carry credentials; use the token file")
	case !allowedScheme(u):
		return nil, fmt.Errorf("plain http to %s refused: https only, plain http only to a loopback host", u.Hostname())
	}
	return u, nil
}

func allowedScheme(u *url.URL) bool {
	return u.Scheme == "https" || (u.Scheme == "http" && source.Loopback(u.Hostname()))
}

// New returns the client of the peer at base (see the package rules) and base parsed.
func New(base string, auth Auth, o Options) (*http.Client, *url.URL, error) {
	u, err := CheckURL(base)
	if err != nil {
		return nil, nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.Peer == "" {
		o.Peer = u.Host
	}
	inner := o.Base
	if inner == nil {
		t := cleanhttp.DefaultPooledTransport()
		t.ResponseHeaderTimeout = o.Timeout
		inner = t
	}
	pin := &pinned{auth: auth, scheme: u.Scheme, host: u.Host, anonymous: o.Anonymous, peer: o.Peer, base: inner}

	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.RetryMax = o.RetryMax
	if o.RetryWaitMin > 0 {
		rc.RetryWaitMin = o.RetryWaitMin
	}
	if o.RetryWaitMax > 0 {
		rc.RetryWaitMax = o.RetryWaitMax
	}
	if o.Backoff != nil {
		rc.Backoff = o.Backoff
	}
	rc.RequestLogHook, rc.ResponseLogHook = o.RequestLogHook, o.ResponseLogHook
	check := o.CheckRetry
	if check == nil {
		check = retryablehttp.DefaultRetryPolicy
	}
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if errors.Is(err, ErrRefused) || errors.Is(err, ErrNoCredentials) {
			return false, err // a configuration error: retrying cannot help
		}
		return check(ctx, resp, err)
	}
	// the last response goes to the caller, which reads its status, instead of "giving up"
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	max := o.MaxRedirects
	rc.HTTPClient = &http.Client{Timeout: o.Timeout, Transport: pin, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return refused("more than %d redirects", max)
		}
		if !allowedScheme(req.URL) {
			return refused("redirect to plain http on %s: https only, plain http only to a loopback host", req.URL.Hostname())
		}
		return nil
	}}
	std := rc.StandardClient()
	// the outer client follows no redirect: the inner one did, with the checks above
	std.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	std.Transport = scrubbing{auth: auth, base: std.Transport}
	return std, u, nil
}

// scrubbing removes the credential's values from every error that leaves the client.
type scrubbing struct {
	auth Auth
	base http.RoundTripper
}

func (s scrubbing) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	return resp, s.auth.Scrub(err)
}

// pinned sets the credential on a request to the configured origin only, refuses plain http
// beyond loopback, and re-reads the credential once when the origin answers 401.
type pinned struct {
	auth         Auth
	scheme, host string
	anonymous    bool
	peer         string
	base         http.RoundTripper
}

func (t *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	if !allowedScheme(req.URL) {
		return nil, refused("plain http to %s: https only, plain http only to a loopback host", req.URL.Hostname())
	}
	r := req.Clone(req.Context())
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", t.auth.name()} {
		r.Header.Del(h)
	}
	if req.URL.Scheme != t.scheme || req.URL.Host != t.host {
		return t.base.RoundTrip(r) // another origin never sees the credential
	}
	hdr, err := t.auth.Header()
	switch {
	case errors.Is(err, ErrNoCredentials) && t.anonymous:
		return t.base.RoundTrip(r) // no credential, or an empty token file: anonymous, as configured
	case err != nil:
		return nil, err
	}
	r.Header.Set(t.auth.name(), hdr)
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable(req) {
		return resp, t.auth.Scrub(err)
	}
	// Perhaps the credential was rotated since it was last read.
	log := logr.FromContextOrDiscard(req.Context())
	changed, rerr := t.auth.reload()
	if rerr != nil {
		log.Error(rerr, "Re-reading the token after a 401")
		return resp, nil
	}
	fresh, herr := t.auth.Header()
	if !changed || herr != nil {
		log.Info(t.peer+" refused the token and the token file holds no other", "path", req.URL.Path)
		return resp, nil
	}
	log.Info(t.peer+" refused the token, retrying with the re-read one", "path", req.URL.Path)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	again := r.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		again.Body = body
	}
	again.Header.Set(t.auth.name(), fresh)
	resp, err = t.base.RoundTrip(again)
	return resp, t.auth.Scrub(err)
}

// replayable reports whether req can be sent a second time.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}
