package gitclone_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
)

const (
	wUser = "bot"
	wPass = "pw-write-51f0c3"
)

type staticCreds struct{ tok source.Token }

func (s staticCreds) Token() source.Token           { return s.tok }
func (s staticCreds) Reload() (source.Token, error) { return s.tok, nil }

func gitServer(t *testing.T) *testbed.GitServer {
	t.Helper()
	g, err := testbed.NewGitServer("", wUser, wPass)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(); _ = os.RemoveAll(g.Root()) })
	return g
}

func fastRetry(attempts int) source.RetryPolicy {
	return source.RetryPolicy{Attempts: attempts, Base: 5 * time.Millisecond, Max: 40 * time.Millisecond}
}

func newWriter(t *testing.T, g *testbed.GitServer, attempts int) *gitclone.Writer {
	t.Helper()
	w, err := gitclone.NewWriter(staticCreds{source.NewToken(wPass)}, gitclone.WriterOptions{URL: g.HTTPURL("u.git"), Username: wUser, Retry: fastRetry(attempts)})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// replace returns an Edit replacing old with new in the file, an error when old is absent
// and the file does not already hold new.
func replace(old, new string) source.Edit {
	return func(p string, data []byte) ([]byte, error) {
		if bytes.Contains(data, []byte(new)) {
			return data, nil
		}
		if !bytes.Contains(data, []byte(old)) {
			return nil, fmt.Errorf("%q not found", old)
		}
		return bytes.Replace(data, []byte(old), []byte(new), 1), nil
	}
}

// history returns the commits of branch, newest first, and the files at its head.
func history(t *testing.T, g *testbed.GitServer, branch string) ([]*object.Commit, map[string]string) {
	t.Helper()
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: g.HTTPURL("u.git"), Auth: &githttp.BasicAuth{Username: wUser, Password: wPass},
		ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	var commits []*object.Commit
	_ = it.ForEach(func(c *object.Commit) error { commits = append(commits, c); return nil })
	c, _ := r.CommitObject(head.Hash())
	tree, _ := c.Tree()
	files := map[string]string{}
	_ = tree.Files().ForEach(func(f *object.File) error {
		s, _ := f.Contents()
		files[f.Name] = s
		return nil
	})
	return commits, files
}

const appYAML = "apiVersion: hanzo.ai/v1\r\nkind: Service\r\nmetadata:\r\n  name: app\r\nspec:\r\n  image:\r\n    repository: r/app\r\n    tag: \"v1.0.0\" # pinned\r\n"

func TestWriteCommitsOnlyTheEdit(t *testing.T) {
	g := gitServer(t)
	base, err := g.Commit("u.git", "main", "init", map[string][]byte{"crs/app.yaml": []byte(appYAML), "crs/other.yaml": []byte("x: 1\n")})
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, g, 3)
	ch := source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: replace(`"v1.0.0"`, `"v1.1.0"`),
		Message: "bump r/app v1.0.0 -> v1.1.0", Author: source.Signature{Name: "bumper", Email: "bumper@example.invalid"}}
	res, err := w.Write(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || res.Parent != base || res.Attempts != 1 || res.Branch != "main" {
		t.Fatalf("result %+v, want a commit on %s in one attempt", res, base)
	}
	commits, files := history(t, g, "main")
	if commits[0].Hash.String() != res.Commit || commits[0].Message != ch.Message || commits[0].Author.Name != "bumper" || len(commits[0].ParentHashes) != 1 || commits[0].ParentHashes[0].String() != base {
		t.Fatalf("head commit %v %q by %s, parents %v", commits[0].Hash, commits[0].Message, commits[0].Author.Name, commits[0].ParentHashes)
	}
	if want := strings.Replace(appYAML, "v1.0.0", "v1.1.0", 1); files["crs/app.yaml"] != want || files["crs/other.yaml"] != "x: 1\n" {
		t.Fatalf("files after write: %q", files)
	}
	// Idempotent: the same change again commits nothing.
	again, err := w.Write(context.Background(), ch)
	if err != nil || again.Commit != "" || again.Parent != res.Commit {
		t.Fatalf("second write: %+v, %v; want no commit on %s", again, err, res.Commit)
	}
}

func TestWriteErrorsAreTerminal(t *testing.T) {
	g := gitServer(t)
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"crs/app.yaml": []byte(appYAML)}); err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, g, 3)
	_, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/missing.yaml"}, Edit: replace("a", "b"), Message: "m"})
	if !errors.Is(err, source.ErrFileNotFound) || !strings.Contains(err.Error(), "crs/missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	res, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: replace("nope", "b"), Message: "m"})
	var ee *source.EditError
	if !errors.As(err, &ee) || ee.Path != "crs/app.yaml" || res.Attempts != 1 {
		t.Fatalf("edit error: %+v %v", res, err)
	}
	bad, err := gitclone.NewWriter(staticCreds{source.NewToken("wrong-secret-xyz")}, gitclone.WriterOptions{URL: g.HTTPURL("u.git"), Username: wUser})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Edit: replace("v1.0.0", "v2"), Message: "m"})
	if err == nil || strings.Contains(err.Error(), "wrong-secret-xyz") {
		t.Fatalf("bad token: %v", err)
	}
}

