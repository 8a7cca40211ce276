package gitclone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-logr/logr"
	"golang.org/x/crypto/ssh"

	"github.com/openuniverse/operator/source"
)

// WriterOptions configures a Writer.
type WriterOptions struct {
	// URL of the repository: https://, http:// (loopback or test servers), ssh:// or
	// git@host:path. It must not embed a password.
	URL string
	// Username for HTTPS basic authentication; "git" when empty. The password is the token.
	Username string
	// SSHKey is a PEM private key for ssh URLs and KnownHosts the accepted host keys
	// (known_hosts lines); both are required with ssh. SSHKeyFile and KnownHostsFile are
	// read instead when the bytes are empty.
	SSHKey, KnownHosts         []byte
	SSHKeyFile, KnownHostsFile string
	// Timeout bounds one attempt (clone or fetch, edit, push); 2 minutes when zero.
	Timeout time.Duration
	// Retry bounds the fetch-reapply-push loop; zero means source.DefaultRetry.
	Retry source.RetryPolicy
}

// Writer commits and pushes source.Changes to a git server with go-git, in memory: each
// write clones the branch (depth 1), applies the edit, commits and pushes without force;
// when the push is refused because the branch moved, it fetches the new head, resets onto it,
// re-applies the edit and pushes again, with jittered backoff, a bounded number of times.
type Writer struct {
	o     WriterOptions
	ep    *transport.Endpoint
	ssh   bool
	creds source.Credentials
}

var _ source.Writer = (*Writer)(nil)

// NewWriter returns a Writer. creds (the HTTPS password or token) may be nil for anonymous
// pushes; it is ignored for ssh URLs.
func NewWriter(creds source.Credentials, o WriterOptions) (*Writer, error) {
	if o.URL == "" {
		return nil, errors.New("git url is empty")
	}
	ep, err := endpoint(o.URL) // the read path's checks: no credential in the URL
	if err != nil {
		return nil, err
	}
	if source.NoCredentials(creds) {
		creds = nil
	}
	if o.Username == "" {
		o.Username = "git"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultOptions().Timeout
	}
	w := &Writer{o: o, ep: ep, creds: creds}
	switch ep.Protocol {
	case "http", "https", "file":
	case "ssh":
		w.ssh = true
		if (len(o.SSHKey) == 0 && o.SSHKeyFile == "") || (len(o.KnownHosts) == 0 && o.KnownHostsFile == "") {
			return nil, errors.New("git over ssh needs a private key and known_hosts")
		}
	default:
		return nil, fmt.Errorf("git url scheme %q is not supported", ep.Protocol)
	}
	return w, nil
}

// Write commits c and pushes it, re-applying c.Edit on the new head after a conflict.
func (w *Writer) Write(ctx context.Context, c source.Change) (source.Result, error) {
	if err := c.Validate(); err != nil {
		return source.Result{}, err
	}
	var signer *openpgp.Entity
	if len(c.SigningKey) > 0 {
		var err error
		if signer, err = source.SigningEntity(c.SigningKey, c.SigningPassphrase); err != nil {
			return source.Result{}, err
		}
	}
	var repo *git.Repository
	res, err := source.Retry(ctx, w.o.Retry, func(ctx context.Context, n int) (source.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
		defer cancel()
		if n > 1 {
			logr.FromContextOrDiscard(ctx).Info("Push refused, re-applying the edit on the new head", "url", w.display(), "branch", c.Target(), "attempt", n)
		}
		return w.attempt(ctx, &repo, c, signer)
	})
	if err != nil {
		return res, fmt.Errorf("write %s to %s: %w", strings.Join(c.Paths, ", "), w.display(), err)
	}
	return res, nil
}

