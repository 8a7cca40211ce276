// Package commitstatus posts the git sweep's outcome on the commit it applied, through a git
// host's commit status API: GitHub (go-github's Repositories.CreateStatus), Gitea (POST
// /repos/{owner}/{repo}/statuses/{sha}) and GitLab (POST /projects/{id}/statuses/{sha}).
//
// A Poster queues statuses and posts them from one goroutine: Enqueue never waits for the
// host, so an outage (5xx, timeouts) never blocks or fails a sweep. The queue is bounded and
// drops its oldest entry when full; a status equal to the last one enqueued for its commit
// (same state and description) is not posted again; posts are paced by a token bucket per
// repository. Tokens are read from files (source.TokenFile) and go only into the request's
// header, on requests to the configured origin (source/transport); errors are scrubbed of
// them.
package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
)

// State is a commit status state, in GitHub's words; each provider maps it to its own.
type State string

// States.
const (
	// Pending: a sweep started on the commit, or some of its objects are held back.
	Pending State = "pending"
	// Success: every object of the commit is applied or in sync.
	Success State = "success"
	// Failure: some object failed, was denied or refused, or a file is unusable.
	Failure State = "failure"
	// Error: the sweep could not read or plan the commit at all.
	Error State = "error"
)

// MaxDescription is the longest description posted, in characters (GitHub's limit).
const MaxDescription = 140

// Status is one status to post on a commit.
type Status struct {
	SHA         string
	State       State
	Description string
	// Context names the status on the commit (GitLab: name); empty is the provider's
	// (--commit-status-context). A fleet cluster's sweep posts under its own (ClusterContext),
	// so a commit shows each cluster's outcome beside the home sweep's.
	Context string
}

// Provider posts one status on one repository of a git host.
type Provider interface {
	Post(ctx context.Context, st Status) error
}

// Providers.
const (
	GitHub = "github"
	Gitea  = "gitea"
	GitLab = "gitlab"
)

// DefaultContext is the context (GitLab: name) of the statuses posted.
const DefaultContext = "universe-operator/sync"

// ClusterContext is the context of the statuses of a fleet cluster's sweep: base (the
// --commit-status-context of the home sweep) and the cluster, "<org>/<name>", e.g.
// universe-operator/sync/acme/prod. The home sweep keeps base, so a branch protection rule
// requiring it keeps working when --fleet is turned on.
func ClusterContext(base, cluster string) string {
	if cluster == "" {
		return base
	}
	return base + "/" + cluster
}

// Options configures the poster of `operator run` (--commit-status*).
type Options struct {
	// Provider is github, gitea or gitlab; empty posts nothing.
	Provider string
	// URL is the REST API root: https://api.github.com/ (the GitHub default), a GitHub
	// Enterprise https://HOST/api/v3/, https://HOST/api/v1 (Gitea), https://HOST/api/v4 (GitLab).
	URL string
	// Repository is owner/name (GitLab: the project's path, group/project, or its numeric id).
	Repository string
	// TokenFile holds the API token; required.
	TokenFile string
	// Context names the status on the commit.
	Context string
	// TargetURL, when set, is the link of every status (the operator's GET /gitops, a dashboard).
	TargetURL string
	// PerMinute is the token bucket's rate: posts per minute per repository, in bursts of at
	// most Burst.
	PerMinute int
	Burst     int
	// Queue is how many statuses wait at most; the oldest is dropped beyond it.
	Queue int
	// Timeout bounds one attempt of a post.
	Timeout time.Duration
}

// DefaultOptions returns the defaults BindFlags registers.
func DefaultOptions() Options {
	return Options{Context: DefaultContext, PerMinute: 30, Burst: 5, Queue: 64, Timeout: 10 * time.Second}
}

