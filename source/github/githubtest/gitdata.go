// Package githubtest is an in-memory repository speaking the GitHub git data API (refs,
// commits, trees, blobs) over httptest, for tests of the GitHub write path (source/github's
// and its callers'). It applies GitHub's ref-update rule: without force, the new commit must
// descend from the ref's current commit, else 422 "Update is not a fast forward". Object ids
// are SHA-1s of the content, not git's object ids; requests answer only under /repos/o/r/git/.
package githubtest

import (
	"crypto/sha1" //nolint:gosec // object ids
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Entry is a tree entry.
type Entry struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
}

// Commit is a stored commit.
type Commit struct {
	Tree      string
	Parents   []string
	Message   string
	Author    map[string]any
	Signature string
}

// GitData is the in-memory repository and its handler.
type GitData struct {
	// Token is the Bearer token every request must carry.
	Token string

	mu    sync.Mutex
	blobs map[string][]byte
	trees map[string][]Entry

	// Commits and Refs ("heads/<branch>" → SHA) are the repository; read them when no
	// request is in flight.
	Commits map[string]Commit
	Refs    map[string]string
	// Refused counts ref updates refused as not fast forward; Forced those that asked for
	// force; BadAuth the requests without the token.
	Refused, Forced, BadAuth int
	// OnCommit runs (once, then cleared) before a commit is created: the race of another
	// writer. It may re-arm itself.
	OnCommit func(g *GitData)
	// Requests lists method and path of every request; Bodies the request bodies by path.
	Requests []string
	Bodies   map[string][]string
}

// NewGitData serves a repository o/r whose main branch holds files (path → content), one
// commit "init"; the server stops with the test.
func NewGitData(t testing.TB, token string, files map[string]string) (*GitData, *httptest.Server) {
	g := &GitData{Token: token, blobs: map[string][]byte{}, trees: map[string][]Entry{}, Commits: map[string]Commit{}, Refs: map[string]string{}, Bodies: map[string][]string{}}
	root := g.buildTree(files)
	g.Refs["heads/main"] = g.putCommit(Commit{Tree: root, Message: "init"})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func hash(kind string, b []byte) string {
	h := sha1.Sum(append([]byte(kind+"\x00"), b...)) //nolint:gosec // git object ids are SHA-1
	return hex.EncodeToString(h[:])
}

func (g *GitData) putBlob(b []byte) string { s := hash("blob", b); g.blobs[s] = b; return s }
func (g *GitData) putTree(es []Entry) string {
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	b, _ := json.Marshal(es)
	s := hash("tree", b)
	g.trees[s] = es
	return s
}
func (g *GitData) putCommit(c Commit) string {
	b, _ := json.Marshal(c)
	s := hash("commit", append(b, []byte(time.Now().String())...))
	g.Commits[s] = c
	return s
}

// buildTree makes nested trees of path → content.
func (g *GitData) buildTree(files map[string]string) string {
	var es []Entry
	sub := map[string]map[string]string{}
	for p, c := range files {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if sub[dir] == nil {
				sub[dir] = map[string]string{}
			}
			sub[dir][rest] = c
			continue
		}
		es = append(es, Entry{Path: p, Mode: "100644", Type: "blob", SHA: g.putBlob([]byte(c))})
	}
	for d, fs := range sub {
		es = append(es, Entry{Path: d, Mode: "040000", Type: "tree", SHA: g.buildTree(fs)})
	}
	return g.putTree(es)
}