// TestWriteReappliesAfterConcurrentCommit: another writer pushes between this writer's fetch
// and its push (from inside the first Edit call); the push is refused, the edit re-applied on
// the new head, and both commits are on the branch.
func TestWriteReappliesAfterConcurrentCommit(t *testing.T) {
	g := gitServer(t)
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"crs/app.yaml": []byte(appYAML)}); err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, g, 4)
	var calls atomic.Int32
	edit := replace(`"v1.0.0"`, `"v1.1.0"`)
	ch := source.Change{Branch: "main", Paths: []string{"crs/app.yaml"}, Message: "bump", Edit: func(p string, data []byte) ([]byte, error) {
		if calls.Add(1) == 1 { // the race: a human commits an unrelated file now
			if _, err := g.Commit("u.git", "main", "unrelated", map[string][]byte{"docs/readme.md": []byte("hi\n")}); err != nil {
				return nil, err
			}
		}
		return edit(p, data)
	}}
	res, err := w.Write(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || calls.Load() != 2 {
		t.Fatalf("attempts %d, edit calls %d; want 2 and 2", res.Attempts, calls.Load())
	}
	commits, files := history(t, g, "main")
	if len(commits) != 3 || commits[0].Message != "bump" || commits[1].Message != "unrelated" {
		t.Fatalf("history: %v", messages(commits))
	}
	if files["docs/readme.md"] != "hi\n" || !strings.Contains(files["crs/app.yaml"], `"v1.1.0"`) {
		t.Fatalf("files: %q", files)
	}
}

// TestTwoWritersRaceOneBranch: two writers, each bumping its own file several times, push
// to the same branch at once; every commit lands, none is lost or forced over.
func TestTwoWritersRaceOneBranch(t *testing.T) {
	g := gitServer(t)
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"a.yaml": []byte("tag: a0\n"), "b.yaml": []byte("tag: b0\n")}); err != nil {
		t.Fatal(err)
	}
	const rounds = 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	var retried atomic.Int32
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWriter(t, g, 12)
			for i := 1; i <= rounds; i++ {
				res, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{name + ".yaml"},
					Edit: replace(fmt.Sprintf("tag: %s%d", name, i-1), fmt.Sprintf("tag: %s%d", name, i)), Message: fmt.Sprintf("%s%d", name, i)})
				if err != nil {
					errs <- err
					return
				}
				retried.Add(int32(res.Attempts - 1))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	commits, files := history(t, g, "main")
	if len(commits) != 1+2*rounds {
		t.Fatalf("%d commits, want %d: %v", len(commits), 1+2*rounds, messages(commits))
	}
	if files["a.yaml"] != fmt.Sprintf("tag: a%d\n", rounds) || files["b.yaml"] != fmt.Sprintf("tag: b%d\n", rounds) {
		t.Fatalf("files: %q", files)
	}
	t.Logf("%d commits landed, %d pushes were refused and re-applied", 2*rounds, retried.Load())
}

// TestWritePushBranch: the commit goes to a new push branch created from main; a second
// write builds on that branch (never forced), keeping a commit a human added to it.
func TestWritePushBranch(t *testing.T) {
	g := gitServer(t)
	base, err := g.Commit("u.git", "main", "init", map[string][]byte{"a.yaml": []byte("tag: v1\n")})
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, g, 3)
	res, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "bump", Paths: []string{"a.yaml"}, Edit: replace("tag: v1", "tag: v2"), Message: "v2"})
	if err != nil || res.Parent != base || res.Branch != "bump" {
		t.Fatalf("first: %+v %v", res, err)
	}
	if _, err := g.Commit("u.git", "bump", "human note", map[string][]byte{"note.md": []byte("review me\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(context.Background(), source.Change{Branch: "main", PushBranch: "bump", Paths: []string{"a.yaml"}, Edit: replace("tag: v2", "tag: v3"), Message: "v3"}); err != nil {
		t.Fatal(err)
	}
	commits, files := history(t, g, "bump")
	if got := messages(commits); strings.Join(got, ",") != "v3,human note,v2,init" {
		t.Fatalf("bump history %v", got)
	}
	if files["a.yaml"] != "tag: v3\n" || files["note.md"] != "review me\n" {
		t.Fatalf("files %q", files)
	}
	mainCommits, _ := history(t, g, "main")
	if len(mainCommits) != 1 {
		t.Fatalf("main moved: %v", messages(mainCommits))
	}
}

func TestWriteOverSSHSigned(t *testing.T) {
	g := gitServer(t)
	if _, err := g.Commit("u.git", "main", "init", map[string][]byte{"a.yaml": []byte("tag: v1\n")}); err != nil {
		t.Fatal(err)
	}
	ent, err := openpgp.NewEntity("bot", "", "bot@example.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	var armored bytes.Buffer
	if err := armorPrivate(&armored, ent); err != nil {
		t.Fatal(err)
	}
	w, err := gitclone.NewWriter(nil, gitclone.WriterOptions{URL: g.SSHURL("u.git"), SSHKey: g.ClientKey, KnownHosts: g.KnownHosts, Retry: fastRetry(2)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Write(context.Background(), source.Change{Branch: "main", Paths: []string{"a.yaml"}, Edit: replace("v1", "v2"), Message: "signed", SigningKey: armored.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	commits, _ := history(t, g, "main")
	if commits[0].Hash.String() != res.Commit || commits[0].PGPSignature == "" {
		t.Fatalf("head %v not the signed commit %s", commits[0].Hash, res.Commit)
	}
	if _, err := commits[0].Verify(armoredPublic(t, ent)); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
}

func messages(cs []*object.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = strings.TrimSpace(c.Message)
	}
	return out
}

func armorPrivate(w *bytes.Buffer, e *openpgp.Entity) error {
	aw, err := armor.Encode(w, openpgp.PrivateKeyType, nil)
	if err != nil {
		return err
	}
	if err := e.SerializePrivate(aw, nil); err != nil {
		return err
	}
	return aw.Close()
}

func armoredPublic(t *testing.T, e *openpgp.Entity) string {
	t.Helper()
	var b bytes.Buffer
	aw, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(aw); err != nil {
		t.Fatal(err)
	}
	_ = aw.Close()
	return b.String()
}