// BindFlags registers the --commit-status flags on fs, with o's values as defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Provider, "commit-status", o.Provider, "Post each git sweep's outcome (pending, then success or failure, with its counts) on the commit it applied: github, gitea or gitlab; empty posts nothing. Needs --commit-status-token-file.")
	fs.StringVar(&o.URL, "commit-status-url", o.URL, "REST API root of the commit status host: empty is https://api.github.com/ for github; https://HOST/api/v1 for gitea, https://HOST/api/v4 for gitlab.")
	fs.StringVar(&o.Repository, "commit-status-repository", o.Repository, "Repository the statuses go to, owner/name (gitlab: group/project or the project id); empty means --github-repository, or the path of --git-url.")
	fs.StringVar(&o.TokenFile, "commit-status-token-file", o.TokenFile, "File holding the API token of the commit status host (re-read when it changes).")
	fs.StringVar(&o.Context, "commit-status-context", o.Context, "Context (gitlab: name) of the statuses posted.")
	fs.StringVar(&o.TargetURL, "commit-status-target-url", o.TargetURL, "Link of every status posted (e.g. the operator's /gitops report); empty posts none.")
	fs.IntVar(&o.PerMinute, "commit-status-per-minute", o.PerMinute, "Most statuses posted per minute to the repository (a token bucket, bursts of 5); more wait in a bounded queue that drops the oldest.")
}

// Enabled reports whether a provider is set.
func (o Options) Enabled() bool { return o.Provider != "" }

var (
	shaRE     = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	segmentRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Validate checks o as `operator run` takes it: off with nothing else set, or a known
// provider with a token file, a repository and a positive rate. Errors name the flag, never
// a value that may be a secret.
func (o Options) Validate() error {
	if o.Provider == "" {
		d := DefaultOptions()
		for flag, set := range map[string]bool{
			"--commit-status-url": o.URL != "", "--commit-status-repository": o.Repository != "",
			"--commit-status-token-file": o.TokenFile != "", "--commit-status-target-url": o.TargetURL != "",
			"--commit-status-context": o.Context != d.Context, "--commit-status-per-minute": o.PerMinute != d.PerMinute,
		} {
			if set {
				return fmt.Errorf("%s is set but --commit-status is not: set --commit-status=github|gitea|gitlab", flag)
			}
		}
		return nil
	}
	switch o.Provider {
	case GitHub, Gitea, GitLab:
	default:
		return fmt.Errorf("--commit-status %q: want github, gitea or gitlab", o.Provider)
	}
	switch {
	case o.TokenFile == "":
		return fmt.Errorf("--commit-status=%s needs --commit-status-token-file", o.Provider)
	case o.URL == "" && o.Provider != GitHub:
		return fmt.Errorf("--commit-status=%s needs --commit-status-url (its REST API root)", o.Provider)
	case o.PerMinute < 1:
		return errors.New("--commit-status-per-minute must be at least 1")
	case o.Context == "":
		return errors.New("--commit-status-context is empty")
	}
	_, _, err := splitRepository(o.Provider, o.Repository)
	return err
}

// splitRepository parses owner/name; GitLab's project is returned whole as owner.
func splitRepository(provider, repo string) (owner, name string, err error) {
	if provider == GitLab {
		for _, seg := range strings.Split(repo, "/") {
			if !segmentRE.MatchString(seg) {
				return "", "", fmt.Errorf("--commit-status-repository %q: want group/project or the project id", repo)
			}
		}
		return repo, "", nil
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !segmentRE.MatchString(owner) || !segmentRE.MatchString(name) {
		return "", "", fmt.Errorf("--commit-status-repository %q: want owner/name", repo)
	}
	return owner, name, nil
}

// RepositoryOf derives owner/name from a git URL (https://host/owner/name.git,
// git@host:owner/name.git, ssh://git@host/group/sub/project); empty when it names none.
func RepositoryOf(gitURL string) string {
	s := gitURL
	if strings.HasPrefix(s, "file://") {
		return ""
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
		if j := strings.Index(s, "/"); j >= 0 {
			s = s[j+1:]
		} else {
			return ""
		}
	} else if _, after, ok := strings.Cut(s, ":"); ok { // scp-like
		s = after
	} else {
		return ""
	}
	s = strings.Trim(strings.TrimSuffix(strings.Trim(s, "/"), ".git"), "/")
	if !strings.Contains(s, "/") {
		return ""
	}
	return s
}

// Clip shortens a description to MaxDescription characters.
func Clip(s string) string {
	if utf8.RuneCountInString(s) <= MaxDescription {
		return s
	}
	r := []rune(s)
	return string(r[:MaxDescription-1]) + "…"
}
