package image

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/openuniverse/operator/source"
)

// Registry lists tags through go-containerregistry (remote.List: the bearer-token challenge
// and Link pagination are its). Plain HTTP goes only to a loopback registry unless the
// ImageUpdate says insecure: true — go-containerregistry itself would also use it for
// RFC 1918 and .local hosts, which a guard on the transport refuses.
type Registry struct {
	// Transport is the base transport; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Timeout bounds one listing; 30 s when zero.
	Timeout time.Duration
	// PageSize asks for this many tags per page (the n parameter); 0 lets the registry choose.
	PageSize int
}

// Credentials for one registry host: Basic (username and password), or none.
type Credentials struct {
	Username string
	Password source.Token
}

// RegistryError is a listing failure with what status needs: the HTTP status when there was
// one and, for 429, how long the registry asked us to wait.
type RegistryError struct {
	Repository string
	StatusCode int
	RetryAfter time.Duration
	Err        error
}

func (e *RegistryError) Error() string {
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("list tags of %s: the registry refused the credentials (%d): check registrySecret", e.Repository, e.StatusCode)
	case http.StatusTooManyRequests:
		return fmt.Sprintf("list tags of %s: rate limited (429), retry after %s", e.Repository, e.RetryAfter)
	}
	return fmt.Sprintf("list tags of %s: %v", e.Repository, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }

// ErrPlainHTTP: a plain-HTTP request to a host that is neither loopback nor allowed insecure.
var ErrPlainHTTP = errors.New("plain http is only used for loopback registries or with insecure: true")

// ListTags returns every tag of repository (host/path; a host-less name means Docker Hub).
func (r *Registry) ListTags(ctx context.Context, repository string, creds *Credentials, insecure bool) ([]string, error) {
	opts := []name.Option{name.WeakValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(repository, opts...)
	if err != nil {
		return nil, &RegistryError{Repository: repository, Err: fmt.Errorf("repository name: %w", err)}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := r.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	guard := &guardTransport{base: base, insecure: insecure}
	auth := authn.Anonymous
	if creds != nil && creds.Username != "" {
		auth = &authn.Basic{Username: creds.Username, Password: creds.Password.Reveal()}
	}
	tags, err := remote.List(repo, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(guard),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
		remote.WithRetryStatusCodes(http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout),
		remote.WithUserAgent("universe-operator-imageupdate"), remote.WithPageSize(r.PageSize))
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
	return tags, nil
}

func scrub(err error, c *Credentials) error {
	if c == nil {
		return err
	}
	return c.Password.Scrub(err)
}

// guardTransport refuses plain HTTP to non-loopback hosts unless insecure, and remembers
// the status and Retry-After of the last error answer.
type guardTransport struct {
	base     http.RoundTripper
	insecure bool

	mu         sync.Mutex
	code       int
	retryAfter time.Duration
}

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure && !loopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("%s: %w", req.URL.Host, ErrPlainHTTP)
	}
	resp, err := g.base.RoundTrip(req)
	if err == nil && resp.StatusCode >= 400 {
		g.mu.Lock()
		g.code, g.retryAfter = resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		g.mu.Unlock()
	}
	return resp, err
}

func (g *guardTransport) last() (int, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.code, g.retryAfter
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
