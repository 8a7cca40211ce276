package github

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-logr/logr"
	"github.com/google/go-github/v66/github"

	"github.com/openuniverse/operator/source"
)

// Writer commits source.Changes through the GitHub git data API, without a clone: read the
// branch's ref and the file's blob, create a blob, a tree on the old tree, a commit whose only
// parent is the head read, and move the ref to it with force false — GitHub refuses that
// update (422) unless the ref still points to the parent, which is the precondition. On a
// refusal it reads the new head, re-applies the edit and tries again (source.Retry).
type Writer struct {
	gh          *github.Client
	owner, repo string
	retry       source.RetryPolicy
}

var _ source.Writer = (*Writer)(nil)

// NewWriter returns a Writer for o.Repository ("owner/name") at o.BaseURL; o.Branch and
// o.Path are not used (the Change names the branch and files). creds may be nil.
func NewWriter(creds source.Credentials, o Options, retry source.RetryPolicy) (*Writer, error) {
	if o.Branch == "" {
		o.Branch = "main" // New insists on one; writes take theirs from the Change
	}
	s, err := New(creds, o)
	if err != nil {
		return nil, err
	}
	s.gh.UserAgent = "universe-operator-write"
	return &Writer{gh: s.gh, owner: s.owner, repo: s.repo, retry: retry}, nil
}

// Write commits c and moves the target branch to the commit, re-applying the edit on the
// new head when another writer moved the branch.
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
	res, err := source.Retry(ctx, w.retry, func(ctx context.Context, n int) (source.Result, error) {
		if n > 1 {
			logr.FromContextOrDiscard(ctx).Info("Ref update refused, re-applying the edit on the new head",
				"repository", w.owner+"/"+w.repo, "branch", c.Target(), "attempt", n)
		}
		return w.attempt(ctx, c, signer)
	})
	if err != nil {
		return res, fmt.Errorf("write %s to %s/%s: %w", strings.Join(c.Paths, ", "), w.owner, w.repo, err)
	}
	return res, nil
}

// attempt reads the branch head, applies the edit, writes the blobs, tree and commit and
// moves the ref.
//
//nolint:funlen // one attempt read top to bottom: head, edit, objects, ref, each failure classed where it happens
func (w *Writer) attempt(ctx context.Context, c source.Change, signer *openpgp.Entity) (source.Result, error) {
	target := c.Target()
	res := source.Result{Branch: target}
	create := false
	parent, err := w.head(ctx, target)
	if errors.Is(err, errNoRef) && target != c.Branch {
		create = true
		parent, err = w.head(ctx, c.Branch)
	}
	if err != nil {
		return res, err
	}
	res.Parent = parent
	commit, _, err := w.gh.Git.GetCommit(ctx, w.owner, w.repo, parent)
	if err != nil {
		return res, fmt.Errorf("read commit %s: %w", parent, err)
	}
	baseTree := commit.GetTree().GetSHA()
	modes := map[string]string{}
	files, changed, err := source.ApplyEdit(c, func(p string) ([]byte, error) {
		entry, err := w.lookup(ctx, baseTree, p)
		if err != nil {
			return nil, err
		}
		modes[p] = entry.GetMode()
		data, _, err := w.gh.Git.GetBlobRaw(ctx, w.owner, w.repo, entry.GetSHA())
		if err != nil {
			return nil, fmt.Errorf("read blob %s: %w", entry.GetSHA(), err)
		}
		return data, nil
	})
	if err != nil {
		return res, err
	}
	res.Changed = changed
	if len(changed) == 0 {
		return res, nil
	}
	entries := make([]*github.TreeEntry, 0, len(changed))
	for _, p := range changed {
		blob, _, err := w.gh.Git.CreateBlob(ctx, w.owner, w.repo, &github.Blob{
			Content: github.String(base64.StdEncoding.EncodeToString(files[p])), Encoding: github.String("base64")})
		if err != nil {
			return res, fmt.Errorf("create blob for %s: %w", p, err)
		}
		entries = append(entries, &github.TreeEntry{Path: github.String(p), Mode: github.String(modes[p]), Type: github.String("blob"), SHA: blob.SHA})
	}
	tree, _, err := w.gh.Git.CreateTree(ctx, w.owner, w.repo, baseTree, entries)
	if err != nil {
		return res, fmt.Errorf("create tree: %w", err)
	}
	author := c.Author
	if author.Name == "" || author.Email == "" {
		author = source.DefaultAuthor
	}
	now := github.Timestamp{Time: time.Now().UTC().Truncate(time.Second)}
	sig := &github.CommitAuthor{Name: github.String(author.Name), Email: github.String(author.Email), Date: &now}
	var opts *github.CreateCommitOptions
	if signer != nil {
		opts = &github.CreateCommitOptions{Signer: github.MessageSignerFunc(func(out io.Writer, r io.Reader) error {
			return openpgp.ArmoredDetachSign(out, signer, r, nil)
		})}
	}
	made, _, err := w.gh.Git.CreateCommit(ctx, w.owner, w.repo, &github.Commit{
		Message: github.String(c.Message), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: github.String(parent)}},
		Author: sig, Committer: sig}, opts)
	if err != nil {
		return res, fmt.Errorf("create commit: %w", err)
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + target), Object: &github.GitObject{SHA: made.SHA}}
	if create {
		_, _, err = w.gh.Git.CreateRef(ctx, w.owner, w.repo, ref)
	} else {
		_, _, err = w.gh.Git.UpdateRef(ctx, w.owner, w.repo, ref, false)
	}
	if err != nil {
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && (er.Response.StatusCode == http.StatusUnprocessableEntity || er.Response.StatusCode == http.StatusConflict) {
			return res, fmt.Errorf("move %s to %s: %w: %s", target, made.GetSHA(), source.ErrConflict, er.Message)
		}
		return res, fmt.Errorf("move %s to %s: %w", target, made.GetSHA(), err)
	}
	res.Commit = made.GetSHA()
	return res, nil
}

var errNoRef = errors.New("branch not found")

// head returns the commit a branch points to.
func (w *Writer) head(ctx context.Context, branch string) (string, error) {
	ref, _, err := w.gh.Git.GetRef(ctx, w.owner, w.repo, "heads/"+branch)
	if err != nil {
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
			return "", fmt.Errorf("branch %s: %w", branch, errNoRef)
		}
		return "", fmt.Errorf("read branch %s: %w", branch, err)
	}
	sha := ref.GetObject().GetSHA()
	if !shaRE.MatchString(sha) || ref.GetObject().GetType() != "commit" && ref.GetObject().GetType() != "" {
		return "", fmt.Errorf("branch %s points to %q, not a commit", branch, sha)
	}
	return sha, nil
}

// lookup walks the tree one directory per request to the entry of p.
func (w *Writer) lookup(ctx context.Context, root, p string) (*github.TreeEntry, error) {
	sha := root
	parts := strings.Split(p, "/")
	for i, name := range parts {
		tree, _, err := w.gh.Git.GetTree(ctx, w.owner, w.repo, sha, false)
		if err != nil {
			return nil, fmt.Errorf("read tree of %s: %w", path.Join(parts[:i]...), err)
		}
		var found *github.TreeEntry
		for _, e := range tree.Entries {
			if e.GetPath() == name {
				found = e
				break
			}
		}
		last := i == len(parts)-1
		switch {
		case found == nil, last && found.GetType() != "blob", !last && found.GetType() != "tree":
			return nil, source.ErrFileNotFound
		case last:
			return found, nil
		}
		sha = found.GetSHA()
	}
	return nil, source.ErrFileNotFound
}
