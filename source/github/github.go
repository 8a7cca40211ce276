package github

import (
	"bytes"
	"context"
	"crypto/sha1" //nolint:gosec // git object ids are SHA-1
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-github/v66/github"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/transport"
)

// DefaultBaseURL is the public GitHub API.
const DefaultBaseURL = "https://api.github.com/"

// Options configures a GitHub source.
type Options struct {
	// BaseURL is the REST API root of a GitHub-compatible host.
	BaseURL string
	// Repository is "owner/name".
	Repository string
	// Branch is the branch whose head is followed.
	Branch string
	// Path is the directory read, recursively; empty for the whole repository.
	Path string
	// Timeout bounds one HTTP attempt.
	Timeout time.Duration
	// RetryMax is how many times a failed request is retried; 0 never
	// retries. The other zero values mean the default.
	RetryMax int
	// MaxRetryAfter is the longest Retry-After honoured by waiting; a longer
	// one fails the request so the next sweep tries again.
	MaxRetryAfter time.Duration
	// Concurrency is how many blobs are fetched at once.
	Concurrency int
	// MaxFileBytes is the largest blob fetched; larger ones are listed as
	// refused, unread. 0 means source.DefaultFileBytes.
	MaxFileBytes int64
}

// DefaultOptions returns the defaults BindFlags registers.
func DefaultOptions() Options {
	return Options{
		BaseURL:       DefaultBaseURL,
		Branch:        "main",
		Timeout:       30 * time.Second,
		RetryMax:      4,
		MaxRetryAfter: 2 * time.Minute,
		Concurrency:   8,
	}
}

// BindFlags registers the GitHub source flags on fs, with the values already
// in o as defaults (start from DefaultOptions).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BaseURL, "github-api-url", o.BaseURL, "REST API root of GitHub or a GitHub-compatible host.")
	fs.StringVar(&o.Repository, "github-repository", o.Repository, "Repository to read, as owner/name.")
	fs.StringVar(&o.Branch, "github-branch", o.Branch, "Branch to follow.")
	fs.StringVar(&o.Path, "github-path", o.Path, "Directory of the repository to read, recursively; empty for all of it.")
	fs.DurationVar(&o.Timeout, "github-timeout", o.Timeout, "Timeout of one HTTP attempt.")
	fs.IntVar(&o.RetryMax, "github-retry-max", o.RetryMax, "Retries of a failed request.")
	fs.DurationVar(&o.MaxRetryAfter, "github-max-retry-after", o.MaxRetryAfter, "Longest Retry-After waited for; longer ones fail the sweep.")
	fs.IntVar(&o.Concurrency, "github-concurrency", o.Concurrency, "Blobs fetched at once.")
}

// Source is a source.Source over the GitHub REST API.
type Source struct {
	gh          *github.Client
	owner, repo string
	branch      string
	path        string
	concurrency int
	maxFile     int64
	creds       source.Credentials // nil: anonymous; for Scrub

	// mu serialises Head and Snapshot and guards the fields below.
	mu    sync.Mutex
	etag  string            // ETag of the last head answer
	head  string            // SHA of the last head answer
	blobs map[string][]byte // blob SHA → content, for the last snapshot
	last  *source.Snapshot
}

var _ source.Source = (*Source)(nil)

// New returns a Source. creds may be nil for anonymous access. Head and
// Snapshot log through the logr.Logger in their context, if any.
func New(creds source.Credentials, o Options) (*Source, error) {
	owner, repo, ok := strings.Cut(o.Repository, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("github repository %q: want owner/name", o.Repository)
	}
	if o.Branch == "" {
		return nil, errors.New("github branch is empty")
	}
	// Zero values take the defaults, so Options{Repository, Branch} works.
	d := DefaultOptions()
	if o.BaseURL == "" {
		o.BaseURL = d.BaseURL
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = d.MaxRetryAfter
	}
	if o.Concurrency < 1 {
		o.Concurrency = d.Concurrency
	}
	base, err := url.Parse(o.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		// The value is not echoed: a mistyped url may carry credentials.
		return nil, errors.New("github api url: want an absolute url such as " + DefaultBaseURL)
	}
	if base.User != nil {
		return nil, errors.New("github api url must not embed credentials: use the token file")
	}
	if base.Scheme != "https" && (base.Scheme != "http" || !source.Loopback(base.Hostname())) {
		return nil, errors.New("github api url must be https (plain http only to a loopback host)")
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}

	if source.NoCredentials(creds) {
		creds = nil
	}
	hc, err := newHTTPClient(o, creds, base.String())
	if err != nil {
		return nil, fmt.Errorf("github api url: %w", err)
	}
	gh := github.NewClient(hc)
	gh.BaseURL = base
	gh.UserAgent = "universe-operator-gitops"
	return &Source{
		gh:          gh,
		owner:       owner,
		repo:        repo,
		branch:      o.Branch,
		path:        source.CleanPath(o.Path),
		concurrency: o.Concurrency,
		maxFile:     source.Limits{FileBytes: o.MaxFileBytes}.MaxFileBytes(),
		blobs:       map[string][]byte{},
		creds:       creds,
	}, nil
}

