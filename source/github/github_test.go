package github

import (
	"context"
	"crypto/sha1" // fake git ids
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"

	"github.com/openuniverse/operator/source"
)

const token = "ghp_s3cr3tT0kenValue"

// fakeGitHub serves the few REST endpoints a Source uses from an in-memory
// history, and records every request.
type fakeGitHub struct {
	t *testing.T

	mu      sync.Mutex
	branch  string
	commits map[string]map[string]string // commit sha → path → content
	head    string
	trees   map[string]treeRef // synthetic tree sha → where it is
	token   string             // accepted bearer token; "" accepts anonymous
	// refs are the other refs ("heads/feature", "pull/7/head", "tags/v1") → object sha;
	// tags the annotated tag objects → the commit they tag.
	refs     map[string]string
	tags     map[string]string
	requests []recorded
	// throttle answers the next n blob requests with 429 and Retry-After.
	throttle   int
	retryAfter string
}

type treeRef struct{ commit, dir string }

type recorded struct {
	Method, Path, Query string
	Header              http.Header
	At                  time.Time
	Status              int
}

func newFake(t *testing.T) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, branch: "main", commits: map[string]map[string]string{}, trees: map[string]treeRef{}, token: token,
		refs: map[string]string{}, tags: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func gitSHA(kind string, b []byte) string {
	h := sha1.New() // fake git ids
	fmt.Fprintf(h, "%s %d\x00", kind, len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// commit makes files the new head and returns its sha.
func (f *fakeGitHub) commit(files map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(files)
	sha := gitSHA("commit", append(b, f.head...))
	f.commits[sha] = files
	f.head = sha
	return sha
}

// pushRef stores files as a commit that ref ("heads/feature", "pull/7/head") points at,
// leaving the followed branch's head where it is.
func (f *fakeGitHub) pushRef(ref string, files map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(files)
	sha := gitSHA("commit", append(b, ref...))
	f.commits[sha] = files
	f.refs[ref] = sha
	return sha
}

func (f *fakeGitHub) treeSHA(commit, dir string) string {
	var b strings.Builder
	files := f.commits[commit]
	keys := make([]string, 0, len(files))
	for p := range files {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			fmt.Fprintf(&b, "%s %s\n", p, files[p])
		}
	}
	sha := gitSHA("tree", []byte(dir+"\n"+b.String()))
	f.trees[sha] = treeRef{commit: commit, dir: dir}
	return sha
}

func (f *fakeGitHub) take() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), At: time.Now()}
	status := f.serve(w, r)
	rec.Status = status
	f.requests = append(f.requests, rec)
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) int {
	fail := func(code int) int {
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"message":"%s"}`, http.StatusText(code))
		return code
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		return fail(http.StatusUnauthorized)
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/repos/o/r/")
	if !ok {
		return fail(http.StatusNotFound)
	}
	switch {
	case rest == "commits/"+f.branch:
		etag := `"` + f.head + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
		w.Header().Set("ETag", etag)
		_, _ = w.Write([]byte(f.head))
		return http.StatusOK

	case strings.HasPrefix(rest, "commits/"):
		// GET commits/<sha, branch or tag name> as the bare SHA; GitHub answers 422 for
		// what it cannot resolve.
		if r.Header.Get("Accept") != "application/vnd.github.sha" {
			return fail(http.StatusUnsupportedMediaType)
		}
		name := strings.TrimPrefix(rest, "commits/")
		sha, ok := f.refs["heads/"+name]
		if !ok {
			sha, ok = f.refs["tags/"+name]
			if c, tag := f.tags[sha]; tag {
				sha = c
			}
		}
		if _, isCommit := f.commits[name]; !ok && isCommit {
			sha, ok = name, true
		}
		if !ok {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = fmt.Fprintf(w, `{"message":"No commit found for SHA: %s","documentation_url":"https://docs.github.com/rest/commits/commits#get-a-commit"}`, name)
			return http.StatusUnprocessableEntity
		}
		_, _ = w.Write([]byte(sha))
		return http.StatusOK

	case strings.HasPrefix(rest, "git/ref/"):
		name := strings.TrimPrefix(rest, "git/ref/")
		sha, ok := f.refs[name]
		if !ok {
			return fail(http.StatusNotFound)
		}
		kind := "commit"
		if _, tag := f.tags[sha]; tag {
			kind = "tag"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ref": "refs/" + name, "node_id": "REF_x",
			"url": "http://" + r.Host + r.URL.Path, "object": map[string]string{"type": kind, "sha": sha, "url": "http://" + r.Host + "/x"}})
		return http.StatusOK

	case strings.HasPrefix(rest, "git/tags/"):
		sha := strings.TrimPrefix(rest, "git/tags/")
		c, ok := f.tags[sha]
		if !ok {
			return fail(http.StatusNotFound)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": sha, "tag": "v1", "message": "v1",
			"object": map[string]string{"type": "commit", "sha": c}})
		return http.StatusOK

	case strings.HasPrefix(rest, "contents"):
		dir := strings.Trim(strings.TrimPrefix(rest, "contents"), "/")
		files, ok := f.commits[r.URL.Query().Get("ref")]
		if !ok {
			return fail(http.StatusNotFound)
		}
		seen := map[string]bool{}
		var out []map[string]string
		for p := range files {
			if dir != "" && !strings.HasPrefix(p, dir+"/") {
				continue
			}
			name, _, isDir := strings.Cut(strings.TrimPrefix(p, dir+"/"), "/")
			if isDir && !seen[name] {
				seen[name] = true
				out = append(out, map[string]string{"name": name, "type": "dir",
					"sha": f.treeSHA(r.URL.Query().Get("ref"), strings.TrimPrefix(dir+"/"+name, "/"))})
			}
		}
		_ = json.NewEncoder(w).Encode(out)
		return http.StatusOK

	case strings.HasPrefix(rest, "git/trees/"):
		sha := strings.TrimPrefix(rest, "git/trees/")
		ref, ok := f.trees[sha]
		if _, isCommit := f.commits[sha]; isCommit {
			ref, ok = treeRef{commit: sha}, true
		}
		if !ok || r.URL.Query().Get("recursive") == "" {
			return fail(http.StatusNotFound)
		}
		var entries []map[string]any
		for p, c := range f.commits[ref.commit] {
			if ref.dir != "" && !strings.HasPrefix(p, ref.dir+"/") {
				continue
			}
			rel := strings.TrimPrefix(p, ref.dir+"/")
			mode := "100644"
			if strings.HasPrefix(c, symlinkPrefix) { // the blob of a symlink holds its target
				mode = "120000"
			}
			entries = append(entries, map[string]any{"path": rel, "type": "blob", "mode": mode, "sha": gitSHA("blob", []byte(c)), "size": len(c)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": sha, "tree": entries, "truncated": false})
		return http.StatusOK

	case strings.HasPrefix(rest, "git/blobs/"):
		if f.throttle > 0 {
			f.throttle--
			w.Header().Set("Retry-After", f.retryAfter)
			return fail(http.StatusTooManyRequests)
		}
		sha := strings.TrimPrefix(rest, "git/blobs/")
		for _, files := range f.commits {
			for _, c := range files {
				if gitSHA("blob", []byte(c)) == sha {
					_, _ = w.Write([]byte(c))
					return http.StatusOK
				}
			}
		}
		return fail(http.StatusNotFound)
	}
	return fail(http.StatusNotFound)
}

// symlinkPrefix marks a fixture file the fake lists as a symbolic link.
const symlinkPrefix = "symlink:"

type staticCreds struct{ tok source.Token }

func (c staticCreds) Token() source.Token           { return c.tok }
func (c staticCreds) Reload() (source.Token, error) { return c.tok, nil }

func newSource(t *testing.T, srv *httptest.Server, path string, creds source.Credentials) *Source {
	t.Helper()
	o := DefaultOptions()
	o.BaseURL = srv.URL + "/api"
	o.Repository = "o/r"
	o.Path = path
	o.RetryMax = 2
	s, err := New(creds, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// endpoints reduces requests to "METHOD kind status" for comparison.
func endpoints(rs []recorded) []string {
	var out []string
	for _, r := range rs {
		kind := strings.TrimPrefix(r.Path, "/api/repos/o/r/")
		switch {
		case strings.HasPrefix(kind, "git/blobs/"):
			kind = "blob"
		case strings.HasPrefix(kind, "git/trees/"):
			kind = "tree"
		case strings.HasPrefix(kind, "contents"):
			kind = "contents"
		case strings.HasPrefix(kind, "commits/"):
			kind = "head"
		}
		out = append(out, fmt.Sprintf("%s %s %d", r.Method, kind, r.Status))
	}
	sort.Strings(out)
	return out
}

var v1 = map[string]string{
	"crs/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
	"crs/nested/b.yml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\n",
	"crs/README.md":          "not a manifest",
	"crs/kustomization.yaml": "resources: [a.yaml]\n",
	"other/c.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n",
}

func TestHeadConditional(t *testing.T) {
	f, srv := newFake(t)
	rev := f.commit(v1)
	s := newSource(t, srv, "crs", staticCreds{source.NewToken(token)})
	ctx := context.Background()

	got, err := s.Head(ctx)
	if err != nil || got != rev {
		t.Fatalf("Head() = %q, %v; want %q", got, err, rev)
	}
	if diff := cmp.Diff([]string{"GET head 200"}, endpoints(f.take())); diff != "" {
		t.Errorf("first Head requests (-want +got):\n%s", diff)
	}

	// Unchanged: one conditional request answered 304, and nothing else.
	got, err = s.Head(ctx)
	if err != nil || got != rev {
		t.Fatalf("Head() = %q, %v; want %q", got, err, rev)
	}
	reqs := f.take()
	if diff := cmp.Diff([]string{"GET head 304"}, endpoints(reqs)); diff != "" {
		t.Errorf("unchanged Head requests (-want +got):\n%s", diff)
	}
	if inm := reqs[0].Header.Get("If-None-Match"); inm != `"`+rev+`"` {
		t.Errorf("If-None-Match = %q, want the previous ETag", inm)
	}

	next := f.commit(map[string]string{"crs/a.yaml": "x: 1\n"})
	got, err = s.Head(ctx)
	if err != nil || got != next {
		t.Fatalf("Head() after a push = %q, %v; want %q", got, err, next)
	}
}

func TestSnapshotCachesBlobsBySHA(t *testing.T) {
	f, srv := newFake(t)
	rev1 := f.commit(v1)
	s := newSource(t, srv, "crs", staticCreds{source.NewToken(token)})
	ctx := context.Background()

	snap, err := s.Snapshot(ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, file := range snap.Files {
		paths = append(paths, file.Path)
		if file.BlobSHA != gitSHA("blob", file.Data) {
			t.Errorf("%s: BlobSHA does not match Data", file.Path)
		}
	}
	// The subdirectory is seen (the reference loop missed it); other/ and
	// README.md are not; kustomization.yaml is kept for Parse to report.
	if diff := cmp.Diff([]string{"crs/a.yaml", "crs/kustomization.yaml", "crs/nested/b.yml"}, paths); diff != "" {
		t.Errorf("Snapshot files (-want +got):\n%s", diff)
	}
	if snap.Refetched != 3 {
		t.Errorf("cold Refetched = %d, want 3", snap.Refetched)
	}
	if diff := cmp.Diff([]string{"GET blob 200", "GET blob 200", "GET blob 200", "GET contents 200", "GET tree 200"},
		endpoints(f.take())); diff != "" {
		t.Errorf("cold Snapshot requests (-want +got):\n%s", diff)
	}

	// The same revision again: no request at all.
	again, err := s.Snapshot(ctx, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if again.Refetched != 0 || len(again.Files) != 3 {
		t.Errorf("repeat Snapshot = %d files, %d refetched; want 3, 0", len(again.Files), again.Refetched)
	}
	if reqs := f.take(); len(reqs) != 0 {
		t.Errorf("repeat Snapshot made requests: %v", endpoints(reqs))
	}

	// One file changed, one added: only those two blobs are fetched.
	v2 := map[string]string{}
	for k, v := range v1 {
		v2[k] = v
	}
	v2["crs/a.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: y}\n"
	v2["crs/d.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, namespace: x}\n"
	rev2 := f.commit(v2)
	snap2, err := s.Snapshot(ctx, rev2)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.take()
	if snap2.Refetched != 2 {
		t.Errorf("Refetched = %d, want 2", snap2.Refetched)
	}
	if diff := cmp.Diff([]string{"GET blob 200", "GET blob 200", "GET contents 200", "GET tree 200"}, endpoints(reqs)); diff != "" {
		t.Errorf("incremental Snapshot requests (-want +got):\n%s", diff)
	}
	want := map[string]bool{
		"/api/repos/o/r/git/blobs/" + gitSHA("blob", []byte(v2["crs/a.yaml"])): true,
		"/api/repos/o/r/git/blobs/" + gitSHA("blob", []byte(v2["crs/d.yaml"])): true,
	}
	for _, r := range reqs {
		if strings.Contains(r.Path, "/git/blobs/") && !want[r.Path] {
			t.Errorf("unchanged blob refetched: %s", r.Path)
		}
	}
}

func TestSnapshotWholeRepository(t *testing.T) {
	f, srv := newFake(t)
	rev := f.commit(v1)
	s := newSource(t, srv, "", staticCreds{source.NewToken(token)})
	snap, err := s.Snapshot(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Files) != 4 {
		t.Errorf("root Snapshot has %d files, want 4", len(snap.Files))
	}
	if diff := cmp.Diff([]string{"GET blob 200", "GET blob 200", "GET blob 200", "GET blob 200", "GET tree 200"},
		endpoints(f.take())); diff != "" {
		t.Errorf("root Snapshot requests (-want +got):\n%s", diff)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	f, srv := newFake(t)
	rev := f.commit(map[string]string{"crs/a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"})
	f.throttle, f.retryAfter = 1, "1"
	s := newSource(t, srv, "crs", staticCreds{source.NewToken(token)})
	if _, err := s.Snapshot(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	var blobs []recorded
	for _, r := range f.take() {
		if strings.Contains(r.Path, "/git/blobs/") {
			blobs = append(blobs, r)
		}
	}
	if len(blobs) != 2 || blobs[0].Status != http.StatusTooManyRequests || blobs[1].Status != http.StatusOK {
		t.Fatalf("blob requests = %v, want a 429 then a 200", endpoints(blobs))
	}
	if waited := blobs[1].At.Sub(blobs[0].At); waited < time.Second {
		t.Errorf("retried after %v, want at least the 1s Retry-After", waited)
	}
}

func TestRetryAfterTooLongFails(t *testing.T) {
	f, srv := newFake(t)
	rev := f.commit(map[string]string{"crs/a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"})
	f.throttle, f.retryAfter = 1, "3600"
	s := newSource(t, srv, "crs", staticCreds{source.NewToken(token)})
	start := time.Now()
	if _, err := s.Snapshot(context.Background(), rev); err == nil {
		t.Fatal("Snapshot succeeded, want the 429 reported")
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("waited %v for a Retry-After beyond MaxRetryAfter", time.Since(start))
	}
}

// tokenFile writes tok to a fresh file and opens it.
func tokenFile(t *testing.T, tok string) (*source.TokenFile, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tf, p
}

func TestTokenOnlyInAuthorizationHeader(t *testing.T) {
	f, srv := newFake(t)
	rev := f.commit(v1)
	tf, _ := tokenFile(t, token)
	s := newSource(t, srv, "crs", tf)
	ctx := context.Background()
	if _, err := s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// A failing call, to look at an error too.
	_, err := s.Snapshot(ctx, strings.Repeat("0", 40))
	if err == nil {
		t.Fatal("Snapshot of an unknown revision succeeded")
	}
	if strings.Contains(err.Error(), token) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), token) {
		t.Errorf("error reveals the token: %v", err)
	}
	for _, r := range f.take() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+token {
			t.Errorf("%s %s: Authorization = %q", r.Method, r.Path, got)
		}
		h := r.Header.Clone()
		h.Del("Authorization")
		if strings.Contains(fmt.Sprint(h), token) || strings.Contains(r.Path+"?"+r.Query, token) {
			t.Errorf("%s %s: token outside the Authorization header", r.Method, r.Path)
		}
	}
}

func TestTokenRotationReloadedOn401(t *testing.T) {
	f, srv := newFake(t)
	f.commit(v1)
	tf, p := tokenFile(t, token)
	s := newSource(t, srv, "crs", tf)
	log, logged := captureLog()
	ctx := logr.NewContext(context.Background(), log)
	if _, err := s.Head(ctx); err != nil {
		t.Fatal(err)
	}
	f.take()
	// The host rotates the token and the file is updated, but no watcher
	// runs: the 401 itself makes the source re-read the file.
	const rotated = "ghp_r0tatedT0ken"
	f.mu.Lock()
	f.token = rotated
	f.mu.Unlock()
	if err := os.WriteFile(p, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	f.commit(map[string]string{"crs/a.yaml": "x: 1\n"})
	if _, err := s.Head(ctx); err != nil {
		t.Fatalf("Head after rotation: %v", err)
	}
	reqs := f.take()
	if diff := cmp.Diff([]string{"GET head 200", "GET head 401"}, endpoints(reqs)); diff != "" {
		t.Errorf("requests across rotation (-want +got):\n%s", diff)
	}

	// A revoked token with nothing new in the file: one 401, an error that
	// does not contain the token.
	f.mu.Lock()
	f.token = "something-else"
	f.mu.Unlock()
	_, err := s.Head(ctx)
	if err == nil {
		t.Fatal("Head with a revoked token succeeded")
	}
	if strings.Contains(err.Error(), rotated) {
		t.Errorf("error reveals the token: %v", err)
	}
	if n := len(f.take()); n != 1 {
		t.Errorf("revoked token made %d requests, want 1 (no retry of a 401 with the same token)", n)
	}
	out := logged()
	if strings.Contains(out, token) || strings.Contains(out, rotated) {
		t.Errorf("log reveals a token:\n%s", out)
	}
	for _, want := range []string{"GitHub refused the token, retrying with the re-read one", "GitHub refused the token and the token file holds no other", "GitHub response"} {
		if !strings.Contains(out, want) {
			t.Errorf("log misses %q:\n%s", want, out)
		}
	}
}

// captureLog returns a logger that keeps every line, with its values, at
// every verbosity.
func captureLog() (logr.Logger, func() string) {
	var mu sync.Mutex
	var buf strings.Builder
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	return log, func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := map[string]Options{
		"no repository":      {Branch: "main"},
		"no owner":           {Repository: "/r", Branch: "main"},
		"three parts":        {Repository: "a/b/c", Branch: "main"},
		"no branch":          {Repository: "o/r"},
		"relative url":       {Repository: "o/r", Branch: "main", BaseURL: "api.github.com"},
		"credentials in url": {Repository: "o/r", Branch: "main", BaseURL: "https://u:" + token + "@example.com/"},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(nil, o)
			if err == nil {
				t.Fatal("New succeeded")
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error reveals the token: %v", err)
			}
		})
	}
}

// TestSnapshotRefusesSymlinksAndLargeBlobs: a symbolic link is reported, not
// silently dropped and never followed; a blob over the size limit is
// reported from the tree's size and never fetched.
func TestSnapshotRefusesSymlinksAndLargeBlobs(t *testing.T) {
	f, srv := newFake(t)
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: x}\ndata: {k: " + strings.Repeat("x", 500) + "}\n"
	head := f.commit(map[string]string{
		"crs/ok.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: x}\n",
		"crs/big.yaml":  big,
		"crs/link.yaml": symlinkPrefix + "../../etc/passwd",
	})
	o := DefaultOptions()
	o.BaseURL, o.Repository, o.RetryMax, o.MaxFileBytes = srv.URL+"/api", "o/r", 0, 200
	s, err := New(staticCreds{source.NewToken(token)}, o)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot(context.Background(), head)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.take() {
		if strings.Contains(r.Path, gitSHA("blob", []byte(big))) || strings.Contains(r.Path, gitSHA("blob", []byte(symlinkPrefix+"../../etc/passwd"))) {
			t.Errorf("fetched a refused blob: %s", r.Path)
		}
	}
	objs, errs := source.Parse(snap)
	if len(objs) != 1 || objs[0].Obj.GetName() != "ok" {
		t.Errorf("objects %v, want only ok", objs)
	}
	got := map[string]error{}
	for _, e := range errs {
		got[e.File] = e
	}
	if !errors.Is(got["crs/big.yaml"], source.ErrTooLarge) || !errors.Is(got["crs/link.yaml"], source.ErrSymlink) {
		t.Errorf("file errors %v, want big.yaml too large and link.yaml a symlink", errs)
	}
}

func TestNewRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://api.example.com/": false, "http://10.0.0.1:8080/api": false,
		"http://127.0.0.1:8080/api": true, "http://localhost/api": true, "http://[::1]:9/api": true,
		"https://ghe.example.com/api/v3/": true,
	} {
		_, err := New(staticCreds{source.NewToken(token)}, Options{Repository: "o/r", Branch: "main", BaseURL: url})
		if (err == nil) != ok {
			t.Errorf("New(%s): %v, want ok=%v", url, err, ok)
		}
	}
}

// TestTokenNeverLeavesTheConfiguredHost: the API redirects a blob to another
// host (as GitHub does to its CDN); that hop, and every other request to a
// host that is not the API's, goes without the Authorization header.
func TestTokenNeverLeavesTheConfiguredHost(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n"))
	}))
	t.Cleanup(other.Close)
	f, srv := newFake(t)
	content := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n"
	head := f.commit(map[string]string{"a.yaml": content})
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/git/blobs/") {
			// 127.0.0.1 and localhost are different hosts to the transport
			http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/blob", http.StatusFound)
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(redirect.Close)
	_ = srv
	o := DefaultOptions()
	o.BaseURL, o.Repository, o.RetryMax = redirect.URL+"/api", "o/r", 0
	s, err := New(staticCreds{source.NewToken(token)}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(context.Background(), head); err != nil {
		t.Fatal(err)
	}
	if leaked.Load() != 0 {
		t.Errorf("the token went to another host on %d requests", leaked.Load())
	}
}

// TestErrorsScrubbed: a host that echoes the request's Authorization header
// in its error body never gets the token into our error.
func TestErrorsScrubbed(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"message":"no such repo for %s"}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(echo.Close)
	o := DefaultOptions()
	o.BaseURL, o.Repository, o.RetryMax = echo.URL+"/api", "o/r", 0
	s, err := New(staticCreds{source.NewToken(token)}, o)
	if err != nil {
		t.Fatal(err)
	}
	_, herr := s.Head(context.Background())
	_, serr := s.Snapshot(context.Background(), strings.Repeat("a", 40))
	for _, err := range []error{herr, serr} {
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(fmt.Sprintf("%+v", err), token) {
			t.Errorf("error %v carries the token", err)
		}
	}
}
