package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/openuniverse/operator/source"
)

var _ source.RefResolver = (*Source)(nil)

// Resolve returns the commit ref names now. A commit SHA is returned as is once the host
// confirms the commit exists; a branch or tag name is resolved as Head resolves the
// branch (GET commits/<name>, the bare SHA); a full ref such as refs/pull/7/head through
// the git refs API, an annotated tag peeled to its commit. Snapshot reads any commit, so
// nothing else is needed to make it readable. Serialised with Head and Snapshot; the
// head's ETag is left alone.
func (s *Source) Resolve(ctx context.Context, ref string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref == "" {
		return "", fmt.Errorf("resolve in %s: the ref is empty", s.repoName())
	}
	var sha string
	var err error
	if strings.HasPrefix(ref, "refs/") {
		sha, err = s.resolveRef(ctx, ref)
	} else {
		sha, err = s.resolveCommit(ctx, ref)
	}
	if err != nil {
		return "", s.scrub(fmt.Errorf("resolve %s in %s: %w", ref, s.repoName(), err))
	}
	return sha, nil
}

// resolveCommit asks GET commits/<ref> for the bare SHA.
func (s *Source) resolveCommit(ctx context.Context, ref string) (string, error) {
	u := fmt.Sprintf("repos/%s/%s/commits/%s", url.PathEscape(s.owner), url.PathEscape(s.repo), escapeRef(ref))
	req, err := s.gh.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.github.sha")
	var body bytes.Buffer
	if _, err := s.gh.Do(ctx, req, &body); err != nil {
		return "", notFound(err, "no such commit, branch or tag")
	}
	sha := strings.TrimSpace(body.String())
	if !shaRE.MatchString(sha) {
		return "", errors.New("answer is not a commit sha")
	}
	if shaRE.MatchString(ref) && sha != ref {
		return "", fmt.Errorf("the host answered commit %s", sha)
	}
	return sha, nil
}

// resolveRef reads a full ref through GET git/ref/<ref without refs/>, peeling tags.
func (s *Source) resolveRef(ctx context.Context, ref string) (string, error) {
	r, _, err := s.gh.Git.GetRef(ctx, s.owner, s.repo, ref)
	if err != nil {
		return "", notFound(err, "no such ref")
	}
	if r.GetRef() != ref { // the API answers a list of refs when the name is only a prefix
		return "", errors.New("no such ref")
	}
	obj := r.GetObject()
	for range 4 { // a tag of a tag of ... a commit
		switch obj.GetType() {
		case "commit":
			if !shaRE.MatchString(obj.GetSHA()) {
				return "", errors.New("answer is not a commit sha")
			}
			return obj.GetSHA(), nil
		case "tag":
			tag, _, err := s.gh.Git.GetTag(ctx, s.owner, s.repo, obj.GetSHA())
			if err != nil {
				return "", fmt.Errorf("read tag %s: %w", short(obj.GetSHA()), err)
			}
			obj = tag.GetObject()
		default:
			return "", fmt.Errorf("points at a %s, not a commit", obj.GetType())
		}
	}
	return "", errors.New("tags nested too deep")
}

// notFound turns the host's 404 and 422 (GitHub's "No commit found for SHA") into what,
// keeping any other error as it is.
func notFound(err error, what string) error {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil &&
		(er.Response.StatusCode == http.StatusNotFound || er.Response.StatusCode == http.StatusUnprocessableEntity) {
		return errors.New(what)
	}
	return err
}

func (s *Source) repoName() string { return s.owner + "/" + s.repo }
