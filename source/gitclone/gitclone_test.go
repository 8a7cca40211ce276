package gitclone

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/gitkit"
	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/openuniverse/operator/source"
)

const (
	user     = "bot"
	password = "pw-7c1d9e2b4a"
)

var fixture = map[string]string{
	"crs/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
	"crs/nested/b.yml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\n",
	"crs/notes.txt":          "not a manifest\n",
	"other/c.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n",
	"crs/kustomization.yaml": "resources: [a.yaml]\n",
}

// counter counts the requests the git HTTP server receives.
type counter struct {
	mu sync.Mutex
	n  []string
}

func (c *counter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n = append(c.n, r.Method+" "+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

// httpServer starts a git server with basic auth holding fixture in
// repo.git on branch main.
func httpServer(t testing.TB) (*gittestserver.GitServer, *counter, string) {
	t.Helper()
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	srv.Auth(user, password)
	c := &counter{}
	srv.AddHTTPMiddlewares(c.middleware)
	if err := srv.StartHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.StopHTTP)
	initRepo(t, srv)
	return srv, c, srv.HTTPAddress() + "/repo.git"
}

func initRepo(t testing.TB, srv *gittestserver.GitServer) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range fixture {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.InitRepo(dir, "main", "repo.git"); err != nil {
		t.Fatal(err)
	}
}

// push commits files (path → content) on main of the server's repo.git.
func push(t testing.TB, srv *gittestserver.GitServer, files map[string]string) string {
	t.Helper()
	auth := &githttp.BasicAuth{Username: user, Password: password}
	repo, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: srv.HTTPAddress() + "/repo.git", Auth: auth, ReferenceName: "refs/heads/main"})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if err := wt.Filesystem.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := wt.Filesystem.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write([]byte(c))
		_ = f.Close()
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	h, err := wt.Commit("change", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func tokenFile(t testing.TB, v string) (*source.TokenFile, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tf, p
}

func paths(s *source.Snapshot) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestHTTPWithoutCredentialsFails(t *testing.T) {
	_, _, url := httpServer(t)
	s, err := New(nil, Options{URL: url, Branch: "main", Path: "crs", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Head(context.Background())
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Errorf("Head() without credentials = %v, want ErrAuthenticationRequired", err)
	}
}

func TestHTTPCloneFetchAndNoWorkWhenUnchanged(t *testing.T) {
	srv, reqs, url := httpServer(t)
	tf, _ := tokenFile(t, password)
	cache := t.TempDir()
	s, err := New(tf, Options{URL: url, Branch: "main", Path: "crs", CacheDir: cache, Username: user})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	reqs.take()

	rev1, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GET refs"}, reqs.take()); diff != "" {
		t.Errorf("Head is one ls-remote (-want +got):\n%s", diff)
	}
	snap, err := s.Snapshot(ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"crs/a.yaml", "crs/kustomization.yaml", "crs/nested/b.yml"}, paths(snap)); diff != "" {
		t.Errorf("Snapshot files (-want +got):\n%s", diff)
	}
	if snap.Refetched != 3 {
		t.Errorf("cold Refetched = %d, want 3", snap.Refetched)
	}
	if n := len(reqs.take()); n == 0 {
		t.Errorf("clone made no request")
	}
	if _, err := os.Stat(filepath.Join(cache)); err != nil {
		t.Errorf("cache dir: %v", err)
	}

	// Unchanged head: Head is one ls-remote, and Snapshot of the same
	// revision makes no request at all.
	rev, err := s.Head(ctx)
	if err != nil || rev != rev1 {
		t.Fatalf("Head() = %s, %v; want %s", rev, err, rev1)
	}
	again, err := s.Snapshot(ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GET refs"}, reqs.take()); diff != "" {
		t.Errorf("unchanged head requests (-want +got):\n%s", diff)
	}
	if again.Refetched != 0 || len(again.Files) != 3 {
		t.Errorf("repeat Snapshot = %d files, %d refetched; want 3, 0", len(again.Files), again.Refetched)
	}

	// A new commit is picked up by an incremental fetch into the same clone.
	// A marker in the clone tells a fetch into it from a fresh re-clone.
	marker := filepath.Join(s.dir, "kept-by-fetch")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rev2 := push(t, srv, map[string]string{"crs/d.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: d}\n"})
	reqs.take()
	if rev, err = s.Head(ctx); err != nil || rev != rev2 {
		t.Fatalf("Head() after push = %s, %v; want %s", rev, err, rev2)
	}
	snap2, err := s.Snapshot(ctx, rev2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"crs/a.yaml", "crs/d.yaml", "crs/kustomization.yaml", "crs/nested/b.yml"}, paths(snap2)); diff != "" {
		t.Errorf("Snapshot after push (-want +got):\n%s", diff)
	}
	if snap2.Refetched != 1 {
		t.Errorf("Refetched after adding one file = %d, want 1", snap2.Refetched)
	}
	got := reqs.take()
	// One ls-remote for Head, then the fetch's negotiation and pack.
	if diff := cmp.Diff([]string{"GET refs", "GET refs", "POST git-upload-pack"}, got); diff != "" {
		t.Errorf("fetch requests (-want +got):\n%s", diff)
	}
	// The clone was fetched into, not redone.
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the clone was replaced instead of fetched into: %v", err)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		t.Errorf("cache holds %d clones, want 1", len(entries))
	}
}

