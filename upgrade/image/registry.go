package image

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/openuniverse/operator/source"
	outbound "github.com/openuniverse/operator/source/transport"
)

// Registry lists tags through go-containerregistry (remote.List: the bearer-token challenge
// and Link pagination are its), and decides where an ImageUpdate may send requests:
//
//   - only to hosts matching Hosts (globs; none: any host), token realms included;
//   - never to a loopback, private, link-local, CGNAT or unspecified address unless
//     AllowPrivate — checked on the address actually dialed, so a DNS answer cannot rebind
//     around it (169.254.169.254 and in-cluster Services are private);
//   - plain HTTP only to a loopback registry (go-containerregistry itself would use it for
//     RFC 1918 and .local hosts; insecure: true no longer widens it);
//   - a tag list of at most MaxTags tags, MaxBytes bytes of answers and MaxPages pages.
//
// A registry's answer text never leaves it: a RegistryError says the status code and a
// fixed reason.
type Registry struct {
	// Transport is the base transport. Nil: an http.Transport without a proxy whose dialer
	// refuses private addresses unless AllowPrivate. A caller-supplied one dials as it likes
	// (tests, fuzzing); the host, scheme and size rules still apply.
	Transport http.RoundTripper
	// Timeout bounds one listing; 30 s when zero.
	Timeout time.Duration
	// PageSize asks for this many tags per page (the n parameter); 0 lets the registry choose.
	PageSize int
	// Hosts are the registry hosts (host or host:port, path.Match globs, case-insensitive)
	// requests may go to; empty allows any.
	Hosts []string
	// AllowPrivate lets requests reach loopback, private and link-local addresses.
	AllowPrivate bool
	// MaxTags, MaxBytes and MaxPages bound one listing; zero means DefaultMaxTags,
	// DefaultMaxBytes, DefaultMaxPages.
	MaxTags, MaxBytes, MaxPages int

	once sync.Once
	dial http.RoundTripper
}

// The default bounds of a tag listing: a repository with more tags than this is not one an
// ImageUpdate can order sensibly, and 8 MiB of answers hold ~300 000 short tags.
const (
	DefaultMaxTags  = 50_000
	DefaultMaxBytes = 8 << 20
	DefaultMaxPages = 100
)

// Credentials for one registry host: Basic (username and password), or none.
type Credentials struct {
	Username string
	Password source.Token
}

// RegistryError is a listing failure with what status needs: the HTTP status when there was
// one and, for 429, how long the registry asked us to wait. Its text is the status code and
// a fixed reason, or one of the refusals of this package (ErrPlainHTTP, ErrHostNotAllowed,
// ErrPrivateAddress, ErrTagListTooLarge); the registry's own words (an error body, a
// transport's message) stay in Err, which is never printed.
type RegistryError struct {
	Repository string
	StatusCode int
	RetryAfter time.Duration
	Err        error
}

func (e *RegistryError) Error() string {
	switch e.StatusCode {
	case 0:
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("list tags of %s: the registry refused the credentials (%d): check registrySecret", e.Repository, e.StatusCode)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("list tags of %s: rate limited (429), retry after %s", e.Repository, e.RetryAfter)
	case http.StatusNotFound:
		return fmt.Sprintf("list tags of %s: the registry answered 404: no such repository", e.Repository)
	default:
		return fmt.Sprintf("list tags of %s: the registry answered %d", e.Repository, e.StatusCode)
	}
	for _, own := range refusals {
		if errors.Is(e.Err, own) {
			return fmt.Sprintf("list tags of %s: %v", e.Repository, own)
		}
	}
	if errors.Is(e.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("list tags of %s: timed out", e.Repository)
	}
	return fmt.Sprintf("list tags of %s: the registry could not be reached or answered something that is not a tag list", e.Repository)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// The refusals of a listing; each is the whole text of its RegistryError.
var (
	// ErrPlainHTTP: a plain-HTTP request to a host that is not loopback.
	ErrPlainHTTP = errors.New("plain http is only used for loopback registries")
	// ErrHostNotAllowed: the host is not in --image-registry-hosts.
	ErrHostNotAllowed = errors.New("the registry host is not in --image-registry-hosts")
	// ErrPrivateAddress: the host resolved to a loopback, private or link-local address.
	ErrPrivateAddress = errors.New("the registry host is a loopback, private or link-local address (--image-allow-private-registries allows it)")
	// ErrTagListTooLarge: the tag list is over MaxTags, MaxBytes or MaxPages.
	ErrTagListTooLarge = errors.New("the tag list is over the limits (--image-max-tags, --image-max-tag-bytes, --image-max-tag-pages)")
	// errInvalidName: the repository does not parse.
	errInvalidName = errors.New("not a valid repository name")

	refusals = []error{ErrPlainHTTP, ErrHostNotAllowed, ErrPrivateAddress, ErrTagListTooLarge, errInvalidName}
)

func (r *Registry) limits() (tags, bytes, pages int) {
	tags, bytes, pages = r.MaxTags, r.MaxBytes, r.MaxPages
	if tags <= 0 {
		tags = DefaultMaxTags
	}
	if bytes <= 0 {
		bytes = DefaultMaxBytes
	}
	if pages <= 0 {
		pages = DefaultMaxPages
	}
	return tags, bytes, pages
}

func (r *Registry) transport() http.RoundTripper {
	if r.Transport != nil {
		return r.Transport
	}
	r.once.Do(func() {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl(r.AllowPrivate)}
		r.dial = &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 10, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second, ResponseHeaderTimeout: 30 * time.Second}
	})
	return r.dial
}

