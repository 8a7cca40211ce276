package testbed

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/gitkit"
	"github.com/fluxcd/pkg/gittestserver"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"
)

// GitServer is a local git server (fluxcd/pkg/gittestserver) serving repositories over HTTP
// with basic auth and over SSH with one authorized client key.
type GitServer struct {
	srv      *gittestserver.GitServer
	Username string
	Password string
	// ClientKey is the PEM private key of the only SSH client key the server accepts.
	ClientKey []byte
	// KnownHosts is a known_hosts line for the server's host key.
	KnownHosts []byte
}

// NewGitServer starts HTTP and SSH listeners on loopback, with repositories under root
// (a temp dir when empty).
func NewGitServer(root, username, password string) (*GitServer, error) {
	var srv *gittestserver.GitServer
	if root == "" {
		var err error
		if srv, err = gittestserver.NewTempGitServer(); err != nil {
			return nil, err
		}
	} else {
		srv = gittestserver.NewGitServer(root)
	}
	g := &GitServer{srv: srv, Username: username, Password: password}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	g.ClientKey = pem.EncodeToMemory(block)
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	srv.Auth(username, password).AutoCreate().KeyDir(filepath.Join(srv.Root(), ".keys"))
	srv.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if content != authorized {
			return nil, errors.New("unknown public key")
		}
		return &gitkit.PublicKey{Id: "testbed"}, nil
	})
	if err := srv.StartHTTP(); err != nil {
		return nil, fmt.Errorf("start git http server: %w", err)
	}
	if err := srv.ListenSSH(); err != nil {
		srv.StopHTTP()
		return nil, fmt.Errorf("listen git ssh server: %w", err)
	}
	go func() { _ = srv.StartSSH() }()
	if err := g.readKnownHosts(); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

func (g *GitServer) readKnownHosts() error {
	hostPub, err := os.ReadFile(filepath.Join(g.srv.Root(), ".keys", "gitkit.rsa.pub"))
	if err != nil {
		return fmt.Errorf("read git ssh host key: %w", err)
	}
	u, err := url.Parse(g.srv.SSHAddress())
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return err
	}
	g.KnownHosts = fmt.Appendf(nil, "[%s]:%s %s", host, port, hostPub)
	return nil
}

// Stop stops both listeners.
func (g *GitServer) Stop() {
	g.srv.StopHTTP()
	_ = g.srv.StopSSH()
}

// Root is the directory holding the bare repositories.
func (g *GitServer) Root() string { return g.srv.Root() }

// HTTPURL is the credential-free HTTP URL of repo (e.g. "universe.git").
func (g *GitServer) HTTPURL(repo string) string { return g.srv.HTTPAddress() + "/" + repo }

// SSHURL is the SSH URL of repo.
func (g *GitServer) SSHURL(repo string) string { return g.srv.SSHAddress() + "/" + repo }

// Commit writes files (path → content; nil content deletes the path) on branch of repo,
// creating the repository and branch when missing, pushes over HTTP and returns the new
// commit SHA.
func (g *GitServer) Commit(repo, branch, message string, files map[string][]byte) (string, error) {
	work, err := os.MkdirTemp("", "testbed-git-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	auth := &githttp.BasicAuth{Username: g.Username, Password: g.Password}
	ref := plumbing.NewBranchReferenceName(branch)
	r, err := gogit.PlainClone(work, false, &gogit.CloneOptions{URL: g.HTTPURL(repo), Auth: auth, ReferenceName: ref, SingleBranch: true})
	if err != nil {
		// an empty or missing repository: start a new history
		if r, err = gogit.PlainInit(work, false); err != nil {
			return "", err
		}
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.HTTPURL(repo)}}); err != nil {
			return "", err
		}
		if err := r.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref)); err != nil {
			return "", err
		}
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	if len(files) > bulkFiles {
		// go-git's Add computes the worktree status each time: one Add per file is
		// quadratic, and 10 000 files took hours. Write them all, then stage once.
		for p, data := range files {
			full := filepath.Join(work, filepath.FromSlash(p))
			if data == nil {
				if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
					return "", err
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(full, data, 0o644); err != nil {
				return "", err
			}
		}
		if err := wt.AddWithOptions(&gogit.AddOptions{All: true}); err != nil {
			return "", fmt.Errorf("add: %w", err)
		}
		return g.commitAndPush(r, wt, repo, ref, message)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(work, filepath.FromSlash(p))
		if files[p] == nil {
			if _, err := wt.Remove(p); err != nil {
				return "", fmt.Errorf("remove %s: %w", p, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return "", err
		}
		if _, err := wt.Add(p); err != nil {
			return "", fmt.Errorf("add %s: %w", p, err)
		}
	}
	return g.commitAndPush(r, wt, repo, ref, message)
}

// bulkFiles is the size of a commit past which Commit stages all files at once.
const bulkFiles = 2000

func (g *GitServer) commitAndPush(r *gogit.Repository, wt *gogit.Worktree, repo string, ref plumbing.ReferenceName, message string) (string, error) {
	sig := &object.Signature{Name: "testbed", Email: "testbed@example.invalid", When: time.Now()}
	sha, err := wt.Commit(message, &gogit.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	auth := &githttp.BasicAuth{Username: g.Username, Password: g.Password}
	refspec := config.RefSpec(fmt.Sprintf("%s:%s", ref, ref))
	if err := r.Push(&gogit.PushOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{refspec}}); err != nil {
		return "", fmt.Errorf("push %s: %w", repo, err)
	}
	return sha.String(), nil
}

// CommitDir commits every file under dir (recursively) to branch of repo.
func (g *GitServer) CommitDir(repo, branch, message, dir string) (string, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return "", err
	}
	return g.Commit(repo, branch, message, files)
}

// SetPassword changes the HTTP password the server accepts, as a credential rotation on a
// git host would; clients holding the old one are refused from now on.
func (g *GitServer) SetPassword(password string) {
	g.Password = password
	g.srv.Auth(g.Username, password)
}