// newHTTPClient is the one outbound client (source/transport): retries (outside) → the
// token, only to the API's origin, re-read once on a 401 → a pooled transport. A redirect to
// another host (GitHub's CDN) is followed without the token.
func newHTTPClient(o Options, creds source.Credentials, base string) (*http.Client, error) {
	hc, _, err := transport.New(base, transport.Auth{Bearer: creds}, transport.Options{
		Peer: "GitHub", Anonymous: true, Timeout: o.Timeout,
		RetryMax: o.RetryMax, RetryWaitMin: 500 * time.Millisecond, RetryWaitMax: 30 * time.Second,
		CheckRetry: checkRetry(o.MaxRetryAfter), Backoff: backoff,
		RequestLogHook: logRetry, ResponseLogHook: logResponse,
	})
	return hc, err
}

// logRetry logs every attempt after the first.
func logRetry(_ retryablehttp.Logger, req *http.Request, attempt int) {
	if attempt > 0 {
		logr.FromContextOrDiscard(req.Context()).Info("Retrying GitHub request",
			"method", req.Method, "path", req.URL.Path, "attempt", attempt)
	}
}

// logResponse logs each answer at debug level, with the rate limit left.
func logResponse(_ retryablehttp.Logger, resp *http.Response) {
	logr.FromContextOrDiscard(resp.Request.Context()).V(1).Info("GitHub response",
		"method", resp.Request.Method, "path", resp.Request.URL.Path, "status", resp.StatusCode,
		"rateRemaining", resp.Header.Get("X-RateLimit-Remaining"))
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Head returns the SHA of the branch head. After the first call it sends the
// previous ETag, and a 304 answer (which GitHub does not count against the
// rate limit) returns the previous SHA without further requests.
func (s *Source) Head(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sha, err := s.resolveHead(ctx)
	return sha, s.scrub(err)
}

// scrub removes the token from an error: go-github's errors carry the
// host's answer, which may echo what it was sent.
func (s *Source) scrub(err error) error {
	if s.creds == nil {
		return err
	}
	return s.creds.Token().Scrub(err)
}

func (s *Source) resolveHead(ctx context.Context) (string, error) {
	u := fmt.Sprintf("repos/%s/%s/commits/%s", url.PathEscape(s.owner), url.PathEscape(s.repo), escapeRef(s.branch))
	req, err := s.gh.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", s.ref(), err)
	}
	req.Header.Set("Accept", "application/vnd.github.sha")
	if s.etag != "" {
		req.Header.Set("If-None-Match", s.etag)
	}
	var body bytes.Buffer
	resp, err := s.gh.Do(ctx, req, &body)
	if resp != nil && resp.StatusCode == http.StatusNotModified && s.head != "" {
		return s.head, nil
	}
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", s.ref(), err)
	}
	sha := strings.TrimSpace(body.String())
	if !shaRE.MatchString(sha) {
		return "", fmt.Errorf("resolve %s: answer is not a commit sha", s.ref())
	}
	s.head, s.etag = sha, resp.Header.Get("ETag")
	return sha, nil
}

// Snapshot returns the manifest files below the configured path at rev.
// Blobs already held (by SHA) are not fetched again; Refetched counts those
// that were. Asking twice for the same rev makes no request.
func (s *Source) Snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !shaRE.MatchString(rev) {
		return nil, fmt.Errorf("snapshot %s: revision %q is not a commit sha", s.ref(), rev)
	}
	if s.last != nil && s.last.Revision == rev {
		again := *s.last
		again.Refetched = 0
		return &again, nil
	}
	snap, err := s.snapshot(ctx, rev)
	return snap, s.scrub(err)
}

func (s *Source) snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	entries, err := s.list(ctx, rev)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s at %s: %w", s.ref(), rev, err)
	}
	blobs, refetched, err := s.fetch(ctx, entries)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s at %s: %w", s.ref(), rev, err)
	}
	snap := &source.Snapshot{Revision: rev, Refetched: refetched}
	for _, e := range entries {
		f := source.File{Path: e.path, BlobSHA: e.sha, Size: e.size, Refused: e.refused}
		if e.refused == nil {
			f.Data = blobs[e.sha]
		}
		snap.Files = append(snap.Files, f)
	}
	// Keep only what the newest snapshot uses: memory stays bounded by the
	// size of the tree, and a file reverted later costs one fetch.
	s.blobs, s.last = blobs, snap
	return snap, nil
}