// attempt reads the target branch's head (cloning on the first attempt, fetching after),
// applies the edit, commits and pushes.
//
//nolint:funlen // one attempt read top to bottom: head, edit, commit, push, each failure classed where it happens
func (w *Writer) attempt(ctx context.Context, repo **git.Repository, c source.Change, signer *openpgp.Entity) (source.Result, error) {
	target := c.Target()
	res := source.Result{Branch: target}
	from, err := w.startBranch(ctx, c)
	if err != nil {
		return res, err
	}
	if *repo == nil {
		if *repo, err = w.clone(ctx, from); err != nil {
			return res, err
		}
	} else if err := w.fetch(ctx, *repo, from); err != nil {
		return res, err
	}
	r := *repo
	head, err := r.Reference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, from), true)
	if err != nil {
		return res, fmt.Errorf("read head of %s: %w", from, err)
	}
	res.Parent = head.Hash().String()
	wt, err := r.Worktree()
	if err != nil {
		return res, err
	}
	local := plumbing.NewBranchReferenceName(target)
	if err := r.Storer.SetReference(plumbing.NewHashReference(local, head.Hash())); err != nil {
		return res, err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Branch: local, Force: true}); err != nil {
		return res, fmt.Errorf("check out %s: %w", from, err)
	}
	files, changed, err := source.ApplyEdit(c, func(p string) ([]byte, error) {
		f, err := wt.Filesystem.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s of %s", source.ErrFileNotFound, short(head.Hash()), from)
		}
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		return io.ReadAll(f)
	})
	if err != nil {
		return res, err
	}
	res.Changed = changed
	if len(changed) == 0 && from == target {
		return res, nil // nothing to commit: the branch already says it
	}
	if len(changed) > 0 {
		for _, p := range changed {
			if err := writeFile(wt, p, files[p]); err != nil {
				return res, err
			}
			if _, err := wt.Add(p); err != nil {
				return res, fmt.Errorf("stage %s: %w", p, err)
			}
		}
		author := c.Author
		if author.Name == "" || author.Email == "" {
			author = source.DefaultAuthor
		}
		sig := &object.Signature{Name: author.Name, Email: author.Email, When: time.Now()}
		sha, err := wt.Commit(c.Message, &git.CommitOptions{Author: sig, Committer: sig, SignKey: signer})
		if err != nil {
			return res, fmt.Errorf("commit: %w", err)
		}
		res.Commit = sha.String()
	} else {
		// A new push branch that needs no change still gets created at the base's head: it
		// says "nothing to do" to whoever reviews it. Nothing to commit.
		res.Commit = ""
		return res, nil
	}
	spec := config.RefSpec(fmt.Sprintf("%s:%s", local, plumbing.NewBranchReferenceName(target)))
	err = w.withAuth(ctx, func(auth transport.AuthMethod) error {
		return r.PushContext(ctx, &git.PushOptions{RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{spec}, Auth: auth})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if isConflict(err) {
			return res, fmt.Errorf("push to %s: %w: %v", target, source.ErrConflict, err)
		}
		if authFailed(err) {
			return res, fmt.Errorf("push to %s: %w", target, err)
		}
		// Servers do not all report a lost ref lock cleanly: look at where the branch is.
		now, lerr := w.remoteHead(ctx, target)
		switch {
		case lerr != nil:
		case now == res.Commit:
			return res, nil // it landed; only the report was lost
		case now != head.Hash().String() && (from == target || now != ""):
			return res, fmt.Errorf("push to %s: %w: %v", target, source.ErrConflict, err)
		}
		return res, fmt.Errorf("push to %s: %w", target, err)
	}
	return res, nil
}

// remoteHead returns the commit branch points to on the remote, "" when it does not exist.
func (w *Writer) remoteHead(ctx context.Context, branch string) (string, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{w.o.URL}})
	var refs []*plumbing.Reference
	err := w.withAuth(ctx, func(auth transport.AuthMethod) error {
		var err error
		refs, err = rem.ListContext(ctx, &git.ListOptions{Auth: auth})
		return err
	})
	if err != nil {
		return "", err
	}
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName(branch) {
			return r.Hash().String(), nil
		}
	}
	return "", nil
}

// startBranch is the branch the commit is built on: the push branch when it exists on the
// remote, else the base branch.
func (w *Writer) startBranch(ctx context.Context, c source.Change) (string, error) {
	if c.Target() == c.Branch {
		return c.Branch, nil
	}
	head, err := w.remoteHead(ctx, c.PushBranch)
	if err != nil {
		return "", fmt.Errorf("ls-remote %s: %w", w.display(), err)
	}
	if head != "" {
		return c.PushBranch, nil
	}
	return c.Branch, nil
}