func TestHTTPTokenRotation(t *testing.T) {
	srv, _, url := httpServer(t)
	tf, p := tokenFile(t, password)
	s, err := New(tf, Options{URL: url, Branch: "main", CacheDir: t.TempDir(), Username: user})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged strings.Builder
	ctx := logr.NewContext(context.Background(), funcr.New(func(p, a string) {
		mu.Lock()
		defer mu.Unlock()
		logged.WriteString(p + " " + a + "\n")
	}, funcr.Options{Verbosity: 10}))
	if _, err := s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	// The password is rotated on the server and in the file; the refused
	// ls-remote re-reads the file.
	const rotated = "pw-rotated-55aa"
	srv.Auth(user, rotated)
	if err := os.WriteFile(p, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx); err != nil {
		t.Fatalf("Head after rotation: %v", err)
	}
	// Revoked with nothing new in the file: the error never carries it.
	srv.Auth(user, "something-else")
	_, err = s.Head(ctx)
	if err == nil {
		t.Fatal("Head with a revoked password succeeded")
	}
	if msg := fmt.Sprintf("%v %+v %#v", err, err, err); strings.Contains(msg, rotated) || strings.Contains(msg, password) {
		t.Errorf("error reveals the password: %s", msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if out := logged.String(); strings.Contains(out, rotated) || strings.Contains(out, password) {
		t.Errorf("log reveals the password:\n%s", out)
	}
	if !strings.Contains(logged.String(), "retrying with the re-read one") {
		t.Errorf("rotation not logged:\n%s", logged.String())
	}
}

func TestNewRejects(t *testing.T) {
	cases := map[string]Options{
		"no url":             {Branch: "main"},
		"password in url":    {URL: "https://u:" + password + "@example.com/r.git", Branch: "main"},
		"no branch":          {URL: "https://example.com/r.git"},
		"ssh without keys":   {URL: "ssh://git@example.com/r.git", Branch: "main"},
		"ssh without hosts":  {URL: "git@example.com:r.git", Branch: "main", SSHKeyFile: "/k"},
		"unknown scheme":     {URL: "ftp://example.com/r.git", Branch: "main"},
		"token as user name": {URL: "https://" + password + "@example.com/r.git", Branch: "main"},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(nil, o)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error reveals the password: %v", err)
			}
		})
	}
}

// sshServer starts a git server over SSH that accepts only the returned
// client key, and returns the URL, the key file and a known_hosts file.
func sshServer(t *testing.T) (url, keyFile, knownHosts string) {
	t.Helper()
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	keyDir := t.TempDir()
	srv.KeyDir(keyDir).Auth(user, password)

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	srv.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if content != authorized {
			return nil, errors.New("unknown key")
		}
		return &gitkit.PublicKey{Id: "bot"}, nil
	})
	t.Cleanup(func() {
		srv.PublicKeyLookupFunc(func(string) (*gitkit.PublicKey, error) { return &gitkit.PublicKey{Id: "test-user"}, nil })
	})
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}

	if err := srv.ListenSSH(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.StartSSH() }()
	t.Cleanup(func() { _ = srv.StopSSH() })
	initRepo(t, srv)

	hostPub, err := os.ReadFile(filepath.Join(keyDir, "gitkit.rsa.pub"))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.SSHAddress(), "ssh://git@")
	host, port, _ := strings.Cut(addr, ":")
	knownHosts = filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[%s]:%s %s", host, port, hostPub)
	if err := os.WriteFile(knownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.SSHAddress() + "/repo.git", keyFile, knownHosts
}