// withEntry returns the tree base with path set to e (nested paths rebuild subtrees).
func (g *GitData) withEntry(base, p string, e Entry) string {
	es := append([]Entry(nil), g.trees[base]...)
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
		e = Entry{Path: name, Mode: "040000", Type: "tree", SHA: g.withEntry(subBase, rest, e)}
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
func (g *GitData) Files(commitSHA string) map[string]string {
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
	walk(g.Commits[commitSHA].Tree, "")
	return out
}

func (g *GitData) Log(sha string) []string {
	var out []string
	for sha != "" {
		c := g.Commits[sha]
		out = append(out, c.Message)
		if len(c.Parents) == 0 {
			break
		}
		sha = c.Parents[0]
	}
	return out
}

func (g *GitData) Descends(sha, ancestor string) bool {
	for sha != "" {
		if sha == ancestor {
			return true
		}
		c, ok := g.Commits[sha]
		if !ok || len(c.Parents) == 0 {
			return false
		}
		sha = c.Parents[0]
	}
	return false
}

// commitAs commits files on top of a branch directly (another writer).
func (g *GitData) CommitAs(branch, msg string, files map[string]string) {
	head := g.Refs["heads/"+branch]
	tree := g.Commits[head].Tree
	for p, c := range files {
		tree = g.withEntry(tree, p, Entry{Mode: "100644", Type: "blob", SHA: g.putBlob([]byte(c))})
	}
	g.Refs["heads/"+branch] = g.putCommit(Commit{Tree: tree, Parents: []string{head}, Message: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ServeHTTP serves the git data API routes the Writer and Source call.
//
//nolint:gocyclo,funlen // one case per route of the API the fake serves
func (g *GitData) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := strings.TrimPrefix(r.URL.Path, "/repos/o/r/git/")
	if r.Method == http.MethodPost && p == "commits" && g.OnCommit != nil {
		hook := g.OnCommit
		g.OnCommit = nil
		g.mu.Lock()
		hook(g)
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Requests = append(g.Requests, r.Method+" "+p)
	g.Bodies[p] = append(g.Bodies[p], string(body))
	if r.Header.Get("Authorization") != "Bearer "+g.Token {
		g.BadAuth++
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	notFound := func() { writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"}) }
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(p, "ref/"):
		sha, ok := g.Refs[strings.TrimPrefix(p, "ref/")]
		if !ok {
			notFound()
			return
		}
		writeJSON(w, 200, map[string]any{"ref": "refs/" + strings.TrimPrefix(p, "ref/"), "object": map[string]string{"sha": sha, "type": "commit"}})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "commits/"):
		c, ok := g.Commits[strings.TrimPrefix(p, "commits/")]
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
			Tree     []Entry `json:"tree"`
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
		sha := g.putCommit(Commit{Tree: in.Tree, Parents: in.Parents, Message: in.Message, Author: in.Author, Signature: in.Signature})
		writeJSON(w, 201, map[string]any{"sha": sha, "tree": map[string]string{"sha": in.Tree}, "message": in.Message})
	case r.Method == http.MethodPatch && strings.HasPrefix(p, "refs/"):
		name := strings.TrimPrefix(p, "refs/")
		var in struct {
			SHA   string `json:"sha"`
			Force *bool  `json:"force"`
		}
		_ = json.Unmarshal(body, &in)
		cur, ok := g.Refs[name]
		if !ok {
			writeJSON(w, 422, map[string]string{"message": "Reference does not exist"})
			return
		}
		if in.Force == nil || *in.Force {
			g.Forced++
		}
		if !g.Descends(in.SHA, cur) {
			g.Refused++
			writeJSON(w, 422, map[string]string{"message": "Update is not a fast forward"})
			return
		}
		g.Refs[name] = in.SHA
		writeJSON(w, 200, map[string]any{"ref": "refs/" + name, "object": map[string]string{"sha": in.SHA, "type": "commit"}})
	case r.Method == http.MethodPost && p == "refs":
		var in struct{ Ref, SHA string }
		_ = json.Unmarshal(body, &in)
		name := strings.TrimPrefix(in.Ref, "refs/")
		if _, ok := g.Refs[name]; ok {
			writeJSON(w, 422, map[string]string{"message": "Reference already exists"})
			return
		}
		g.Refs[name] = in.SHA
		writeJSON(w, 201, map[string]any{"ref": in.Ref, "object": map[string]string{"sha": in.SHA, "type": "commit"}})
	default:
		notFound()
	}
}
