package github_test

import (
	"context"
	"crypto/sha1" //nolint:gosec // object ids
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/github"
)

const ghToken = "ghp-write-test-0a1b2c"

type creds struct{}

func (creds) Token() source.Token           { return source.NewToken(ghToken) }
func (creds) Reload() (source.Token, error) { return source.NewToken(ghToken), nil }

type entry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
}

type commit struct {
	Tree      string
	Parents   []string
	Message   string
	Author    map[string]any
	Signature string
}

// gitData is an in-memory repository speaking the GitHub git data API (refs, commits, trees,
// blobs), with the ref-update rule GitHub applies: without force, the new commit must
// descend from the ref's current commit, else 422 "Update is not a fast forward".
type gitData struct {
	t        *testing.T
	mu       sync.Mutex
	blobs    map[string][]byte
	trees    map[string][]entry
	commits  map[string]commit
	refs     map[string]string
	refused  int                 // ref updates refused as not fast forward
	onCommit func(g *gitData)    // runs (unlocked) before a commit is created: the race
	requests []string            // method and path of every request
	badAuth  int                 // requests without the token
	forced   int                 // ref updates that asked for force
	bodies   map[string][]string // request bodies by path, to check no token leaks
}

func newGitData(t *testing.T, files map[string]string) (*gitData, *httptest.Server) {
	g := &gitData{t: t, blobs: map[string][]byte{}, trees: map[string][]entry{}, commits: map[string]commit{}, refs: map[string]string{}, bodies: map[string][]string{}}
	root := g.buildTree(files)
	g.refs["heads/main"] = g.putCommit(commit{Tree: root, Message: "init"})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func hash(kind string, b []byte) string {
	h := sha1.Sum(append([]byte(kind+"\x00"), b...)) //nolint:gosec
	return hex.EncodeToString(h[:])
}

func (g *gitData) putBlob(b []byte) string { s := hash("blob", b); g.blobs[s] = b; return s }
func (g *gitData) putTree(es []entry) string {
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	b, _ := json.Marshal(es)
	s := hash("tree", b)
	g.trees[s] = es
	return s
}
func (g *gitData) putCommit(c commit) string {
	b, _ := json.Marshal(c)
	s := hash("commit", append(b, []byte(time.Now().String())...))
	g.commits[s] = c
	return s
}

// buildTree makes nested trees of path → content.
func (g *gitData) buildTree(files map[string]string) string {
	var es []entry
	sub := map[string]map[string]string{}
	for p, c := range files {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if sub[dir] == nil {
				sub[dir] = map[string]string{}
			}
			sub[dir][rest] = c
			continue
		}
		es = append(es, entry{Path: p, Mode: "100644", Type: "blob", SHA: g.putBlob([]byte(c))})
	}
	for d, fs := range sub {
		es = append(es, entry{Path: d, Mode: "040000", Type: "tree", SHA: g.buildTree(fs)})
	}
	return g.putTree(es)
}

// withEntry returns the tree base with path set to e (nested paths rebuild subtrees).
func (g *gitData) withEntry(base, p string, e entry) string {
	es := append([]entry(nil), g.trees[base]...)
	name, rest, nested := strings.Cut(p, "/")
	idx := -1
	for i, x := range es {
		if x.Path == name {
			idx = i
		}
	}
	if nested {
		subBase := ""
		if idx >= 0 {
			subBase = es[idx].SHA
		}
		e = entry{Path: name, Mode: "040000", Type: "tree", SHA: g.withEntry(subBase, rest, e)}
	} else {
		e.Path = name
	}
	if idx >= 0 {
		es[idx] = e
	} else {
		es = append(es, e)
	}
	return g.putTree(es)
}

