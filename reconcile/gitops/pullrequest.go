package gitops

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v66/github"
)

// PullRequest is a pull (GitHub, Gitea, Forgejo) or merge (GitLab) request event the
// preview acts on: its head was opened or moved.
type PullRequest struct {
	// Host is the git host that sent it: github, gitea (Forgejo too) or gitlab.
	Host string
	// Number is the pull request's number (GitLab: the merge request's iid).
	Number int
	// Action is the host's word for what happened: opened, synchronize, reopened (Gitea:
	// synchronized; GitLab: open, update, reopen).
	Action string
	// BaseRef is the branch it merges into; BaseSHA that branch's commit the host compared
	// against (empty on GitLab, whose hook does not carry it).
	BaseRef, BaseSHA string
	// HeadSHA is the pull request's head commit; HeadRef the ref the base repository keeps
	// it under, which a fork's head is fetchable from too: refs/pull/<n>/head (GitHub,
	// Gitea) or refs/merge-requests/<iid>/head (GitLab).
	HeadSHA, HeadRef string
	// Fork says the head lives in another repository than the base.
	Fork bool
}

// String names the pull request for the log.
func (p PullRequest) String() string {
	return fmt.Sprintf("%s pull request #%d %s (head %s onto %s)", p.Host, p.Number, p.Action, short(p.HeadSHA), p.BaseRef)
}

// Hosts of PullRequest.Host.
const (
	HostGitHub = "github"
	HostGitea  = "gitea"
	HostGitLab = "gitlab"
)

// The events' header values.
const (
	eventPullRequest  = "pull_request"       // X-GitHub-Event, X-Gitea-Event, X-Forgejo-Event
	eventMergeRequest = "Merge Request Hook" // X-Gitlab-Event
)

// pullRequestHost returns the host whose pull request event h announces, or "" when h
// announces none. Gitea and Forgejo send X-GitHub-Event as well, so their own header is
// read first.
func pullRequestHost(h http.Header) string {
	switch {
	case h.Get("X-Gitea-Event") != "":
		return hostIf(h.Get("X-Gitea-Event") == eventPullRequest, HostGitea)
	case h.Get("X-Forgejo-Event") != "":
		return hostIf(h.Get("X-Forgejo-Event") == eventPullRequest, HostGitea)
	case h.Get("X-GitHub-Event") != "":
		return hostIf(h.Get("X-GitHub-Event") == eventPullRequest, HostGitHub)
	case h.Get("X-Gitlab-Event") != "":
		return hostIf(h.Get("X-Gitlab-Event") == eventMergeRequest, HostGitLab)
	}
	return ""
}

func hostIf(ok bool, host string) string {
	if ok {
		return host
	}
	return ""
}

// IsPullRequestEvent reports whether h announces a pull request event (GitHub's, Gitea's
// or Forgejo's pull_request, GitLab's Merge Request Hook): the preview's, never a sweep's.
func IsPullRequestEvent(h http.Header) bool { return pullRequestHost(h) != "" }

// previewed are the actions that open a pull request or move its head, per host; every
// other (closed, edited, labeled, approved, merge …) is ignored.
var previewed = map[string]map[string]bool{
	HostGitHub: {"opened": true, "synchronize": true, "reopened": true},
	HostGitea:  {"opened": true, "synchronized": true, "reopened": true},
	HostGitLab: {"open": true, "update": true, "reopen": true},
}

var (
	shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	// ErrNotPullRequest: the headers announce no pull request event.
	ErrNotPullRequest = errors.New("not a pull request event")
)