// ListTags returns every tag of repository (host/path; a host-less name means Docker Hub).
// insecure lets go-containerregistry speak plain HTTP to a loopback registry; no other.
func (r *Registry) ListTags(ctx context.Context, repository string, creds *Credentials, insecure bool) ([]string, error) {
	opts := []name.Option{name.WeakValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(repository, opts...)
	if err != nil {
		return nil, &RegistryError{Repository: repository, Err: errInvalidName}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	maxTags, maxBytes, maxPages := r.limits()
	guard := &guardTransport{base: r.transport(), hosts: r.Hosts, budget: int64(maxBytes), pages: maxPages}
	auth := authn.Anonymous
	if creds != nil && creds.Username != "" {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password.Reveal()}
	}
	tags, err := remote.List(repo, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(guard),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
		remote.WithRetryStatusCodes(http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout),
		remote.WithUserAgent("universe-operator-imageupdate"), remote.WithPageSize(r.PageSize))
	if refused := guard.refused(); refused != nil {
		return nil, &RegistryError{Repository: repository, Err: refused}
	}
	if err != nil {
		re := &RegistryError{Repository: repository, Err: scrub(err, creds)}
		var te *transport.Error
		if errors.As(err, &te) {
			re.StatusCode = te.StatusCode
		}
		if code, after := guard.last(); re.StatusCode == 0 || re.StatusCode == code {
			if code >= 400 {
				re.StatusCode = code
			}
			re.RetryAfter = after
		}
		return nil, re
	}
	if len(tags) > maxTags {
		return nil, &RegistryError{Repository: repository, Err: fmt.Errorf("%d tags, over %d: %w", len(tags), maxTags, ErrTagListTooLarge)}
	}
	return tags, nil
}

func scrub(err error, c *Credentials) error {
	if c == nil {
		return err
	}
	return c.Password.Scrub(err)
}

// guardTransport applies the host, scheme and size rules to every request of one listing
// (token realms included), and remembers the status and Retry-After of the last error answer
// and the first refusal.
type guardTransport struct {
	base  http.RoundTripper
	hosts []string
	pages int

	mu         sync.Mutex
	budget     int64 // bytes of answer bodies left
	code       int
	retryAfter time.Duration
	refusal    error
}

func (g *guardTransport) refuse(err error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refusal == nil {
		g.refusal = err
	}
	return err
}

func (g *guardTransport) refused() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refusal
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Hostname()
	if !AllowedHost(g.hosts, req.URL.Host) {
		return nil, g.refuse(fmt.Errorf("%s: %w", req.URL.Host, ErrHostNotAllowed))
	}
	if plainOK := req.URL.Scheme == "http" && loopback(host); req.URL.Scheme != "https" && !plainOK {
		return nil, g.refuse(fmt.Errorf("%s: %w", req.URL.Host, ErrPlainHTTP))
	}
	if strings.HasSuffix(req.URL.Path, "/tags/list") {
		g.mu.Lock()
		g.pages--
		over := g.pages < 0
		g.mu.Unlock()
		if over {
			return nil, g.refuse(fmt.Errorf("more pages: %w", ErrTagListTooLarge))
		}
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		var pe *privateError
		if errors.As(err, &pe) {
			return nil, g.refuse(fmt.Errorf("%s: %w", req.URL.Host, ErrPrivateAddress))
		}
		return nil, err
	}
	if resp.StatusCode >= 400 {
		g.mu.Lock()
		g.code, g.retryAfter = resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		g.mu.Unlock()
	}
	resp.Body = &budgetBody{ReadCloser: resp.Body, g: g}
	return resp, nil
}

