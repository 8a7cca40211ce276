package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openuniverse/operator/source"
)

// creds is a token that can be rotated, as a token file is.
type creds struct {
	mu   sync.Mutex
	v    string
	next string // what Reload reads, when set
}

func fixed(s string) *creds { return &creds{v: s} }

func (c *creds) Token() source.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return source.NewToken(c.v)
}

func (c *creds) Reload() (source.Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next != "" {
		c.v = c.next
	}
	return source.NewToken(c.v), nil
}

func TestAuthorizationHeader(t *testing.T) {
	cases := []struct {
		name string
		auth Auth
		want string // empty means refused
	}{
		{"bearer", Auth{Bearer: fixed("t0k")}, "Bearer t0k"},
		{"another scheme (Gitea)", Auth{Bearer: fixed("t0k"), Scheme: "token"}, "token t0k"},
		{"a header of its own (GitLab)", Auth{Bearer: fixed("t0k"), HeaderName: "PRIVATE-TOKEN"}, "t0k"},
		{"basic", Auth{BasicUser: fixed("id"), BasicPassword: fixed("s3cr3t")}, "Basic aWQ6czNjcjN0"},
		{"both schemes refused", Auth{Bearer: fixed("t0k"), BasicUser: fixed("id"), BasicPassword: fixed("s3cr3t")}, ""},
		{"none refused", Auth{}, ""},
		{"basic without secret refused", Auth{BasicUser: fixed("id")}, ""},
		{"empty token refused", Auth{Bearer: fixed("")}, ""},
		{"nil token file refused", Auth{Bearer: (*source.TokenFile)(nil)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.auth.Header()
			if c.want == "" {
				if err == nil {
					t.Fatalf("Header accepted %s", c.name)
				}
				if strings.Contains(err.Error(), "t0k") || strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error reveals a credential: %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("Header = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// seen records the Authorization headers a server received.
type seen struct {
	mu  sync.Mutex
	got []string
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	creds := append(r.Header.Values("Authorization"), r.Header.Values("Private-Token")...)
	s.got = append(s.got, r.Method+" "+r.URL.Path+" "+strings.Join(creds, ","))
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// TestCredentialsNeverLeaveTheConfiguredOrigin: the configured host redirects (302 for a
// GET, 307 for a POST, which resends the body) to a second server on another host and to
// one on the same host but another port; neither sees an Authorization header, for a
// Bearer token or a Basic client secret, and the configured host sees it every time.
func TestCredentialsNeverLeaveTheConfiguredOrigin(t *testing.T) {
	var other, sameHostOtherPort, home seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(elsewhere.Close)
	port := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sameHostOtherPort.add(r)
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(port.Close)
	// 127.0.0.1 and localhost are different hosts to the client
	otherHost := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, otherHost+"/stolen", http.StatusFound)
		case "/away-post":
			http.Redirect(w, r, otherHost+"/stolen-post", http.StatusTemporaryRedirect)
		case "/port":
			http.Redirect(w, r, port.URL+"/stolen-port", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/landed", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "{}")
		}
	}))
	t.Cleanup(srv.Close)
	for _, a := range []struct {
		name, want string
		auth       Auth
	}{
		{"bearer", "Bearer pl4tform-t0ken", Auth{Bearer: fixed("pl4tform-t0ken")}},
		{"basic", "Basic aWFtLWNsaWVudDppYW0tczNjcjN0", Auth{BasicUser: fixed("iam-client"), BasicPassword: fixed("iam-s3cr3t")}},
		{"gitea scheme", "token g1tea-t0ken", Auth{Bearer: fixed("g1tea-t0ken"), Scheme: "token"}},
		{"gitlab header", "gl4b-t0ken", Auth{Bearer: fixed("gl4b-t0ken"), HeaderName: "PRIVATE-TOKEN"}},
	} {
		t.Run(a.name, func(t *testing.T) {
			c, _, err := New(srv.URL, a.auth, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct{ method, path string }{{"GET", "/away"}, {"POST", "/away-post"}, {"GET", "/port"}, {"GET", "/here"}} {
				req, _ := http.NewRequest(r.method, srv.URL+r.path, strings.NewReader(`{"org":"a"}`))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", r.method, r.path, err)
				}
				_ = resp.Body.Close()
			}
			for _, s := range append(other.all(), sameHostOtherPort.all()...) {
				if !strings.HasSuffix(s, " ") {
					t.Errorf("another origin received a credential: %s", s)
				}
			}
			for _, s := range home.all() {
				if !strings.HasSuffix(s, " "+a.want) {
					t.Errorf("the configured host got %q, want exactly one %q", s, a.want)
				}
			}
			if n := len(other.all()); n != 2 {
				t.Errorf("the other host got %d requests, want the 2 redirected ones (followed, without credentials)", n)
			}
		})
		other.got, sameHostOtherPort.got, home.got = nil, nil, nil
	}
}

// TestPlainHTTPOnlyToLoopback: http:// to any other host is refused when the client is
// built, and a redirect from https to plain http is refused before anything is sent.
func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	tok := Auth{Bearer: fixed("t0k")}
	for _, bad := range []string{"http://platform.example.com", "http://10.0.0.5:8080/api", "http://169.254.169.254/",
		"https://user:pw@host", "ftp://x", "host-only", ""} {
		if _, _, err := New(bad, tok, Options{}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): error echoes the URL's password: %v", bad, err)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost/x", "http://[::1]:1", "https://api.example.com"} {
		if _, _, err := New(ok, tok, Options{}); err != nil {
			t.Errorf("New(%q): %v", ok, err)
		}
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://downgrade.invalid/x", http.StatusFound)
	}))
	t.Cleanup(tlsSrv.Close)
	c, _, err := New(tlsSrv.URL, tok, Options{Base: tlsSrv.Client().Transport, RetryMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, tlsSrv.URL+"/a", nil)
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("a redirect to plain http was followed")
	}
	if !errors.Is(err, ErrRefused) || strings.Contains(err.Error(), "t0k") {
		t.Errorf("err = %v, want ErrRefused without the token", err)
	}
}

