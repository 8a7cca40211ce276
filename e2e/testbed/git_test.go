package testbed_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestGitServer proves the local git server: a pushed commit is cloned with go-git over
// HTTP with basic auth and over SSH with the authorized key and known_hosts, and clones
// without (or with wrong) credentials fail.
func TestGitServer(t *testing.T) {
	g, err := testbed.NewGitServer("", "git-user", "s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(); os.RemoveAll(g.Root()) })

	sha, err := g.Commit("universe.git", "main", "add a service", map[string][]byte{
		"apps/web.yaml": []byte("kind: Service\n"),
	})
	if err != nil {
		t.Fatal(err)
	}

	knownHostsFile := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(knownHostsFile, g.KnownHosts, 0o600); err != nil {
		t.Fatal(err)
	}
	hostKeys, err := knownhosts.New(knownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(g.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	_, strangerPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := ssh.NewSignerFromKey(strangerPriv)
	if err != nil {
		t.Fatal(err)
	}
	sshAuth := func(s ssh.Signer) transport.AuthMethod {
		return &gitssh.PublicKeys{User: "git", Signer: s, HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: hostKeys}}
	}

	cases := map[string]struct {
		url     string
		auth    transport.AuthMethod
		wantErr bool
	}{
		"http with basic auth": {url: g.HTTPURL("universe.git"), auth: &githttp.BasicAuth{Username: "git-user", Password: "s3cret-pass"}},
		"http without auth":    {url: g.HTTPURL("universe.git"), wantErr: true},
		"http wrong password":  {url: g.HTTPURL("universe.git"), auth: &githttp.BasicAuth{Username: "git-user", Password: "nope"}, wantErr: true},
		"ssh with the key":     {url: g.SSHURL("universe.git"), auth: sshAuth(signer)},
		"ssh without a key":    {url: g.SSHURL("universe.git"), auth: &gitssh.Password{User: "git", HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: hostKeys}}, wantErr: true},
		"ssh with another key": {url: g.SSHURL("universe.git"), auth: sshAuth(stranger), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := gogit.PlainClone(t.TempDir(), false, &gogit.CloneOptions{
				URL: tc.url, Auth: tc.auth, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true, Depth: 1,
			})
			if tc.wantErr {
				if err == nil {
					t.Fatal("clone succeeded, want an authentication error")
				}
				return
			}
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			head, err := r.Head()
			if err != nil {
				t.Fatal(err)
			}
			if head.Hash().String() != sha {
				t.Errorf("cloned head %s, want pushed commit %s", head.Hash(), sha)
			}
		})
	}
}

// TestGitServerBulkCommit: a commit of more files than Commit stages one by one (the bench's
// 10 000-object corpora) holds every file, and a second one changes, adds and deletes some.
func TestGitServerBulkCommit(t *testing.T) {
	g, err := testbed.NewGitServer("", "git-user", "s3cret-pass")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(); os.RemoveAll(g.Root()) })
	files := map[string][]byte{}
	for i := range 2500 {
		files[fmt.Sprintf("crs/%02d/cm-%04d.yaml", i/100, i)] = fmt.Appendf(nil, "kind: ConfigMap # %d\n", i)
	}
	if _, err := g.Commit("bulk.git", "main", "bulk", files); err != nil {
		t.Fatal(err)
	}
	next := map[string][]byte{}
	for p, data := range files {
		next[p] = data
	}
	next["crs/00/cm-0000.yaml"] = []byte("kind: ConfigMap # changed\n")
	next["crs/00/cm-0001.yaml"] = nil
	next["crs/new.yaml"] = []byte("kind: Namespace\n")
	sha, err := g.Commit("bulk.git", "main", "bulk again", next)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gogit.PlainClone(t.TempDir(), false, &gogit.CloneOptions{URL: g.HTTPURL("bulk.git"),
		Auth: &githttp.BasicAuth{Username: "git-user", Password: "s3cret-pass"}, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := tree.Files().ForEach(func(f *object.File) error {
		s, err := f.Contents()
		got[f.Name] = s
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2500 {
		t.Errorf("%d files at the head, want 2500 (one deleted, one added)", len(got))
	}
	if got["crs/00/cm-0000.yaml"] != "kind: ConfigMap # changed\n" || got["crs/new.yaml"] != "kind: Namespace\n" || got["crs/24/cm-2499.yaml"] != "kind: ConfigMap # 2499\n" {
		t.Errorf("head contents: changed %q, added %q, kept %q", got["crs/00/cm-0000.yaml"], got["crs/new.yaml"], got["crs/24/cm-2499.yaml"])
	}
	if _, ok := got["crs/00/cm-0001.yaml"]; ok {
		t.Error("the deleted file is still at the head")
	}
}