// budgetBody reads an answer body while the listing's byte budget lasts.
type budgetBody struct {
	io.ReadCloser
	g *guardTransport
}

func (b *budgetBody) Read(p []byte) (int, error) {
	b.g.mu.Lock()
	left := b.g.budget
	b.g.mu.Unlock()
	if left <= 0 {
		return 0, b.g.refuse(fmt.Errorf("answers over the byte limit: %w", ErrTagListTooLarge))
	}
	if int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.g.mu.Lock()
	b.g.budget -= int64(n)
	over := b.g.budget < 0
	b.g.mu.Unlock()
	if over {
		return 0, b.g.refuse(fmt.Errorf("answers over the byte limit: %w", ErrTagListTooLarge))
	}
	return n, err
}

func (g *guardTransport) last() (int, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.code, g.retryAfter
}

// AllowedHost reports whether hostport (host or host:port of a request) matches one of the
// globs (path.Match, case-insensitive; a glob without a port matches any port). No globs
// allow every host.
func AllowedHost(globs []string, hostport string) bool {
	if len(globs) == 0 {
		return true
	}
	hostport = strings.ToLower(hostport)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	for _, g := range globs {
		g = strings.ToLower(strings.TrimSpace(g))
		if ok, _ := path.Match(g, hostport); ok {
			return true
		}
		if ok, _ := path.Match(g, host); ok && !strings.Contains(g, ":") {
			return true
		}
	}
	return false
}

// ValidHostGlobs reports a glob path.Match cannot use.
func ValidHostGlobs(globs []string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil || strings.TrimSpace(g) == "" || strings.Contains(g, "/") {
			return fmt.Errorf("registry host glob %q is not a host glob", g)
		}
	}
	return nil
}

type privateError struct{ addr string }

func (e *privateError) Error() string { return e.addr + ": " + ErrPrivateAddress.Error() }

// dialControl refuses, at connect time, an address that is not public unless allowPrivate.
// It sees the address the resolver answered, so a name rebinding to 169.254.169.254 or a
// cluster IP between a check and the dial is refused too.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return &privateError{address}
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !outbound.PublicAddr(ip) {
			return &privateError{address}
		}
		return nil
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// DockerConfigCredentials finds the credentials for the registry of repository in a
// kubernetes.io/dockerconfigjson Secret's .dockerconfigjson: auths[host] with "auth"
// (base64 user:password) or username and password. Keys may carry a scheme and a path
// (https://index.docker.io/v1/). No entry for the host means anonymous (nil).
func DockerConfigCredentials(config []byte, repository string) (*Credentials, error) {
	var cfg struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, errors.New(".dockerconfigjson is not valid JSON") // never echo secret bytes
	}
	repo, err := name.NewRepository(repository, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("repository name: %w", err)
	}
	host := repo.RegistryStr()
	for key, a := range cfg.Auths {
		if !sameRegistry(key, host) {
			continue
		}
		user, pass := a.Username, a.Password
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf(".dockerconfigjson auths[%s].auth is not base64", key)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf(".dockerconfigjson auths[%s].auth is not user:password", key)
			}
			user, pass = u, p
		}
		if user == "" {
			return nil, fmt.Errorf(".dockerconfigjson auths[%s] has no username", key)
		}
		return &Credentials{Username: user, Password: source.NewToken(pass)}, nil
	}
	return nil, nil
}

func sameRegistry(key, host string) bool {
	k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	k, _, _ = strings.Cut(k, "/")
	k = strings.ToLower(k)
	dockerHub := func(h string) bool {
		return h == name.DefaultRegistry || h == "docker.io" || h == "registry-1.docker.io"
	}
	return k == strings.ToLower(host) || (dockerHub(k) && dockerHub(host))
}