// files reads the tree of a commit back as path → content.
func (g *gitData) files(commitSHA string) map[string]string {
	out := map[string]string{}
	var walk func(tree, prefix string)
	walk = func(tree, prefix string) {
		for _, e := range g.trees[tree] {
			if e.Type == "tree" {
				walk(e.SHA, prefix+e.Path+"/")
			} else {
				out[prefix+e.Path] = string(g.blobs[e.SHA])
			}
		}
	}
	walk(g.commits[commitSHA].Tree, "")
	return out
}

func (g *gitData) log(sha string) []string {
	var out []string
	for sha != "" {
		c := g.commits[sha]
		out = append(out, c.Message)
		if len(c.Parents) == 0 {
			break
		}
		sha = c.Parents[0]
	}
	return out
}

func (g *gitData) descends(sha, ancestor string) bool {
	for sha != "" {
		if sha == ancestor {
			return true
		}
		c, ok := g.commits[sha]
		if !ok || len(c.Parents) == 0 {
			return false
		}
		sha = c.Parents[0]
	}
	return false
}

// commitAs commits files on top of a branch directly (another writer).
func (g *gitData) commitAs(branch, msg string, files map[string]string) {
	head := g.refs["heads/"+branch]
	tree := g.commits[head].Tree
	for p, c := range files {
		tree = g.withEntry(tree, p, entry{Mode: "100644", Type: "blob", SHA: g.putBlob([]byte(c))})
	}
	g.refs["heads/"+branch] = g.putCommit(commit{Tree: tree, Parents: []string{head}, Message: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (g *gitData) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := strings.TrimPrefix(r.URL.Path, "/repos/o/r/git/")
	if r.Method == http.MethodPost && p == "commits" && g.onCommit != nil {
		hook := g.onCommit
		g.onCommit = nil
		g.mu.Lock()
		hook(g)
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, r.Method+" "+p)
	g.bodies[p] = append(g.bodies[p], string(body))
	if r.Header.Get("Authorization") != "Bearer "+ghToken {
		g.badAuth++
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	notFound := func() { writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"}) }
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(p, "ref/"):
		sha, ok := g.refs[strings.TrimPrefix(p, "ref/")]
		if !ok {
			notFound()
			return
		}
		writeJSON(w, 200, map[string]any{"ref": "refs/" + strings.TrimPrefix(p, "ref/"), "object": map[string]string{"sha": sha, "type": "commit"}})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "commits/"):
		c, ok := g.commits[strings.TrimPrefix(p, "commits/")]
		if !ok {
			notFound()
			return
		}
		parents := []map[string]string{}
		for _, s := range c.Parents {
			parents = append(parents, map[string]string{"sha": s})
		}
		writeJSON(w, 200, map[string]any{"sha": strings.TrimPrefix(p, "commits/"), "tree": map[string]string{"sha": c.Tree}, "parents": parents, "message": c.Message})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "trees/"):
		es, ok := g.trees[strings.TrimPrefix(p, "trees/")]
		if !ok {
			notFound()
			return
		}
		writeJSON(w, 200, map[string]any{"sha": strings.TrimPrefix(p, "trees/"), "tree": es, "truncated": false})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "blobs/"):
		b, ok := g.blobs[strings.TrimPrefix(p, "blobs/")]
		if !ok || r.Header.Get("Accept") != "application/vnd.github.v3.raw" {
			notFound()
			return
		}
		_, _ = w.Write(b)
	case r.Method == http.MethodPost && p == "blobs":
		var in struct{ Content, Encoding string }
		_ = json.Unmarshal(body, &in)
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if in.Encoding != "base64" || err != nil {
			writeJSON(w, 422, map[string]string{"message": "bad blob"})
			return
		}
		writeJSON(w, 201, map[string]string{"sha": g.putBlob(b)})
	case r.Method == http.MethodPost && p == "trees":
		var in struct {
			BaseTree string  `json:"base_tree"`
			Tree     []entry `json:"tree"`
		}
		_ = json.Unmarshal(body, &in)
		tree := in.BaseTree
		for _, e := range in.Tree {
			if _, ok := g.blobs[e.SHA]; !ok || e.Type != "blob" {
				writeJSON(w, 422, map[string]string{"message": "tree.sha is not a blob"})
				return
			}
			tree = g.withEntry(tree, e.Path, e)
		}
		writeJSON(w, 201, map[string]string{"sha": tree})
	case r.Method == http.MethodPost && p == "commits":
		var in struct {
			Message   string         `json:"message"`
			Tree      string         `json:"tree"`
			Parents   []string       `json:"parents"`
			Author    map[string]any `json:"author"`
			Signature string         `json:"signature"`
		}
		_ = json.Unmarshal(body, &in)
		if _, ok := g.trees[in.Tree]; !ok {
			writeJSON(w, 422, map[string]string{"message": "tree not found"})
			return
		}
		sha := g.putCommit(commit{Tree: in.Tree, Parents: in.Parents, Message: in.Message, Author: in.Author, Signature: in.Signature})
		writeJSON(w, 201, map[string]any{"sha": sha, "tree": map[string]string{"sha": in.Tree}, "message": in.Message})
	case r.Method == http.MethodPatch && strings.HasPrefix(p, "refs/"):
		name := strings.TrimPrefix(p, "refs/")
		var in struct {
			SHA   string `json:"sha"`
			Force *bool  `json:"force"`
		}
		_ = json.Unmarshal(body, &in)
		cur, ok := g.refs[name]
		if !ok {
			writeJSON(w, 422, map[string]string{"message": "Reference does not exist"})
			return
		}
		if in.Force == nil || *in.Force {
			g.forced++
		}
		if !g.descends(in.SHA, cur) {
			g.refused++
			writeJSON(w, 422, map[string]string{"message": "Update is not a fast forward"})
			return
		}
		g.refs[name] = in.SHA
		writeJSON(w, 200, map[string]any{"ref": "refs/" + name, "object": map[string]string{"sha": in.SHA, "type": "commit"}})
	case r.Method == http.MethodPost && p == "refs":
		var in struct{ Ref, SHA string }
		_ = json.Unmarshal(body, &in)
		name := strings.TrimPrefix(in.Ref, "refs/")
		if _, ok := g.refs[name]; ok {
			writeJSON(w, 422, map[string]string{"message": "Reference already exists"})
			return
		}
		g.refs[name] = in.SHA
		writeJSON(w, 201, map[string]any{"ref": in.Ref, "object": map[string]string{"sha": in.SHA, "type": "commit"}})
	default:
		notFound()
	}
}

