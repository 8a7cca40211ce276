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
	r := &Registry{PageSize: 2}
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
	got, err := (&Registry{}).ListTags(context.Background(), host+"/hanzo/cloud", creds, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || tokenCalls.Load() == 0 {
		t.Fatalf("tags %v, token calls %d", got, tokenCalls.Load())
	}
	// anonymous: 401 reported, not a crash, naming the repository and not the password
	_, err = (&Registry{}).ListTags(context.Background(), host+"/hanzo/cloud", nil, false)
	var re *RegistryError
	if !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "registrySecret") {
		t.Fatalf("anonymous: %v", err)
	}
	wrong := &Credentials{Username: user, Password: source.NewToken("wrong-password-777")}
	_, err = (&Registry{}).ListTags(context.Background(), host+"/hanzo/cloud", wrong, false)
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
	_, err := (&Registry{}).ListTags(context.Background(), host+"/a/b", nil, false)
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
	_, err = (&Registry{Timeout: 5 * time.Second}).ListTags(context.Background(), host+"/a/b", nil, false)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "a/b") {
		t.Fatalf("outage: %v", err)
	}
}

func TestListTagsPlainHTTPOnlyToLoopbackOrInsecure(t *testing.T) {
	var plain atomic.Int32
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Scheme == "http" {
			plain.Add(1)
		}
		return nil, errors.New("unreachable in this test")
	})
	// 10.x is RFC 1918: go-containerregistry would fall back to plain http for it.
	if _, err := (&Registry{Transport: base, Timeout: 5 * time.Second}).ListTags(context.Background(), "10.1.2.3:5000/a/b", nil, false); err == nil {
		t.Fatal("listing succeeded")
	}
	if plain.Load() != 0 {
		t.Fatalf("%d plain-http requests to a non-loopback registry", plain.Load())
	}
	g := &guardTransport{base: base}
	req, _ := http.NewRequest(http.MethodGet, "http://10.1.2.3:5000/v2/", nil)
	if _, err := g.RoundTrip(req); !errors.Is(err, ErrPlainHTTP) {
		t.Fatalf("plain http to 10.1.2.3: %v", err)
	}
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:5000/v2/", nil)
	if _, err := g.RoundTrip(req); errors.Is(err, ErrPlainHTTP) {
		t.Fatal("loopback refused")
	}
	g.insecure = true
	req, _ = http.NewRequest(http.MethodGet, "http://10.1.2.3:5000/v2/", nil)
	if _, err := g.RoundTrip(req); errors.Is(err, ErrPlainHTTP) {
		t.Fatal("insecure: true refused")
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
