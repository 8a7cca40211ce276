package gitclone

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/openuniverse/operator/source"
)

// pushRef commits files on top of main and pushes the commit to the server's ref
// (refs/heads/feature, refs/pull/7/head, ...), leaving main where it is.
func pushRef(t testing.TB, srv *gittestserver.GitServer, ref string, files map[string]string) string {
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
	h, err := wt.Commit("preview "+ref, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	spec := config.RefSpec("+refs/heads/main:" + ref)
	if err := repo.Push(&git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{spec}}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func data(s *source.Snapshot) map[string]string {
	out := map[string]string{}
	for _, f := range s.Files {
		out[f.Path] = string(f.Data)
	}
	return out
}

const (
	featureA = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\ndata: {feature: \"1\"}\n"
	pullB    = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\ndata: {pull: \"7\"}\n"
)

func TestResolvePreviewRefs(t *testing.T) {
	srv, reqs, url := httpServer(t)
	tf, _ := tokenFile(t, password)
	s, err := New(tf, Options{URL: url, Branch: "main", Path: "crs", CacheDir: t.TempDir(), Username: user})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	main1, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Snapshot(ctx, main1)
	if err != nil {
		t.Fatal(err)
	}
	feature := pushRef(t, srv, "refs/heads/feature", map[string]string{"crs/a.yaml": featureA})
	pull := pushRef(t, srv, "refs/pull/7/head", map[string]string{"crs/nested/b.yml": pullB})
	reqs.take()

	// A branch name: one ls-remote, then one depth-1 fetch of that ref alone.
	got, err := s.Resolve(ctx, "feature")
	if err != nil || got != feature {
		t.Fatalf("Resolve(feature) = %s, %v; want %s", got, err, feature)
	}
	if diff := cmp.Diff([]string{"GET refs", "GET refs", "POST git-upload-pack"}, reqs.take()); diff != "" {
		t.Errorf("Resolve(feature) requests (-want +got):\n%s", diff)
	}
	snap, err := s.Snapshot(ctx, feature)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := reqs.take(); len(reqs) != 0 {
		t.Errorf("Snapshot of a resolved revision made requests: %v", reqs)
	}
	if snap.Files[0].Path != "crs/a.yaml" || string(snap.Files[0].Data) != featureA {
		t.Errorf("Snapshot(feature) a.yaml = %q", snap.Files[0].Data)
	}
	// Only the changed file was read anew; the others came from the cache.
	if snap.Refetched != 1 {
		t.Errorf("Snapshot(feature) Refetched = %d, want 1", snap.Refetched)
	}

	// A full ref (GitHub's and Gitea's pull request head).
	if got, err = s.Resolve(ctx, "refs/pull/7/head"); err != nil || got != pull {
		t.Fatalf("Resolve(refs/pull/7/head) = %s, %v; want %s", got, err, pull)
	}
	snap, err = s.Snapshot(ctx, pull)
	if err != nil {
		t.Fatal(err)
	}
	if d := data(snap); d["crs/nested/b.yml"] != pullB || d["crs/a.yaml"] != fixture["crs/a.yaml"] {
		t.Errorf("Snapshot(refs/pull/7/head) = %v", d)
	}

	// A SHA the clone holds is returned as is, without a request; a SHA only a remote
	// ref points at is fetched through that ref.
	reqs.take()
	if got, err = s.Resolve(ctx, feature); err != nil || got != feature {
		t.Fatalf("Resolve(%s) = %s, %v", feature, got, err)
	}
	if reqs := reqs.take(); len(reqs) != 0 {
		t.Errorf("Resolve of a held SHA made requests: %v", reqs)
	}
	other := pushRef(t, srv, "refs/merge-requests/3/head", map[string]string{"crs/e.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: e}\n"})
	if got, err = s.Resolve(ctx, other); err != nil || got != other {
		t.Fatalf("Resolve(advertised SHA %s) = %s, %v", other, got, err)
	}
	if _, err := s.Snapshot(ctx, other); err != nil {
		t.Fatal(err)
	}

	// The followed branch is untouched: its ref in the clone, its head, its snapshot.
	ref, err := s.repo.Reference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, "main"), true)
	if err != nil || ref.Hash().String() != main1 {
		t.Errorf("refs/remotes/origin/main = %v, %v; want %s", ref, err, main1)
	}
	if head, err := s.Head(ctx); err != nil || head != main1 {
		t.Errorf("Head() = %s, %v; want %s", head, err, main1)
	}
	again, err := s.Snapshot(ctx, main1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(data(base), data(again)); diff != "" {
		t.Errorf("followed branch snapshot changed (-want +got):\n%s", diff)
	}

	// The sweep's next fetch of the followed branch neither breaks nor prunes the
	// preview revisions, and a moved branch resolves to its new head.
	main2 := push(t, srv, map[string]string{"crs/d.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: d}\n"})
	if head, err := s.Head(ctx); err != nil || head != main2 {
		t.Fatalf("Head() after a push = %s, %v; want %s", head, err, main2)
	}
	if _, err := s.Snapshot(ctx, main2); err != nil {
		t.Fatal(err)
	}
	if snap, err := s.Snapshot(ctx, pull); err != nil || data(snap)["crs/nested/b.yml"] != pullB {
		t.Errorf("Snapshot(pull) after the followed branch's fetch: %v", err)
	}
	feature2 := pushRef(t, srv, "refs/heads/feature", map[string]string{"crs/a.yaml": featureA + "# again\n"})
	if got, err = s.Resolve(ctx, "feature"); err != nil || got != feature2 {
		t.Errorf("Resolve(feature) after a push = %s, %v; want %s", got, err, feature2)
	}
	if snap, err := s.Snapshot(ctx, feature); err != nil || data(snap)["crs/a.yaml"] != featureA {
		t.Errorf("Snapshot(old feature head) after the branch moved: %v", err)
	}

	// Refs that do not exist are named, with the repository, never with the password.
	for _, bad := range []string{"nope", "refs/pull/99/head", strings.Repeat("ab", 20)} {
		_, err := s.Resolve(ctx, bad)
		if err == nil {
			t.Errorf("Resolve(%s) succeeded", bad)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, bad) || !strings.Contains(msg, "/repo.git") || strings.Contains(msg, password) {
			t.Errorf("Resolve(%s) error = %q; want the ref and the repository, not the password", bad, msg)
		}
		t.Logf("Resolve(%s): %v", bad, err)
	}
}