func (w *Writer) clone(ctx context.Context, branch string) (*git.Repository, error) {
	var repo *git.Repository
	err := w.withAuth(ctx, func(auth transport.AuthMethod) error {
		var err error
		repo, err = git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{
			URL:           w.o.URL,
			Auth:          auth,
			RemoteName:    git.DefaultRemoteName,
			ReferenceName: plumbing.NewBranchReferenceName(branch),
			SingleBranch:  true,
			Depth:         1,
			Tags:          git.NoTags,
			NoCheckout:    true,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("clone %s: %w", branch, err)
	}
	return repo, nil
}

func (w *Writer) fetch(ctx context.Context, repo *git.Repository, branch string) error {
	spec := config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", branch, git.DefaultRemoteName, branch))
	err := w.withAuth(ctx, func(auth transport.AuthMethod) error {
		return repo.FetchContext(ctx, &git.FetchOptions{RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{spec}, Auth: auth, Depth: 1, Tags: git.NoTags})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetch %s: %w", branch, err)
	}
	return nil
}

// isConflict reports whether a push error means the remote branch moved: go-git's own
// fast-forward check, or the server's refusal (non-fast-forward, fetch first, a ref lock
// another push held or moved).
func isConflict(err error) bool {
	if errors.Is(err, git.ErrForceNeeded) || errors.Is(err, git.ErrNonFastForwardUpdate) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"non-fast-forward", "fetch first", "cannot lock ref", "failed to update ref", "stale info", "failed to lock", "reference already exists"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func writeFile(wt *git.Worktree, p string, data []byte) error {
	f, err := wt.Filesystem.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	return f.Close()
}

func (w *Writer) withAuth(ctx context.Context, op func(transport.AuthMethod) error) error {
	auth, tok, err := w.auth()
	if err != nil {
		return err
	}
	err = op(auth)
	if err == nil || w.ssh || w.creds == nil || !authFailed(err) {
		return tok.Scrub(err)
	}
	fresh, rerr := w.creds.Reload()
	if rerr != nil || fresh == tok {
		return tok.Scrub(err)
	}
	logr.FromContextOrDiscard(ctx).Info("Git server refused the token, retrying with the re-read one", "url", w.display())
	auth, tok, err = w.auth()
	if err != nil {
		return err
	}
	return tok.Scrub(op(auth))
}

func (w *Writer) auth() (transport.AuthMethod, source.Token, error) {
	if w.ssh {
		user := w.ep.User
		if user == "" {
			user = "git"
		}
		key, hosts := w.o.SSHKey, w.o.KnownHosts
		var err error
		if len(key) == 0 {
			if key, err = os.ReadFile(w.o.SSHKeyFile); err != nil {
				return nil, source.Token{}, fmt.Errorf("read ssh key: %w", err)
			}
		}
		keys, err := gitssh.NewPublicKeys(user, key, "")
		if err != nil {
			return nil, source.Token{}, errors.New("ssh key does not parse") // never echo key material
		}
		if len(hosts) == 0 {
			if hosts, err = os.ReadFile(w.o.KnownHostsFile); err != nil {
				return nil, source.Token{}, fmt.Errorf("read known_hosts: %w", err)
			}
		}
		cb, err := knownHostsCallback(hosts)
		if err != nil {
			return nil, source.Token{}, err
		}
		keys.HostKeyCallback = cb
		return keys, source.Token{}, nil
	}
	if w.creds == nil {
		return nil, source.Token{}, nil
	}
	tok := w.creds.Token()
	return &githttp.BasicAuth{Username: w.o.Username, Password: tok.Reveal()}, tok, nil
}

// knownHostsCallback checks host keys against known_hosts bytes (written to a private temp
// file, which is what x/crypto's knownhosts reads).
func knownHostsCallback(hosts []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "universe-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.Write(hosts); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cb, err := gitssh.NewKnownHostsCallback(f.Name())
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	return cb, nil
}

func (w *Writer) display() string {
	ep := *w.ep
	ep.User, ep.Password = "", ""
	return ep.String()
}

func short(h plumbing.Hash) string { return h.String()[:12] }