func newGHWriter(t *testing.T, url string) *github.Writer {
	t.Helper()
	w, err := github.NewWriter(creds{}, github.Options{BaseURL: url, Repository: "o/r", RetryMax: 1}, source.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 4 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func bump(from, to string) source.Edit {
	return func(p string, d []byte) ([]byte, error) {
		if strings.Contains(string(d), to) {
			return d, nil
		}
		if !strings.Contains(string(d), from) {
			return nil, fmt.Errorf("no %q", from)
		}
		return []byte(strings.Replace(string(d), from, to, 1)), nil
	}
}

var ghFiles = map[string]string{"crs/app.yaml": "image:\n  repository: r/app\n  tag: v1 # keep\n", "crs/db.yaml": "kind: SQL\n", "README.md": "hi\n"}

func TestGitHubWriteOneCommit(t *testing.T) {
	g, srv := newGitData(t, ghFiles)
	base := g.refs["heads/main"]
	res, err := newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "bump r/app v1 -> v2"})
	if err != nil {
		t.Fatal(err)
	}
	head := g.refs["heads/main"]
	if res.Commit != head || res.Parent != base || res.Attempts != 1 {
		t.Fatalf("result %+v, head %s", res, head)
	}
	want := map[string]string{"crs/app.yaml": "image:\n  repository: r/app\n  tag: v2 # keep\n", "crs/db.yaml": "kind: SQL\n", "README.md": "hi\n"}
	if got := g.files(head); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %q", got)
	}
	if c := g.commits[head]; len(c.Parents) != 1 || c.Parents[0] != base || c.Author["name"] != source.DefaultAuthor.Name {
		t.Fatalf("commit %+v", c)
	}
	if g.badAuth != 0 || g.forced != 0 {
		t.Fatalf("%d requests without the token, %d forced ref updates", g.badAuth, g.forced)
	}
	for p, bs := range g.bodies {
		for _, b := range bs {
			if strings.Contains(b, ghToken) {
				t.Fatalf("token in the body of %s", p)
			}
		}
	}
	// idempotent: nothing to write the second time, and no write requests
	n := len(g.requests)
	res, err = newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "again"})
	if err != nil || res.Commit != "" {
		t.Fatalf("second write %+v %v", res, err)
	}
	for _, r := range g.requests[n:] {
		if !strings.HasPrefix(r, "GET") {
			t.Fatalf("no-op write sent %s", r)
		}
	}
}