// ParsePullRequest reads the pull request event of a verified delivery: headers h (which
// host and event) and body. It returns the event, or ignored saying why the preview skips
// it (an action that neither opens a pull request nor moves its head; a head from a fork,
// whose author would read live objects through the check's diff), or an error naming the
// field when body is not the host's documented shape.
//
// Field names are the hosts' documented payloads: GitHub's pull_request event (action,
// number, pull_request.head/base .ref, .sha and .repo.id, parsed with go-github's
// PullRequestEvent), Gitea's and Forgejo's (the same shape; "synchronized" for a new head)
// and GitLab's Merge Request Hook (object_attributes.iid, .action, .last_commit.id,
// .target_branch, .source_project_id, .target_project_id).
func ParsePullRequest(h http.Header, body []byte) (pr PullRequest, ignored string, err error) {
	host := pullRequestHost(h)
	if host == "" {
		return pr, "", ErrNotPullRequest
	}
	if ct, _, _ := mime.ParseMediaType(h.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		// GitHub's "application/x-www-form-urlencoded" content type: the JSON is the payload field
		form, err := url.ParseQuery(string(body))
		if err != nil || !form.Has("payload") {
			return pr, "", fmt.Errorf("%s %s event: a form body without a payload field", host, eventName(host))
		}
		body = []byte(form.Get("payload"))
	}
	switch host {
	case HostGitLab:
		pr, err = parseMergeRequest(body)
	default:
		pr, err = parseGitHubPullRequest(body)
	}
	if err != nil {
		return pr, "", fmt.Errorf("%s %s event: %w", host, eventName(host), err)
	}
	pr.Host = host
	if host == HostGitLab {
		pr.HeadRef = "refs/merge-requests/" + strconv.Itoa(pr.Number) + "/head"
	} else {
		pr.HeadRef = "refs/pull/" + strconv.Itoa(pr.Number) + "/head"
	}
	switch {
	case !previewed[host][pr.Action]:
		return pr, fmt.Sprintf("action %q neither opens the pull request nor moves its head", pr.Action), nil
	case pr.Fork:
		return pr, "its head is in a fork: a fork's author would read live objects through the check's diff", nil
	}
	if err := pr.validate(); err != nil {
		return pr, "", fmt.Errorf("%s %s event: %w", host, eventName(host), err)
	}
	return pr, "", nil
}

func eventName(host string) string {
	if host == HostGitLab {
		return eventMergeRequest
	}
	return eventPullRequest
}

// validate refuses what is not a commit SHA, a pull request number or a branch name: these
// reach git fetches.
func (p PullRequest) validate() error {
	switch {
	case p.Number <= 0:
		return fmt.Errorf("pull request number %d", p.Number)
	case !shaRE.MatchString(p.HeadSHA):
		return fmt.Errorf("head sha %q is not a commit SHA", p.HeadSHA)
	case p.BaseSHA != "" && !shaRE.MatchString(p.BaseSHA):
		return fmt.Errorf("base sha %q is not a commit SHA", p.BaseSHA)
	case p.BaseRef == "" || plumbing.NewBranchReferenceName(p.BaseRef).Validate() != nil:
		return fmt.Errorf("base ref %q is not a branch name", p.BaseRef)
	}
	return nil
}

// parseGitHubPullRequest reads GitHub's pull_request payload, which Gitea and Forgejo send
// in the same shape.
func parseGitHubPullRequest(body []byte) (PullRequest, error) {
	var ev github.PullRequestEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return PullRequest{}, fmt.Errorf("body is not JSON: %w", err)
	}
	pr := ev.GetPullRequest()
	if pr == nil || pr.Head == nil || pr.Base == nil {
		return PullRequest{}, errors.New("no pull_request with head and base")
	}
	headRepo, baseRepo := pr.GetHead().GetRepo().GetID(), pr.GetBase().GetRepo().GetID()
	return PullRequest{
		Number: ev.GetNumber(), Action: ev.GetAction(),
		BaseRef: pr.GetBase().GetRef(), BaseSHA: pr.GetBase().GetSHA(), HeadSHA: pr.GetHead().GetSHA(),
		// a deleted fork has no head repo
		Fork: pr.GetHead().Repo == nil || headRepo != baseRepo,
	}, nil
}

// mergeRequestHook is the part of GitLab's Merge Request Hook payload the preview reads.
type mergeRequestHook struct {
	ObjectKind string `json:"object_kind"`
	Attrs      *struct {
		IID             int    `json:"iid"`
		Action          string `json:"action"`
		TargetBranch    string `json:"target_branch"`
		SourceProjectID int64  `json:"source_project_id"`
		TargetProjectID int64  `json:"target_project_id"`
		LastCommit      *struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
}

func parseMergeRequest(body []byte) (PullRequest, error) {
	var ev mergeRequestHook
	if err := json.Unmarshal(body, &ev); err != nil {
		return PullRequest{}, fmt.Errorf("body is not JSON: %w", err)
	}
	a := ev.Attrs
	switch {
	case ev.ObjectKind != "merge_request":
		return PullRequest{}, fmt.Errorf("object_kind %q, want merge_request", ev.ObjectKind)
	case a == nil:
		return PullRequest{}, errors.New("no object_attributes")
	}
	pr := PullRequest{Number: a.IID, Action: a.Action, BaseRef: a.TargetBranch, Fork: a.SourceProjectID != a.TargetProjectID}
	if a.LastCommit != nil {
		pr.HeadSHA = a.LastCommit.ID
	}
	return pr, nil
}
