package image_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
	"github.com/openuniverse/operator/source/github/githubtest"
	"github.com/openuniverse/operator/upgrade/image"
)

var webCR = image.Object{APIVersion: "hanzo.ai/v1", Kind: "Service", Namespace: "apps", Name: "web"}

func TestSetCRImage(t *testing.T) {
	const two = "# the web tier\napiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: api\n  namespace: apps\nspec:\n  image:\n    repository: ghcr.io/hanzo/web\n    tag: v1.0.0\n" +
		"---\napiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  replicas: 2\n  image:\n    repository: ghcr.io/hanzo/web\n    tag: \"v1.0.0\" # pinned\n"
	cases := []struct {
		name, data, repo, tag string
		cr                    image.Object
		want                  string
		err                   string
		errIs                 error
		move                  bool
	}{
		{name: "move: repository and tag, the tag first in the file", move: true, cr: webCR, repo: "ghcr.io/old/web", tag: "v0.9.0",
			data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image:\n    tag: v1.0.0\n    repository: \"ghcr.io/hanzo/web\" # new home\n",
			want: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image:\n    tag: v0.9.0\n    repository: \"ghcr.io/old/web\" # new home\n"},
		{name: "move: a scalar reference", move: true, cr: webCR, repo: "ghcr.io/old/web", tag: "v0.9.0",
			data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image: ghcr.io/hanzo/web:v1.0.0 # x\n",
			want: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image: ghcr.io/old/web:v0.9.0 # x\n"},
		{name: "move: same repository is a tag change", move: true, cr: webCR, repo: "ghcr.io/hanzo/web", tag: "v0.9.0",
			data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image: {repository: ghcr.io/hanzo/web, tag: v1.0.0}\n",
			want: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image: {repository: ghcr.io/hanzo/web, tag: v0.9.0}\n"},
		{name: "the right document of two with the same repository, quotes and comment kept", data: two, repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: webCR,
			want: strings.Replace(two, `tag: "v1.0.0" # pinned`, `tag: "v1.1.0" # pinned`, 1)},
		{name: "another served version of the same group", data: two, repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: image.Object{APIVersion: "hanzo.ai/v1alpha1", Kind: "Service", Namespace: "apps", Name: "web"},
			want: strings.Replace(two, `tag: "v1.0.0" # pinned`, `tag: "v1.1.0" # pinned`, 1)},
		{name: "already at the tag: the same bytes", data: two, repo: "ghcr.io/hanzo/web", tag: "v1.0.0", cr: webCR, want: two},
		{name: "flow style and CRLF", data: "apiVersion: hanzo.ai/v1\r\nkind: Service\r\nmetadata: {name: web, namespace: apps}\r\nspec: {image: {repository: ghcr.io/hanzo/web, tag: v1.0.0}, replicas: 1}\r\n",
			repo: "ghcr.io/hanzo/web", tag: "v2.0.0", cr: webCR,
			want: "apiVersion: hanzo.ai/v1\r\nkind: Service\r\nmetadata: {name: web, namespace: apps}\r\nspec: {image: {repository: ghcr.io/hanzo/web, tag: v2.0.0}, replicas: 1}\r\n"},
		{name: "a scalar image reference", data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image: 'ghcr.io/hanzo/web:v1.0.0'\n",
			repo: "ghcr.io/hanzo/web", tag: "v1.2.0", cr: webCR,
			want: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image: 'ghcr.io/hanzo/web:v1.2.0'\n"},
		{name: "a tag that would read as a number is quoted", data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image:\n    repository: redis\n    tag: latest\n",
			repo: "docker.io/library/redis", tag: "7.2", cr: webCR,
			want: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image:\n    repository: redis\n    tag: \"7.2\"\n"},
		{name: "not in the file", data: two, repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: image.Object{APIVersion: "hanzo.ai/v1", Kind: "Service", Namespace: "apps", Name: "nope"},
			errIs: image.ErrCRNotFound, err: "crs/web.yaml: Service.hanzo.ai apps/nope is not in the file"},
		{name: "another group is another object", data: two, repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: image.Object{APIVersion: "lux.cloud/v1", Kind: "Service", Namespace: "apps", Name: "web"},
			errIs: image.ErrCRNotFound},
		{name: "twice in the file", data: two + "---\n" + two[strings.Index(two, "---\n")+4:], repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: webCR,
			errIs: image.ErrCRAmbiguous, err: "crs/web.yaml: Service.hanzo.ai apps/web is declared twice in the file"},
		{name: "another repository is refused", data: two, repo: "ghcr.io/evil/web", tag: "v1.1.0", cr: webCR,
			errIs: image.ErrRepositoryChange, err: "crs/web.yaml: Service.hanzo.ai apps/web declares spec.image.repository ghcr.io/hanzo/web"},
		{name: "no tag line", data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image:\n    repository: ghcr.io/hanzo/web\n",
			repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: webCR, err: "crs/web.yaml: line 8: Service.hanzo.ai apps/web: spec.image has no tag"},
		{name: "no spec.image", data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  replicas: 1\n",
			repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: webCR, err: "crs/web.yaml: Service.hanzo.ai apps/web (document 1) has no spec.image"},
		{name: "unparsable", data: "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: [\n", repo: "ghcr.io/hanzo/web", tag: "v1.1.0", cr: webCR, err: "crs/web.yaml: parse yaml (document 1)"},
		{name: "an invalid tag", data: two, repo: "ghcr.io/hanzo/web", tag: "v1 ; rm", cr: webCR, err: "is not a valid image tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.move {
				got, err := image.MoveCRImage("crs/web.yaml", []byte(c.data), c.cr, c.repo, c.tag)
				if err != nil || string(got) != c.want {
					t.Fatalf("got %v\n%q\nwant\n%q", err, got, c.want)
				}
				return
			}
			got, err := image.SetCRImage("crs/web.yaml", []byte(c.data), c.cr, c.repo, c.tag)
			if c.err != "" || c.errIs != nil {
				if err == nil || !strings.Contains(err.Error(), c.err) || (c.errIs != nil && !errors.Is(err, c.errIs)) {
					t.Fatalf("error %v, want %q (%v)", err, c.err, c.errIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestFindCR(t *testing.T) {
	web := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image: {repository: r/web, tag: v1.0.0}\n"
	snap := func(files ...string) *source.Snapshot {
		s := &source.Snapshot{Revision: "0123456789abcdef0123"}
		for i := 0; i+1 < len(files); i += 2 {
			s.Files = append(s.Files, source.File{Path: files[i], Data: []byte(files[i+1])})
		}
		return s
	}
	if p, err := image.FindCR(snap("a/other.yaml", strings.Replace(web, "name: web", "name: api", 1), "b/web.yaml", web, "c/bad.yaml", "kind: [\n"), webCR, source.Limits{}); err != nil || p != "b/web.yaml" {
		t.Fatalf("found %q, %v", p, err)
	}
	_, err := image.FindCR(snap("a/web.yaml", web, "b/web.yaml", web), webCR, source.Limits{})
	if !errors.Is(err, image.ErrCRAmbiguous) || !strings.Contains(err.Error(), "Service.hanzo.ai apps/web: declared more than once in the universe repository: at 0123456789ab in a/web.yaml (document 1) and b/web.yaml (document 1)") {
		t.Fatalf("ambiguous: %v", err)
	}
	_, err = image.FindCR(snap("c/bad.yaml", "kind: [\n", "d/x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), webCR, source.Limits{})
	if !errors.Is(err, image.ErrCRNotFound) || !strings.Contains(err.Error(), "Service.hanzo.ai apps/web: not declared in the universe repository at 0123456789ab; 1 file(s) could not be read") || !strings.Contains(err.Error(), "c/bad.yaml") {
		t.Fatalf("not found: %v", err)
	}
}

const crFile = "# web, hand-edited\napiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  image:\n    repository: ghcr.io/hanzo/web\n    tag: 'v1.0.0'   # the platform drives this\n  replicas: 2\n"

// TestCRWriterGitServer: the committer finds the CR's file at the head of a gittestserver
// repository (through the sweep's go-git source), commits one byte-exact change without
// force, and is idempotent; a push raced by another writer is re-applied on the new head.
func TestCRWriterGitServer(t *testing.T) {
	const password = "pw-crfile-7f3e"
	g, err := testbed.NewGitServer("", "bot", password)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Stop(); _ = os.RemoveAll(g.Root()) }()
	other := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: api\n  namespace: apps\nspec:\n  image:\n    repository: ghcr.io/hanzo/web\n    tag: v1.0.0\n"
	base, err := g.Commit("u.git", "main", "init", map[string][]byte{"apps/web.yaml": []byte(crFile), "apps/api.yaml": []byte(other), "README.md": []byte("hi\n")})
	if err != nil {
		t.Fatal(err)
	}
	creds := source.Static(source.NewToken(password))
	src, err := gitclone.New(creds, gitclone.Options{URL: g.HTTPURL("u.git"), Branch: "main", Username: "bot", CacheDir: t.TempDir(), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := gitclone.NewWriter(creds, gitclone.WriterOptions{URL: g.HTTPURL("u.git"), Username: "bot", Retry: source.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c := &image.CRWriter{Source: src, Writer: w, Branch: "main"}
	ctx := context.Background()
	start := time.Now()
	res, err := c.Commit(ctx, change(webCR, "ghcr.io/hanzo/web:v1.1.0", "drive: web v1.0.0 -> v1.1.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("find + commit + push: %v", time.Since(start))
	head, files := headOf(t, g)
	if res.Path != "apps/web.yaml" || res.Commit != head.Hash.String() || res.Parent != base {
		t.Fatalf("result %+v, head %s, base %s", res, head.Hash, base)
	}
	if want := strings.Replace(crFile, "'v1.0.0'", "'v1.1.0'", 1); files["apps/web.yaml"] != want {
		t.Fatalf("file\n%q\nwant\n%q", files["apps/web.yaml"], want)
	}
	if files["apps/api.yaml"] != other || len(head.ParentHashes) != 1 || head.ParentHashes[0].String() != base {
		t.Fatalf("other file changed or history rewritten: parents %v", head.ParentHashes)
	}
	if strings.Contains(head.Message, password) || head.Message != "drive: web v1.0.0 -> v1.1.0\n" {
		t.Fatalf("message %q", head.Message)
	}
	// Again: nothing to commit.
	res, err = c.Commit(ctx, change(webCR, "ghcr.io/hanzo/web:v1.1.0", "again"))
	if err != nil || res.Commit != "" {
		t.Fatalf("second write %+v %v", res, err)
	}
	// A rollback (the plane's, the upgrade's revert) puts the old image back: the file is
	// byte for byte the original, and a repeat is no commit, its Parent the head that
	// already names it.
	back := change(webCR, "ghcr.io/hanzo/web:v1.0.0", "rollback apps/web to v1.0.0\n")
	back.MoveRepository = true
	res, err = c.Commit(ctx, back)
	if err != nil {
		t.Fatal(err)
	}
	head, files = headOf(t, g)
	if res.Commit != head.Hash.String() || files["apps/web.yaml"] != crFile {
		t.Fatalf("rollback: %+v head %s file\n%q", res, head.Hash, files["apps/web.yaml"])
	}
	if again, err := c.Commit(ctx, back); err != nil || again.Commit != "" || again.Parent != head.Hash.String() {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if _, err := c.Commit(ctx, change(webCR, "ghcr.io/hanzo/web@sha256:00", "m")); err == nil {
		t.Fatal("a digest reference was accepted")
	}
	// Errors name the object and the file, never the token.
	_, err = c.Commit(ctx, change(image.Object{APIVersion: "hanzo.ai/v1", Kind: "Service", Namespace: "apps", Name: "gone"}, "ghcr.io/hanzo/web:v1.1.0", "m"))
	if !errors.Is(err, image.ErrCRNotFound) || !strings.Contains(err.Error(), "Service.hanzo.ai apps/gone") {
		t.Fatalf("missing CR: %v", err)
	}
	_, err = c.Commit(ctx, change(webCR, "ghcr.io/other/web:v1.1.0", "m"))
	if !errors.Is(err, image.ErrRepositoryChange) || !strings.Contains(err.Error(), "apps/web.yaml") || strings.Contains(err.Error(), password) {
		t.Fatalf("repository change: %v", err)
	}
	// The file moved between the lookup and the write: the edit, re-checked on the bytes
	// being written, refuses rather than writing another object's file.
	stale := &image.CRWriter{Writer: w, Branch: "main"}
	moved := change(webCR, "ghcr.io/hanzo/web:v1.2.0", "m")
	moved.File = "apps/api.yaml"
	_, err = stale.Commit(ctx, moved)
	if !errors.Is(err, image.ErrCRNotFound) || !strings.Contains(err.Error(), "apps/api.yaml") {
		t.Fatalf("stale path: %v", err)
	}
	if h, _ := headOf(t, g); h.Hash != head.Hash {
		t.Fatal("a refused change was committed")
	}
}

// change is the source.CRImage of cr's image, as the drive loop commits it.
func change(cr image.Object, img, message string) source.CRImage {
	return source.CRImage{APIVersion: cr.APIVersion, Kind: cr.Kind, Namespace: cr.Namespace, Name: cr.Name, Image: img, Message: message}
}

// ghTree reads the fake's branch as a source.Source, as the sweep's GitHub source would.
type ghTree struct{ g *githubtest.GitData }

func (s ghTree) Head(context.Context) (string, error) { return s.g.Refs["heads/main"], nil }
func (s ghTree) Snapshot(_ context.Context, rev string) (*source.Snapshot, error) {
	snap := &source.Snapshot{Revision: rev}
	for p, d := range s.g.Files(rev) {
		if source.IsManifest(p) {
			snap.Files = append(snap.Files, source.File{Path: p, Data: []byte(d)})
		}
	}
	return snap, nil
}

// TestCRWriterGitHub: the same commit through the GitHub git data API (the write tests'
// fake, which refuses a non-fast-forward ref update), raced once by another writer.
func TestCRWriterGitHub(t *testing.T) {
	const token = "ghp-crfile-5a5a5a"
	g, srv := githubtest.NewGitData(t, token, map[string]string{"apps/web.yaml": crFile, "apps/db.yaml": "kind: SQL\n"})
	base := g.Refs["heads/main"]
	w, err := github.NewWriter(source.Static(source.NewToken(token)), github.Options{BaseURL: srv.URL, Repository: "o/r", RetryMax: 1},
		source.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 4 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g.OnCommit = func(g *githubtest.GitData) {
		g.CommitAs("main", "human edit", map[string]string{"apps/db.yaml": "kind: SQL\nspec: {}\n"})
	}
	c := &image.CRWriter{Source: ghTree{g}, Writer: w, Branch: "main"}
	res, err := c.Commit(context.Background(), change(webCR, "ghcr.io/hanzo/web:v1.1.0", "drive: web -> v1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	head := g.Refs["heads/main"]
	if res.Commit != head || res.Attempts != 2 || g.Refused != 1 || g.Forced != 0 || g.BadAuth != 0 {
		t.Fatalf("result %+v head %s refused %d forced %d badAuth %d", res, head, g.Refused, g.Forced, g.BadAuth)
	}
	if got := strings.Join(g.Log(head), ","); got != "drive: web -> v1.1.0,human edit,init" || !g.Descends(head, base) {
		t.Fatalf("history %s", got)
	}
	f := g.Files(head)
	if f["apps/web.yaml"] != strings.Replace(crFile, "'v1.0.0'", "'v1.1.0'", 1) || f["apps/db.yaml"] != "kind: SQL\nspec: {}\n" {
		t.Fatalf("files %q", f)
	}
	for p, bs := range g.Bodies {
		for _, b := range bs {
			if strings.Contains(b, token) {
				t.Fatalf("token in the body of %s", p)
			}
		}
	}
}

// TestDeclaresIn: the finder's view of a file's namespaces (a List's items count, a document
// without a namespace does not).
func TestDeclaresIn(t *testing.T) {
	snap := &source.Snapshot{Revision: "abc", Files: []source.File{
		{Path: "a.yaml", Data: []byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: org-a}}\n")},
		{Path: "b.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: y, namespace: org-b}\n")},
	}}
	for _, c := range []struct {
		path, ns string
		want     bool
	}{{"a.yaml", "org-a", true}, {"a.yaml", "org-b", false}, {"b.yaml", "org-b", true}, {"b.yaml", "org-a", false}, {"b.yaml", "", true}, {"c.yaml", "org-a", false}} {
		if got := image.DeclaresIn(snap, c.path, c.ns, source.Limits{}); got != c.want {
			t.Errorf("%s in %q: %v", c.path, c.ns, got)
		}
	}
}
