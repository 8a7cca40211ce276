package commitstatus

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// PreviewContext is the context (GitHub: check run name) of a pull request's preview under
// base, the --commit-status-context: universe-operator/sync/preview.
func PreviewContext(base string) string { return base + "/preview" }

// Check is one finished check of a commit: a GitHub check run (title, Markdown summary and
// text), or, on Gitea and GitLab, a commit status whose description is the title.
type Check struct {
	SHA  string
	Name string
	// Failed concludes failure, else success.
	Failed               bool
	Title, Summary, Text string
}

// Checker posts a check; every Provider NewProvider returns is one.
type Checker interface {
	PostCheck(ctx context.Context, c Check) error
}

// maxCheckText is GitHub's limit on a check run output's summary and text, in characters.
const maxCheckText = 65535

func clipText(s string) string {
	if r := []rune(s); len(r) > maxCheckText {
		return string(r[:maxCheckText-1]) + "…"
	}
	return s
}

func (c Check) state() State {
	if c.Failed {
		return Failure
	}
	return Success
}

// PostCheck creates a completed check run through go-github's Checks.CreateCheckRun (the
// token must be a GitHub App's: the checks API refuses a personal token).
func (p *githubProvider) PostCheck(ctx context.Context, c Check) error {
	opts := github.CreateCheckRunOptions{
		Name: c.Name, HeadSHA: c.SHA, Status: github.String("completed"), Conclusion: github.String(string(c.state())),
		Output: &github.CheckRunOutput{Title: github.String(Clip(c.Title)), Summary: github.String(clipText(c.Summary)), Text: github.String(clipText(c.Text))},
	}
	if p.target != "" {
		opts.DetailsURL = github.String(p.target)
	}
	if _, _, err := p.gh.Checks.CreateCheckRun(ctx, p.owner, p.name, opts); err != nil {
		return p.scrub(fmt.Errorf("github create check run on %s/%s@%s: %w", p.owner, p.name, c.SHA, err))
	}
	return nil
}

// PostCheck posts the check as a commit status named c.Name, its title the description.
func (p *giteaProvider) PostCheck(ctx context.Context, c Check) error {
	return p.Post(ctx, Status{SHA: c.SHA, State: c.state(), Description: Clip(c.Title), Context: c.Name})
}

// PostCheck posts the check as a commit status named c.Name, its title the description.
func (p *gitlabProvider) PostCheck(ctx context.Context, c Check) error {
	return p.Post(ctx, Status{SHA: c.SHA, State: c.state(), Description: Clip(c.Title), Context: c.Name})
}
