package gitclone

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/openuniverse/operator/source"
)

// Options configures a git source.
type Options struct {
	// URL of the repository: https://…, ssh://…, git@host:path, or file://.
	// It must not embed a password; use the token file.
	URL string
	// Branch is the branch whose head is followed.
	Branch string
	// Path is the directory read, recursively; empty for the whole repository.
	Path string
	// CacheDir holds the clones; empty means a directory under os.TempDir.
	CacheDir string
	// Username for HTTPS basic authentication; the password is the token.
	Username string
	// SSHKeyFile is the private key for ssh URLs.
	SSHKeyFile string
	// KnownHostsFile lists the accepted host keys for ssh URLs; required
	// with SSH, there is no "accept any host key" mode.
	KnownHostsFile string
	// Timeout bounds one ls-remote, clone or fetch.
	Timeout time.Duration
	// MaxFileBytes is the largest file read; larger ones are listed as
	// refused, unread. 0 means source.DefaultFileBytes.
	MaxFileBytes int64
}

// DefaultOptions returns the defaults BindFlags registers.
func DefaultOptions() Options {
	return Options{Branch: "main", Username: "git", Timeout: 2 * time.Minute}
}

// BindFlags registers the git source flags on fs, with the values already in
// o as defaults (start from DefaultOptions).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "git-url", o.URL, "Repository URL (https://, ssh:// or git@host:path); never with a password in it.")
	fs.StringVar(&o.Branch, "git-branch", o.Branch, "Branch to follow.")
	fs.StringVar(&o.Path, "git-path", o.Path, "Directory of the repository to read, recursively; empty for all of it.")
	fs.StringVar(&o.CacheDir, "git-cache-dir", o.CacheDir, "Directory for the shallow clone; empty for one under the temp dir.")
	fs.StringVar(&o.Username, "git-username", o.Username, "HTTPS user name; the token file holds the password or token.")
	fs.StringVar(&o.SSHKeyFile, "git-ssh-key-file", o.SSHKeyFile, "Private key file for ssh URLs.")
	fs.StringVar(&o.KnownHostsFile, "git-known-hosts-file", o.KnownHostsFile, "known_hosts file for ssh URLs (required with ssh).")
	fs.DurationVar(&o.Timeout, "git-timeout", o.Timeout, "Timeout of one ls-remote, clone or fetch.")
}

// Source is a source.Source over a go-git clone.
type Source struct {
	o     Options
	ep    *transport.Endpoint
	ssh   bool
	creds source.Credentials
	dir   string // the bare clone
	ref   plumbing.ReferenceName
	path  string

	// mu serialises Head, Snapshot and Resolve and guards the fields below.
	mu   sync.Mutex
	last *source.Snapshot
	seen map[string]bool // blob SHAs of the last snapshot
	// repo is the clone, open since the last sync: opening it again reads every pack
	// index each time.
	repo *git.Repository
}

var _ source.Source = (*Source)(nil)

// New returns a Source. creds, the HTTPS password or token, may be nil for
// anonymous access; it is ignored for ssh URLs. Head and Snapshot log through
// the logr.Logger in their context, if any.
func New(creds source.Credentials, o Options) (*Source, error) {
	if o.URL == "" {
		return nil, errors.New("git url is empty")
	}
	ep, err := endpoint(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Branch == "" {
		return nil, errors.New("git branch is empty")
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
	s := &Source{o: o, ep: ep, creds: creds, ref: plumbing.NewBranchReferenceName(o.Branch), path: source.CleanPath(o.Path)}
	switch ep.Protocol {
	case "http":
		if creds != nil && !source.Loopback(ep.Host) {
			return nil, errors.New("git url: a token goes only over https (plain http only to a loopback host)")
		}
	case "https", "file":
	case "ssh":
		s.ssh = true
		if o.SSHKeyFile == "" || o.KnownHostsFile == "" {
			return nil, errors.New("git over ssh needs a key file and a known_hosts file")
		}
	default:
		return nil, fmt.Errorf("git url scheme %q is not supported", ep.Protocol)
	}
	cache := o.CacheDir
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "universe-operator-git")
	}
	sum := sha256.Sum256([]byte(s.display() + "\x00" + o.Branch))
	s.dir = filepath.Join(cache, hex.EncodeToString(sum[:8]))
	return s, nil
}