func TestSSH(t *testing.T) {
	url, key, hosts := sshServer(t)
	ctx := context.Background()
	s, err := New(nil, Options{URL: url, Branch: "main", Path: "crs", CacheDir: t.TempDir(), SSHKeyFile: key, KnownHostsFile: hosts})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"crs/a.yaml", "crs/kustomization.yaml", "crs/nested/b.yml"}, paths(snap)); diff != "" {
		t.Errorf("Snapshot over ssh (-want +got):\n%s", diff)
	}

	t.Run("unknown host key", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "known_hosts")
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		k, _ := ssh.NewPublicKey(pub)
		host := strings.TrimPrefix(strings.TrimSuffix(url, "/repo.git"), "ssh://git@")
		h, p, _ := strings.Cut(host, ":")
		_ = os.WriteFile(other, []byte(fmt.Sprintf("[%s]:%s %s", h, p, ssh.MarshalAuthorizedKey(k))), 0o600)
		s, err := New(nil, Options{URL: url, Branch: "main", CacheDir: t.TempDir(), SSHKeyFile: key, KnownHostsFile: other})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Head(ctx); err == nil {
			t.Error("Head succeeded against a host key not in known_hosts")
		}
	})

	t.Run("unknown client key", func(t *testing.T) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		block, _ := ssh.MarshalPrivateKey(priv, "")
		other := filepath.Join(t.TempDir(), "id")
		_ = os.WriteFile(other, pem.EncodeToMemory(block), 0o600)
		s, err := New(nil, Options{URL: url, Branch: "main", CacheDir: t.TempDir(), SSHKeyFile: other, KnownHostsFile: hosts})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Head(ctx); err == nil {
			t.Error("Head succeeded with a key the server does not accept")
		}
	})
}

// TestSymlinksAndLargeFilesReported: a symbolic link in the repository is
// listed as refused (never followed, never silently dropped), and a file over
// the size limit is refused by name without being read.
func TestSymlinksAndLargeFilesReported(t *testing.T) {
	srv, _, url := httpServer(t)
	auth := &githttp.BasicAuth{Username: user, Password: password}
	repo, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: url, Auth: auth, ReferenceName: "refs/heads/main"})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Filesystem.Symlink("a.yaml", "crs/link.yaml"); err != nil {
		t.Fatal(err)
	}
	f, err := wt.Filesystem.Create("crs/big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: x}\ndata: {k: " + strings.Repeat("x", 4000) + "}\n"))
	_ = f.Close()
	for _, p := range []string{"crs/link.yaml", "crs/big.yaml"} {
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("link", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: auth}); err != nil {
		t.Fatal(err)
	}
	_ = srv
	tf, _ := tokenFile(t, password)
	s, err := New(tf, Options{URL: url, Branch: "main", Path: "crs", CacheDir: t.TempDir(), Username: user, MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rev, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(ctx, rev)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]error{}
	for _, f := range snap.Files {
		if f.Refused != nil {
			refused[f.Path] = f.Refused
			if f.Data != nil {
				t.Errorf("%s: refused but read", f.Path)
			}
		}
	}
	if !errors.Is(refused["crs/link.yaml"], source.ErrSymlink) || !errors.Is(refused["crs/big.yaml"], source.ErrTooLarge) {
		t.Errorf("refused %v, want link.yaml a symlink and big.yaml too large", refused)
	}
	_, errs := source.Parse(snap)
	for _, p := range []string{"crs/link.yaml", "crs/big.yaml"} {
		found := false
		for _, e := range errs {
			found = found || (e.File == p && strings.Contains(e.Error(), p))
		}
		if !found {
			t.Errorf("Parse does not report %s: %v", p, errs)
		}
	}
}

// TestTokenOnlyOverHTTPS: with a token, plain http is refused unless the
// server is this machine.
func TestTokenOnlyOverHTTPS(t *testing.T) {
	tf, _ := tokenFile(t, password)
	for url, ok := range map[string]bool{
		"http://git.example.com/r.git": false, "http://10.1.2.3/r.git": false,
		"http://127.0.0.1:3000/r.git": true, "http://localhost/r.git": true, "https://git.example.com/r.git": true,
	} {
		_, err := New(tf, Options{URL: url, Branch: "main"})
		if (err == nil) != ok {
			t.Errorf("New(%s) with a token: %v, want ok=%v", url, err, ok)
		}
		if err != nil && strings.Contains(err.Error(), password) {
			t.Errorf("error reveals the token: %v", err)
		}
	}
	if _, err := New(nil, Options{URL: "http://git.example.com/r.git", Branch: "main"}); err != nil {
		t.Errorf("anonymous http: %v", err)
	}
}