// TestReloadOn401: a rotated token is re-read and the request sent again once; an
// unchanged one is not retried.
func TestReloadOn401(t *testing.T) {
	var home seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.add(r)
		if r.Header.Get("Authorization") != "Bearer new" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	cr := &creds{v: "old", next: "new"}
	c, _, err := New(srv.URL, Auth{Bearer: cr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Post(srv.URL+"/x", "application/json", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "body" || len(home.all()) != 2 {
		t.Errorf("rotated: %d %q after %v", resp.StatusCode, b, home.all())
	}
	home.got = nil
	c2, _, _ := New(srv.URL, Auth{Bearer: fixed("revoked")}, Options{RetryMax: 2})
	resp, err = c2.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 401 || len(home.all()) != 1 {
		t.Errorf("unchanged token: %d after %d requests, want one 401", resp.StatusCode, len(home.all()))
	}
}

// TestNoCredentialsNothingSent: without a credential nothing leaves, unless the client is
// built anonymous (then no Authorization header at all).
func TestNoCredentialsNothingSent(t *testing.T) {
	var home seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { home.add(r) }))
	t.Cleanup(srv.Close)
	c, _, _ := New(srv.URL, Auth{Bearer: fixed("")}, Options{RetryMax: 3})
	if _, err := c.Get(srv.URL); !errors.Is(err, ErrNoCredentials) || len(home.all()) != 0 {
		t.Errorf("no token: %v after %v", err, home.all())
	}
	anon, _, _ := New(srv.URL, Auth{}, Options{Anonymous: true})
	resp, err := anon.Get(srv.URL + "/pub")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := home.all(); len(got) != 1 || got[0] != "GET /pub " {
		t.Errorf("anonymous: %v", got)
	}
}

// TestTimeoutPerAttempt: a peer that never answers costs one Timeout per attempt, and the
// error names no credential.
func TestTimeoutPerAttempt(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	t.Cleanup(func() { close(stop); srv.Close() })
	c, _, _ := New(srv.URL, Auth{Bearer: fixed("sl0w-t0ken")}, Options{Timeout: 150 * time.Millisecond})
	start := time.Now()
	_, err := c.Get(srv.URL)
	if err == nil || time.Since(start) > 5*time.Second || strings.Contains(fmt.Sprint(err), "sl0w-t0ken") {
		t.Errorf("hanging peer: %v after %s", err, time.Since(start))
	}
}