// Head lists the remote's references (ls-remote) and returns the branch's
// commit. It transfers no objects.
func (s *Source) Head(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	refs, err := s.list(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range refs {
		if r.Name() == s.ref {
			return r.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("ls-remote %s: branch %s not found", s.display(), s.o.Branch)
}

// Snapshot returns the manifest files below the configured path at rev. A
// revision already in the cache (the last one read, or any commit the clone
// holds) is read without contacting the server.
func (s *Source) Snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.last.Revision == rev {
		again := *s.last
		again.Refetched = 0
		return &again, nil
	}
	hash := plumbing.NewHash(rev)
	if hash.IsZero() || hash.String() != rev {
		return nil, fmt.Errorf("snapshot %s: revision %q is not a commit sha", s.display(), rev)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	repo, err := s.sync(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s at %s: %w", s.display(), rev, err)
	}
	snap, err := s.read(repo, hash)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s at %s: %w", s.display(), rev, err)
	}
	seen := make(map[string]bool, len(snap.Files))
	for _, f := range snap.Files {
		if !s.seen[f.BlobSHA] && !seen[f.BlobSHA] {
			snap.Refetched++
		}
		seen[f.BlobSHA] = true
	}
	s.last, s.seen = snap, seen
	return snap, nil
}

// sync makes sure the clone holds hash: open, else shallow clone; fetch if
// the commit is missing. A clone that cannot be fetched into is replaced.
func (s *Source) sync(ctx context.Context, hash plumbing.Hash) (*git.Repository, error) {
	repo, err := s.repo, error(nil)
	if repo == nil {
		repo, err = git.PlainOpen(s.dir)
	}
	s.repo = nil // set again once it holds hash
	if err == nil {
		if _, err := repo.CommitObject(hash); err == nil {
			s.repo = repo
			return repo, nil
		}
		ferr := s.fetch(ctx, repo)
		if ferr == nil {
			return s.holding(repo, hash)
		}
		if authFailed(ferr) || ctx.Err() != nil {
			return nil, ferr
		}
		// Anything else (a damaged or oddly shallow clone): start over.
		logr.FromContextOrDiscard(ctx).Error(ferr, "Fetching into the cached clone failed, cloning again", "url", s.display())
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return nil, fmt.Errorf("clear cache: %w", err)
	}
	if repo, err = s.clone(ctx); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	return s.holding(repo, hash)
}

func (s *Source) holding(repo *git.Repository, hash plumbing.Hash) (*git.Repository, error) {
	s.repo = repo
	if _, err := repo.CommitObject(hash); err != nil {
		return nil, fmt.Errorf("branch %s moved past the revision, the next sweep reads the new head (a revision of another branch or ref is read after Resolve)", s.o.Branch)
	}
	return repo, nil
}

func (s *Source) clone(ctx context.Context) (*git.Repository, error) {
	logr.FromContextOrDiscard(ctx).V(1).Info("Cloning", "url", s.display(), "branch", s.o.Branch, "dir", s.dir)
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o700); err != nil {
		return nil, fmt.Errorf("create cache dir: %w", err)
	}
	var repo *git.Repository
	err := s.withAuth(ctx, func(auth transport.AuthMethod) error {
		_ = os.RemoveAll(s.dir)
		var err error
		repo, err = git.PlainCloneContext(ctx, s.dir, true, &git.CloneOptions{
			URL:           s.o.URL,
			Auth:          auth,
			RemoteName:    git.DefaultRemoteName,
			ReferenceName: s.ref,
			SingleBranch:  true,
			Depth:         1,
			Tags:          git.NoTags,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("clone: %w", err)
	}
	return repo, nil
}

func (s *Source) fetch(ctx context.Context, repo *git.Repository) error {
	logr.FromContextOrDiscard(ctx).V(1).Info("Fetching", "url", s.display(), "branch", s.o.Branch)
	spec := config.RefSpec(fmt.Sprintf("+%s:refs/remotes/%s/%s", s.ref, git.DefaultRemoteName, s.o.Branch))
	err := s.withAuth(ctx, func(auth transport.AuthMethod) error {
		return repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName,
			RemoteURL:  s.o.URL,
			RefSpecs:   []config.RefSpec{spec},
			Auth:       auth,
			Depth:      1,
			Tags:       git.NoTags,
		})
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetch: %w", err)
	}
	return nil
}

// read collects the manifest files below the path in the commit's tree. A blob the
// previous snapshot read (same SHA) is taken from it, neither looked up nor inflated
// again: one changed file in a 1 000-file repository reads one blob.
func (s *Source) read(repo *git.Repository, hash plumbing.Hash) (*source.Snapshot, error) {
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("read commit: %w", err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree: %w", err)
	}
	if s.path != "" {
		if tree, err = tree.Tree(s.path); err != nil {
			return nil, fmt.Errorf("path %s: %w", s.path, err)
		}
	}
	known := map[plumbing.Hash]source.File{}
	if s.last != nil {
		for _, f := range s.last.Files {
			if f.Refused == nil {
				known[plumbing.NewHash(f.BlobSHA)] = f
			}
		}
	}
	snap := &source.Snapshot{Revision: hash.String()}
	limit := source.Limits{FileBytes: s.o.MaxFileBytes}.MaxFileBytes()
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walk tree: %w", err)
		}
		if entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule {
			continue
		}
		p := name
		if s.path != "" {
			p = s.path + "/" + p
		}
		if !source.IsManifest(p) {
			continue
		}
		if f, ok := known[entry.Hash]; ok && entry.Mode != filemode.Symlink && f.Size <= limit {
			f.Path = p
			snap.Files = append(snap.Files, f)
			continue
		}
		file, err := readBlob(repo, p, entry, limit)
		if err != nil {
			return nil, err
		}
		snap.Files = append(snap.Files, file)
	}
	sort.Slice(snap.Files, func(i, j int) bool { return snap.Files[i].Path < snap.Files[j].Path })
	return snap, nil
}

// readBlob reads the file at path p of a tree entry, refusing links, non-files and files
// over limit by name.
func readBlob(repo *git.Repository, p string, entry object.TreeEntry, limit int64) (source.File, error) {
	file := source.File{Path: p, BlobSHA: entry.Hash.String()}
	switch {
	case entry.Mode == filemode.Symlink: // never followed, but reported
		file.Refused = source.ErrSymlink
		return file, nil
	case entry.Mode != filemode.Regular && entry.Mode != filemode.Executable && entry.Mode != filemode.Deprecated:
		file.Refused = source.ErrNotFile
		return file, nil
	}
	blob, err := repo.BlobObject(entry.Hash)
	if err != nil {
		return file, fmt.Errorf("read %s: %w", p, err)
	}
	file.Size = blob.Size
	if blob.Size > limit {
		file.Refused = source.TooLarge(blob.Size, limit)
		return file, nil
	}
	r, err := blob.Reader()
	if err != nil {
		return file, fmt.Errorf("read %s: %w", p, err)
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return file, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > limit {
		file.Refused = source.TooLarge(int64(len(data)), limit)
		data = nil
	}
	file.Data = data
	return file, nil
}

// withAuth runs op with the current credentials; if the server refuses
// them, it re-reads the token once and, if it changed, runs op again.
func (s *Source) withAuth(ctx context.Context, op func(transport.AuthMethod) error) error {
	auth, tok, err := s.auth()
	if err != nil {
		return err
	}
	err = op(auth)
	if err == nil || s.ssh || s.creds == nil || !authFailed(err) {
		return tok.Scrub(err)
	}
	log := logr.FromContextOrDiscard(ctx)
	fresh, rerr := s.creds.Reload()
	if rerr != nil {
		log.Error(rerr, "Re-reading the token after a refusal")
		return tok.Scrub(err)
	}
	if fresh == tok {
		log.Info("Git server refused the token and the token file holds no other", "url", s.display())
		return tok.Scrub(err)
	}
	log.Info("Git server refused the token, retrying with the re-read one", "url", s.display())
	auth, tok, err = s.auth()
	if err != nil {
		return err
	}
	return tok.Scrub(op(auth))
}

func authFailed(err error) bool {
	return errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed)
}

// auth builds the transport credentials afresh, so rotated keys and tokens
// are used without a restart.
func (s *Source) auth() (transport.AuthMethod, source.Token, error) {
	if s.ssh {
		user := s.ep.User
		if user == "" {
			user = "git"
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, s.o.SSHKeyFile, "")
		if err != nil {
			return nil, source.Token{}, fmt.Errorf("load ssh key %s: %w", s.o.SSHKeyFile, err)
		}
		cb, err := gitssh.NewKnownHostsCallback(s.o.KnownHostsFile)
		if err != nil {
			return nil, source.Token{}, fmt.Errorf("load known_hosts %s: %w", s.o.KnownHostsFile, err)
		}
		keys.HostKeyCallback = cb
		return keys, source.Token{}, nil
	}
	if s.creds == nil {
		return nil, source.Token{}, nil
	}
	tok := s.creds.Token()
	return &githttp.BasicAuth{Username: s.o.Username, Password: tok.Reveal()}, tok, nil
}

// display is the URL without any user information, for messages.
func (s *Source) display() string {
	ep := *s.ep
	ep.User, ep.Password = "", ""
	return ep.String()
}

// endpoint parses a git URL for reading and for writing alike, refusing the URLs that would
// carry a credential: an embedded password, or a user name over http(s).
func endpoint(url string) (*transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		// The value is not echoed: a mistyped url may carry credentials.
		return nil, errors.New("git url does not parse")
	}
	if ep.Password != "" {
		return nil, errors.New("git url must not embed a password: use the token file")
	}
	if (ep.Protocol == "http" || ep.Protocol == "https") && ep.User != "" {
		// A token pasted as the user name travels in every request and every log line.
		return nil, errors.New("git url must not embed a user name: set --git-username, and the token in the token file")
	}
	return ep, nil
}