type entry struct {
	path, sha string
	size      int64
	refused   error // never fetched: a symlink, a submodule, over the size limit
}

// list returns the manifest blobs below the configured path at rev, sorted.
func (s *Source) list(ctx context.Context, rev string) ([]entry, error) {
	treeSHA, err := s.pathTree(ctx, rev)
	if err != nil {
		return nil, err
	}
	tree, _, err := s.gh.Git.GetTree(ctx, s.owner, s.repo, treeSHA, true)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", s.displayPath(), err)
	}
	if tree.GetTruncated() {
		return nil, fmt.Errorf("read tree of %s: listing truncated by the host, narrow the path", s.displayPath())
	}
	var out []entry
	for _, e := range tree.Entries {
		if e.GetType() == "tree" {
			continue
		}
		p := e.GetPath()
		if s.path != "" {
			p = s.path + "/" + p
		}
		if !source.IsManifest(p) {
			continue
		}
		en := entry{path: p, sha: e.GetSHA(), size: int64(e.GetSize())}
		switch {
		case e.GetMode() == "120000": // symlinks are never followed, but reported
			en.refused = source.ErrSymlink
		case e.GetType() != "blob": // a submodule
			en.refused = source.ErrNotFile
		case en.size > s.maxFile:
			en.refused = source.TooLarge(en.size, s.maxFile)
		}
		out = append(out, en)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// pathTree returns the SHA of the tree at the configured path: the commit
// itself for the root, else the entry found by listing the parent directory.
func (s *Source) pathTree(ctx context.Context, rev string) (string, error) {
	if s.path == "" {
		return rev, nil
	}
	parent, name := path.Split(s.path)
	_, dir, _, err := s.gh.Repositories.GetContents(ctx, s.owner, s.repo, strings.TrimSuffix(parent, "/"),
		&github.RepositoryContentGetOptions{Ref: rev})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", s.displayParent(parent), err)
	}
	for _, c := range dir {
		if c.GetName() == name && c.GetType() == "dir" {
			return c.GetSHA(), nil
		}
	}
	return "", fmt.Errorf("path %s: no such directory", s.path)
}

// fetch returns the content of every entry, from the cache or the host.
func (s *Source) fetch(ctx context.Context, entries []entry) (map[string][]byte, int, error) {
	blobs := make(map[string][]byte, len(entries))
	var missing []string
	for _, e := range entries {
		if e.refused != nil {
			continue
		}
		if _, seen := blobs[e.sha]; seen {
			continue
		}
		if b, ok := s.blobs[e.sha]; ok {
			blobs[e.sha] = b
			continue
		}
		blobs[e.sha] = nil
		missing = append(missing, e.sha)
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, sha := range missing {
		g.Go(func() error {
			b, _, err := s.gh.Git.GetBlobRaw(gctx, s.owner, s.repo, sha)
			if err != nil {
				return fmt.Errorf("fetch blob %s: %w", short(sha), err)
			}
			if got := blobSHA(b); got != sha {
				return fmt.Errorf("fetch blob %s: content hashes to %s", short(sha), short(got))
			}
			mu.Lock()
			blobs[sha] = b
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, 0, err
	}
	return blobs, len(missing), nil
}

func (s *Source) ref() string { return s.owner + "/" + s.repo + "@" + s.branch }

func (s *Source) displayPath() string {
	if s.path == "" {
		return "/"
	}
	return s.path
}

func (s *Source) displayParent(parent string) string {
	if parent == "" {
		return "/"
	}
	return strings.TrimSuffix(parent, "/")
}

// escapeRef escapes each segment of a branch name, keeping the slashes.
func escapeRef(ref string) string {
	segs := strings.Split(ref, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// blobSHA is the git object id of a blob with content b.
func blobSHA(b []byte) string {
	h := sha1.New() //nolint:gosec // git object ids are SHA-1
	_, _ = fmt.Fprintf(h, "blob %d\x00", len(b))
	_, _ = h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// checkRetry retries what retryablehttp's default policy retries, plus any
// 403 or 429 that carries a Retry-After (GitHub's secondary rate limit),
// provided the wait is at most maxWait. A primary rate limit (remaining 0,
// no Retry-After) is not retried: go-github refuses further calls until the
// reset, and the next sweep tries again.
func checkRetry(maxWait time.Duration) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if resp != nil {
			if d, ok := retryAfter(resp); ok {
				return d <= maxWait, nil
			}
			if resp.StatusCode == http.StatusForbidden {
				return false, nil
			}
		}
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
}

// backoff waits exactly as long as Retry-After asks, else backs off
// exponentially.
func backoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	if d, ok := retryAfter(resp); ok {
		return d
	}
	return retryablehttp.DefaultBackoff(lo, hi, attempt, resp)
}

// retryAfter parses Retry-After (seconds or an HTTP date) on a 403, 429 or 503.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		return 0, false
	}
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
