package github_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/github"
	"github.com/openuniverse/operator/source/github/githubtest"
)

const ghToken = "ghp-write-test-0a1b2c"

type creds struct{}

func (creds) Token() source.Token           { return source.NewToken(ghToken) }
func (creds) Reload() (source.Token, error) { return source.NewToken(ghToken), nil }

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
	g, srv := githubtest.NewGitData(t, ghToken, ghFiles)
	base := g.Refs["heads/main"]
	res, err := newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "bump r/app v1 -> v2"})
	if err != nil {
		t.Fatal(err)
	}
	head := g.Refs["heads/main"]
	if res.Commit != head || res.Parent != base || res.Attempts != 1 {
		t.Fatalf("result %+v, head %s", res, head)
	}
	want := map[string]string{"crs/app.yaml": "image:\n  repository: r/app\n  tag: v2 # keep\n", "crs/db.yaml": "kind: SQL\n", "README.md": "hi\n"}
	if got := g.Files(head); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files %q", got)
	}
	if c := g.Commits[head]; len(c.Parents) != 1 || c.Parents[0] != base || c.Author["name"] != source.DefaultAuthor.Name {
		t.Fatalf("commit %+v", c)
	}
	if g.BadAuth != 0 || g.Forced != 0 {
		t.Fatalf("%d requests without the token, %d forced ref updates", g.BadAuth, g.Forced)
	}
	for p, bs := range g.Bodies {
		for _, b := range bs {
			if strings.Contains(b, ghToken) {
				t.Fatalf("token in the body of %s", p)
			}
		}
	}
	// idempotent: nothing to write the second time, and no write requests
	n := len(g.Requests)
	res, err = newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "again"})
	if err != nil || res.Commit != "" {
		t.Fatalf("second write %+v %v", res, err)
	}
	for _, r := range g.Requests[n:] {
		if !strings.HasPrefix(r, "GET") {
			t.Fatalf("no-op write sent %s", r)
		}
	}
}

// TestGitHubWriteRetriesAStaleParent: another writer moves main after this writer read it
// and before its ref update; GitHub's fast-forward precondition refuses the update, and the
// writer re-applies the edit on the new head. Both commits are on main.
func TestGitHubWriteRetriesAStaleParent(t *testing.T) {
	g, srv := githubtest.NewGitData(t, ghToken, ghFiles)
	g.OnCommit = func(g *githubtest.GitData) {
		g.CommitAs("main", "human edit", map[string]string{"crs/db.yaml": "kind: SQL\nspec: {}\n"})
	}
	res, err := newGHWriter(t, srv.URL).Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "bump"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Refused != 1 || res.Attempts != 2 {
		t.Fatalf("refused %d, attempts %d; want 1 and 2", g.Refused, res.Attempts)
	}
	head := g.Refs["heads/main"]
	if got := strings.Join(g.Log(head), ","); got != "bump,human edit,init" {
		t.Fatalf("history %s", got)
	}
	f := g.Files(head)
	if f["crs/db.yaml"] != "kind: SQL\nspec: {}\n" || !strings.Contains(f["crs/app.yaml"], "tag: v2") {
		t.Fatalf("files %q", f)
	}
}

func TestGitHubWriteGivesUpAndErrors(t *testing.T) {
	g, srv := githubtest.NewGitData(t, ghToken, ghFiles)
	w := newGHWriter(t, srv.URL)
	_, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/none.yaml"}, Edit: bump("a", "b"), Message: "m"})
	if !errors.Is(err, source.ErrFileNotFound) || !strings.Contains(err.Error(), "crs/none.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	// every attempt races: the retries run out with a conflict
	var hook func(*githubtest.GitData)
	hook = func(g *githubtest.GitData) {
		g.CommitAs("main", "racer", map[string]string{"x": time.Now().String()})
		g.OnCommit = hook
	}
	g.OnCommit = hook
	res, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "m"})
	if !errors.Is(err, source.ErrConflict) || res.Attempts != 4 || g.Refused != 4 {
		t.Fatalf("res %+v err %v refused %d", res, err, g.Refused)
	}
	if strings.Contains(err.Error(), ghToken) {
		t.Fatal("token in error")
	}
}

func TestGitHubWritePushBranch(t *testing.T) {
	g, srv := githubtest.NewGitData(t, ghToken, ghFiles)
	base := g.Refs["heads/main"]
	w := newGHWriter(t, srv.URL)
	if _, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "auto/bump", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v1", "tag: v2"), Message: "v2"}); err != nil {
		t.Fatal(err)
	}
	g.CommitAs("auto/bump", "review note", map[string]string{"NOTE": "x"})
	if _, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "auto/bump", Paths: []string{"crs/app.yaml"}, Edit: bump("tag: v2", "tag: v3"), Message: "v3"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(g.Log(g.Refs["heads/auto/bump"]), ","); got != "v3,review note,v2,init" {
		t.Fatalf("push branch history %s", got)
	}
	if g.Refs["heads/main"] != base || g.Forced != 0 {
		t.Fatalf("main moved or a forced update (%d)", g.Forced)
	}
}