// TestGitHubWriteRetriesAStaleParent: another writer moves main after this writer read it
// and before its ref update; GitHub's fast-forward precondition refuses the update, and the
// writer re-applies the edit on the new head. Both commits are on main.
func TestGitHubWriteRetriesAStaleParent(t *testing.T) {
	g, srv := newGitData(t, ghFiles)
	g.onCommit = func(g *gitData) {
		g.commitAs("main", "human edit", map[string]string{"crs/db.yaml": "kind: SQL\nspec: {}\n"})
	}
	res, err := newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "bump"})
	if err != nil {
		t.Fatal(err)
	}
	if g.refused != 1 || res.Attempts != 2 {
		t.Fatalf("refused %d, attempts %d; want 1 and 2", g.refused, res.Attempts)
	}
	head := g.refs["heads/main"]
	if got := strings.Join(g.log(head), ","); got != "bump,human edit,init" {
		t.Fatalf("history %s", got)
	}
	f := g.files(head)
	if f["crs/db.yaml"] != "kind: SQL\nspec: {}\n" || !strings.Contains(f["crs/app.yaml"], "tag: v2") {
		t.Fatalf("files %q", f)
	}
}

func TestGitHubWriteGivesUpAndErrors(t *testing.T) {
	g, srv := newGitData(t, ghFiles)
	w := newGHWriter(t, srv.URL)
	_, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/none.yaml"}, Edit: bump("a", "b"), Message: "m"})
	if !errors.Is(err, source.ErrFileNotFound) || !strings.Contains(err.Error(), "crs/none.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	// every attempt races: the retries run out with a conflict
	var hook func(*gitData)
	hook = func(g *gitData) {
		g.commitAs("main", "racer", map[string]string{"x": time.Now().String()})
		g.onCommit = hook
	}
	g.onCommit = hook
	res, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "m"})
	if !errors.Is(err, source.ErrConflict) || res.Attempts != 4 || g.refused != 4 {
		t.Fatalf("res %+v err %v refused %d", res, err, g.refused)
	}
	if strings.Contains(err.Error(), ghToken) {
		t.Fatal("token in error")
	}
}

func TestGitHubWritePushBranch(t *testing.T) {
	g, srv := newGitData(t, ghFiles)
	base := g.refs["heads/main"]
	w := newGHWriter(t, srv.URL)
	if _, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "auto/bump", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	g.commitAs("auto/bump", "review note", map[string]string{"NOTE": "x"})
	if _, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "auto/bump", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v2", "tag: v3"), Message: "v3"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.log(g.refs["heads/auto/bump"]), ","); got != "v3,review note,v2,init" {
		t.Fatalf("push branch history %s", got)
	}
	if g.refs["heads/main"] != base || g.forced != 0 {
		t.Fatalf("main moved or a forced update (%d)", g.forced)
	}
}
