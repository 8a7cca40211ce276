package gitclone

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/source"
)

var _ source.RefResolver = (*Source)(nil)

// previewNS is the local namespace Resolve fetches into: refs/preview/<ref without
// "refs/">, refs/preview/commits/<sha> for a commit fetched by SHA. The followed branch's
// ref (refs/remotes/origin/<branch>) is never written by Resolve, and nothing is pruned.
const previewNS = "refs/preview/"

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Resolve returns the commit ref names on the server now and fetches it (depth 1) into
// the clone under refs/preview/, so that Snapshot(ctx, sha) reads it from the clone. ref is
// a commit SHA (returned as is once the clone holds it: already there, advertised by some
// ref, or fetched by SHA where the server allows it), a branch name, or a full ref such as
// refs/pull/7/head. It is serialised with Head and Snapshot and authenticates as they do.
func (s *Source) Resolve(ctx context.Context, ref string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref == "" {
		return "", fmt.Errorf("resolve in %s: the ref is empty", s.display())
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	repo, err := s.open(ctx)
	if err != nil {
		return "", fmt.Errorf("resolve %s in %s: %w", ref, s.display(), err)
	}
	sha := ""
	if shaRE.MatchString(ref) {
		if _, err := repo.CommitObject(plumbing.NewHash(ref)); err == nil {
			return ref, nil
		}
		sha = ref
	}
	refs, err := s.list(ctx)
	if err != nil {
		return "", err
	}
	remote, ok := findRef(refs, ref, sha)
	if !ok && sha == "" {
		return "", fmt.Errorf("resolve %s in %s: no such branch or ref", ref, s.display())
	}
	var spec config.RefSpec
	var local plumbing.ReferenceName
	if ok {
		local = plumbing.ReferenceName(previewNS + strings.TrimPrefix(remote.Name().String(), "refs/"))
		spec = config.RefSpec(fmt.Sprintf("+%s:%s", remote.Name(), local))
	} else { // a commit no ref advertises: only some servers serve it by SHA
		local = plumbing.ReferenceName(previewNS + "commits/" + sha)
		spec = config.RefSpec(fmt.Sprintf("%s:%s", sha, local))
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Fetching a revision for a preview", "url", s.display(), "ref", ref, "into", local.String())
	err = s.withAuth(ctx, func(auth transport.AuthMethod) error {
		return repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: git.DefaultRemoteName,
			RemoteURL:  s.o.URL,
			RefSpecs:   []config.RefSpec{spec},
			Auth:       auth,
			Depth:      1,
			Tags:       git.NoTags,
		})
	})
	switch {
	case errors.Is(err, git.ErrExactSHA1NotSupported):
		return "", fmt.Errorf("resolve %s in %s: commit not found: no ref the server advertises points at it, and the server does not serve other commits by SHA (name its branch or ref instead, e.g. refs/pull/7/head)", ref, s.display())
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		if sha != "" && !ok {
			return "", fmt.Errorf("resolve %s in %s: commit not found: %w", ref, s.display(), err)
		}
		return "", fmt.Errorf("resolve %s in %s: fetch: %w", ref, s.display(), err)
	}
	got, err := repo.Reference(local, true)
	if err != nil {
		return "", fmt.Errorf("resolve %s in %s: read %s after the fetch: %w", ref, s.display(), local, err)
	}
	hash := got.Hash()
	if sha != "" && hash.String() != sha {
		return "", fmt.Errorf("resolve %s in %s: fetched %s instead", ref, s.display(), hash)
	}
	if _, err := repo.CommitObject(hash); err != nil {
		return "", fmt.Errorf("resolve %s in %s: %s is not a commit: %w", ref, s.display(), hash, err)
	}
	return hash.String(), nil
}

// findRef returns the remote reference ref names: the full ref itself, else the branch
// refs/heads/<ref>, else the tag refs/tags/<ref>; with sha set, any ref pointing at it.
func findRef(refs []*plumbing.Reference, ref, sha string) (*plumbing.Reference, bool) {
	if sha != "" {
		for _, r := range refs {
			if r.Type() == plumbing.HashReference && r.Hash().String() == sha && !strings.HasSuffix(r.Name().String(), "^{}") {
				return r, true
			}
		}
		return nil, false
	}
	for _, name := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if !strings.HasPrefix(name, "refs/") {
			continue
		}
		for _, r := range refs {
			if r.Name().String() == name && r.Type() == plumbing.HashReference {
				return r, true
			}
		}
	}
	return nil, false
}

// list is one ls-remote: the server's references.
func (s *Source) list(ctx context.Context) ([]*plumbing.Reference, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{s.o.URL}})
	var refs []*plumbing.Reference
	err := s.withAuth(ctx, func(auth transport.AuthMethod) error {
		var err error
		refs, err = rem.ListContext(ctx, &git.ListOptions{Auth: auth})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ls-remote %s: %w", s.display(), err)
	}
	return refs, nil
}

// open returns the clone, cloning the followed branch first if there is none yet.
func (s *Source) open(ctx context.Context) (*git.Repository, error) {
	if s.repo != nil {
		return s.repo, nil
	}
	repo, err := git.PlainOpen(s.dir)
	if err != nil {
		if repo, err = s.clone(ctx); err != nil {
			return nil, err
		}
	}
	s.repo = repo
	return repo, nil
}
