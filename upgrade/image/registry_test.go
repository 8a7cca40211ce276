package image

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/openuniverse/operator/source"
	outbound "github.com/openuniverse/operator/source/transport"
)

// pushTags pushes one small random image under every tag to repo on the registry at host.
func pushTags(t *testing.T, host, repo string, tags ...string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		ref, err := name.NewTag(host + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
}

func hostOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

func TestListTagsAnonymousWithPagination(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var pages atomic.Int32
	// The in-process registry honours n and last but sends no Link; add the header the
	// distribution spec defines, so remote.List's pagination is exercised.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			pages.Add(1)
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, r)
			body := rec.Body.String()
			if n := r.URL.Query().Get("n"); n != "" && strings.Count(body, `"`) > 4 {
				tags := body[strings.Index(body, `"tags":[`)+8 : strings.LastIndex(body, "]")]
				parts := strings.Split(tags, ",")
				last := strings.Trim(parts[len(parts)-1], `"`)
				if len(parts) == 2 { // a full page: there may be more
					w.Header().Set("Link", fmt.Sprintf(`<%s?n=%s&last=%s>; rel="next"`, r.URL.Path, n, last))
				}
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := hostOf(t, srv.URL)
	want := []string{"latest", "v1.0.0", "v1.1.0", "v1.2.0", "v1.2.0-amd64"}
	pushTags(t, host, "hanzo/cloud", want...)
	r := &Registry{PageSize: 2, AllowPrivate: true}
	got, err := r.ListTags(context.Background(), host+"/hanzo/cloud", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tags %v, want %v", got, want)
	}
	if pages.Load() < 3 {
		t.Fatalf("%d pages fetched; pagination not followed", pages.Load())
	}
}

// TestListTagsBearerWithDockerConfig: the registry answers 401 with a Bearer challenge; the
// token endpoint accepts the Basic credentials of the dockerconfigjson; the tags come back.
func TestListTagsBearerWithDockerConfig(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	const user, pass, bearer = "robot", "s3cret-pass", "tok-123"
	var tokenCalls atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass || r.URL.Query().Get("scope") != "repository:hanzo/cloud:pull" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			tokenCalls.Add(1)
			fmt.Fprintf(w, `{"token":%q}`, bearer)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+bearer && r.Method == http.MethodGet {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test",scope="repository:hanzo/cloud:pull"`, srv.URL))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := hostOf(t, srv.URL)
	// push straight to the registry handler, around the auth wall
	direct := httptest.NewServer(reg)
	defer direct.Close()
	pushTags(t, hostOf(t, direct.URL), "hanzo/cloud", "v1.0.0", "v1.1.0")

	cfg := fmt.Sprintf(`{"auths":{"http://%s/v2/":{"auth":%q}}}`, host, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	creds, err := DockerConfigCredentials([]byte(cfg), host+"/hanzo/cloud")
	if err != nil || creds == nil || creds.Username != user {
		t.Fatalf("credentials %+v %v", creds, err)
	}
	got, err := (&Registry{AllowPrivate: true}).ListTags(context.Background(), host+"/hanzo/cloud", creds, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || tokenCalls.Load() == 0 {
		t.Fatalf("tags %v, token calls %d", got, tokenCalls.Load())
	}
	// anonymous: 401 reported, not a crash, naming the repository and not the password
	_, err = (&Registry{AllowPrivate: true}).ListTags(context.Background(), host+"/hanzo/cloud", nil, false)
	var re *RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "registrySecret") {
		t.Fatalf("anonymous: %v", err)
	}
	wrong := &Credentials{Username: user, Password: source.NewToken("wrong-password-777")}
	_, err = (&Registry{AllowPrivate: true}).ListTags(context.Background(), host+"/hanzo/cloud", wrong, false)
	if err == nil || strings.Contains(err.Error(), "wrong-password-777") {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestListTagsRateLimitAndOutage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`))
	}))
	host := hostOf(t, srv.URL)
	_, err := (&Registry{AllowPrivate: true}).ListTags(context.Background(), host+"/a/b", nil, false)
	var re *RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests || re.RetryAfter != 2*time.Minute {
		t.Fatalf("429: %#v", err)
	}
	if d := Interval(nil, re.RetryAfter, 0); d != 5*time.Minute {
		t.Fatalf("interval %v", d) // 300 s default beats a 120 s Retry-After
	}
	if d := Interval(ptr(int32(60)), re.RetryAfter, 0); d != 2*time.Minute {
		t.Fatalf("interval %v, want the Retry-After", d)
	}
	srv.Close() // outage
	_, err = (&Registry{Timeout: 5 * time.Second, AllowPrivate: true}).ListTags(context.Background(), host+"/a/b", nil, false)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "a/b") {
		t.Fatalf("outage: %v", err)
	}
}

func TestListTagsPlainHTTPOnlyToLoopback(t *testing.T) {
	var plain atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Scheme == "http" {
			plain.Add(1)
		}
		return nil, errors.New("unreachable in this test")
	})
	// 10.x is RFC 1918: go-containerregistry would fall back to plain http for it; and
	// insecure: true (issue 23: plain HTTP to 169.254.169.254) no longer opens it either.
	for _, insecure := range []bool{false, true} {
		for _, repo := range []string{"10.1.2.3:5000/a/b", "169.254.169.254/latest/meta-data", "registry.kube-system.svc.cluster.local:5000/a"} {
			if _, err := (&Registry{Transport: base, Timeout: 5 * time.Second}).ListTags(context.Background(), repo, nil, insecure); err == nil {
				t.Fatal("listing succeeded")
			}
		}
	}
	if plain.Load() != 0 {
		t.Fatalf("%d plain-http requests to a non-loopback registry", plain.Load())
	}
	g := &guardTransport{base: base, pages: 1}
	req, _ := http.NewRequest(http.MethodGet, "http://10.1.2.3:5000/v2/", nil)
	if _, err := g.RoundTrip(req); !errors.Is(err, ErrPlainHTTP) {
		t.Fatalf("plain http to 10.1.2.3: %v", err)
	}
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:5000/v2/", nil)
	if _, err := (&guardTransport{base: base}).RoundTrip(req); errors.Is(err, ErrPlainHTTP) {
		t.Fatal("loopback refused")
	}
}

// TestListTagsRefusesPrivateAddresses is issue 23's attack: an ImageUpdate made the operator
// call 169.254.169.254 and in-cluster Services. The dialer refuses every address that is not
// public, on the address it connects to (a name that resolves to 127.0.0.1 is refused as the
// literal is), unless AllowPrivate.
func TestListTagsRefusesPrivateAddresses(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := hostOf(t, reg.URL)
	pushTags(t, host, "a/b", "v1")
	_, port, _ := strings.Cut(host, ":")
	for _, h := range []string{host, "localhost:" + port} {
		_, err := (&Registry{Timeout: 5 * time.Second}).ListTags(context.Background(), h+"/a/b", nil, false)
		var re *RegistryError
		if !errors.As(err, &re) || !errors.Is(err, ErrPrivateAddress) || !strings.Contains(err.Error(), "--image-allow-private-registries") {
			t.Fatalf("%s: %v", h, err)
		}
	}
	if tags, err := (&Registry{Timeout: 5 * time.Second, AllowPrivate: true}).ListTags(context.Background(), host+"/a/b", nil, false); err != nil || len(tags) != 1 {
		t.Fatalf("allowed: %v %v", tags, err)
	}
	for _, a := range []string{"127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fd00::1", "::ffff:169.254.169.254", "224.0.0.1"} {
		if outbound.PublicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s is public", a)
		}
	}
	for _, a := range []string{"140.82.112.34", "8.8.8.8", "2606:4700::1111"} {
		if !outbound.PublicAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s is not public", a)
		}
	}
}

func TestListTagsHostAllowList(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := hostOf(t, reg.URL)
	pushTags(t, host, "a/b", "v1")
	r := &Registry{Timeout: 5 * time.Second, AllowPrivate: true, Hosts: []string{"ghcr.io", "*.pkg.dev"}}
	if _, err := r.ListTags(context.Background(), host+"/a/b", nil, false); !errors.Is(err, ErrHostNotAllowed) {
		t.Fatalf("a host off the list: %v", err)
	}
	r.Hosts = append(r.Hosts, "127.0.0.1")
	if tags, err := r.ListTags(context.Background(), host+"/a/b", nil, false); err != nil || len(tags) != 1 {
		t.Fatalf("listed host: %v %v", tags, err)
	}
	for hp, want := range map[string]bool{"ghcr.io": true, "GHCR.io:443": true, "europe-docker.pkg.dev": true, "pkg.dev": false, "evil.example": false, "ghcr.io.evil.example": false} {
		if AllowedHost([]string{"ghcr.io", "*.pkg.dev"}, hp) != want {
			t.Errorf("%s: want %v", hp, want)
		}
	}
	if !AllowedHost(nil, "anything") || ValidHostGlobs([]string{"ghcr.io/x"}) == nil || ValidHostGlobs([]string{"[x"}) == nil || ValidHostGlobs([]string{"*.io"}) != nil {
		t.Error("globs")
	}
}

// TestListTagsBoundedAndQuiet is issue 23's attack: a registry serving an endless tag list
// drove the heap to 396 MiB in 8 s, and the body of an error answer landed in status and
// Events. Now a listing stops at MaxPages pages, MaxBytes bytes and MaxTags tags, and an
// error says its status code and a fixed reason only.
func TestListTagsBoundedAndQuiet(t *testing.T) {
	var pages atomic.Int32
	const secret = "INTERNAL-hostname-db.prod.svc leaked"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.HasPrefix(r.URL.Path, "/v2/endless/"):
			n := pages.Add(1)
			w.Header().Set("Link", fmt.Sprintf(`<%s?last=t%d>; rel="next"`, r.URL.Path, n))
			fmt.Fprintf(w, `{"name":"endless","tags":["t%d"]}`, n)
		case strings.HasPrefix(r.URL.Path, "/v2/huge/"):
			_, _ = io.WriteString(w, `{"name":"huge","tags":["`)
			chunk := []byte(strings.Repeat("a", 1<<16))
			for i := 0; i < 1<<12; i++ { // 256 MiB unless the reader stops
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case strings.HasPrefix(r.URL.Path, "/v2/many/"):
			tags := make([]string, 300)
			for i := range tags {
				tags[i] = fmt.Sprintf("%q", fmt.Sprint("v", i))
			}
			fmt.Fprintf(w, `{"name":"many","tags":[%s]}`, strings.Join(tags, ","))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"errors":[{"code":"UNKNOWN","message":%q}]}`, secret)
		}
	}))
	defer srv.Close()
	host := hostOf(t, srv.URL)
	r := &Registry{Timeout: 10 * time.Second, AllowPrivate: true, MaxPages: 20, MaxBytes: 1 << 20, MaxTags: 200}
	for _, repo := range []string{"endless", "huge", "many"} {
		_, err := r.ListTags(context.Background(), host+"/"+repo, nil, false)
		if !errors.Is(err, ErrTagListTooLarge) || !strings.Contains(err.Error(), "--image-max-tags") {
			t.Fatalf("%s: %v", repo, err)
		}
	}
	if pages.Load() > 20 {
		t.Fatalf("%d pages of an endless list fetched, limit 20", pages.Load())
	}
	_, err := r.ListTags(context.Background(), host+"/broken/x", nil, false)
	var re *RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError || strings.Contains(err.Error(), "INTERNAL") || !strings.Contains(err.Error(), "answered 500") {
		t.Fatalf("error answer: %v", err)
	}
}
func TestDockerConfigCredentials(t *testing.T) {
	cfg := `{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"},"ghcr.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("gh:tok")) + `"}}}`
	c, err := DockerConfigCredentials([]byte(cfg), "library/nginx")
	if err != nil || c == nil || c.Username != "u" || c.Password.Reveal() != "p" {
		t.Fatalf("docker hub: %+v %v", c, err)
	}
	c, err = DockerConfigCredentials([]byte(cfg), "ghcr.io/hanzoai/cloud")
	if err != nil || c == nil || c.Username != "gh" || c.Password.Reveal() != "tok" {
		t.Fatalf("ghcr: %+v %v", c, err)
	}
	if c, err := DockerConfigCredentials([]byte(cfg), "quay.io/x/y"); err != nil || c != nil {
		t.Fatalf("other host: %+v %v", c, err)
	}
	if _, err := DockerConfigCredentials([]byte(`{"auths":{"ghcr.io":{"auth":"!!"}}}`), "ghcr.io/x"); err == nil {
		t.Fatal("bad base64 accepted")
	}
	if _, err := DockerConfigCredentials([]byte(`secret-bytes`), "ghcr.io/x"); err == nil || strings.Contains(err.Error(), "secret-bytes") {
		t.Fatalf("invalid json: %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{"": 0, "30": 30 * time.Second, "x": 0, "-1": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ptr[T any](v T) *T { return &v }
