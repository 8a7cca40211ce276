package commitstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/transport"
)

// NewProvider returns the provider o names, posting as creds (the token file's). o must
// have passed Validate.
func NewProvider(o Options, creds source.Credentials) (Provider, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if !o.Enabled() {
		return nil, fmt.Errorf("no --commit-status provider set")
	}
	if source.NoCredentials(creds) {
		return nil, fmt.Errorf("--commit-status=%s: %w", o.Provider, transport.ErrNoCredentials)
	}
	base := o.URL
	if base == "" {
		base = "https://api.github.com/"
	}
	auth := transport.Auth{Bearer: creds}
	switch o.Provider {
	case Gitea:
		auth.Scheme = "token"
	case GitLab:
		auth.HeaderName = "PRIVATE-TOKEN"
	}
	hc, u, err := transport.New(base, auth, transport.Options{
		Peer: "the commit status host", Timeout: o.Timeout, RetryMax: 1,
		RetryWaitMin: time.Second, RetryWaitMax: 5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("--commit-status-url: %w", err)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	owner, name, _ := splitRepository(o.Provider, o.Repository)
	c := common{hc: hc, base: u, owner: owner, name: name, context: o.Context, target: o.TargetURL, creds: creds}
	switch o.Provider {
	case GitHub:
		gh := github.NewClient(hc)
		gh.BaseURL = u
		gh.UserAgent = "universe-operator"
		return &githubProvider{common: c, gh: gh}, nil
	case Gitea:
		return &giteaProvider{common: c}, nil
	default:
		return &gitlabProvider{common: c}, nil
	}
}

// contextOf is st's context, or the configured one.
func (c common) contextOf(st Status) string {
	if st.Context != "" {
		return st.Context
	}
	return c.context
}

type common struct {
	hc          *http.Client
	base        *url.URL
	owner, name string // GitLab: owner is the project
	context     string
	target      string
	creds       source.Credentials
}

// scrub removes the token from an error a library built (go-github quotes the answer's
// message, which a hostile or broken host may fill with the request's header).
func (c common) scrub(err error) error {
	if err == nil {
		return nil
	}
	return c.creds.Token().Scrub(err)
}

// post sends body as JSON to the API path under base (its segments escaped: a GitLab
// project path's / becomes %2F) and wants 200 or 201. The answer's body is not quoted in
// the error: only its status.
func (c common) post(ctx context.Context, body any, segments ...string) error {
	u := *c.base
	esc := make([]string, len(segments))
	for i, s := range segments {
		esc[i] = url.PathEscape(s)
	}
	u.Path = c.base.Path + strings.Join(segments, "/")
	u.RawPath = c.base.EscapedPath() + strings.Join(esc, "/")
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "universe-operator")
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.scrub(fmt.Errorf("POST %s: %w", u.EscapedPath(), err))
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: answered %s", u.EscapedPath(), resp.Status)
	}
	return nil
}

// githubProvider posts through go-github's Repositories.CreateStatus.
type githubProvider struct {
	common
	gh *github.Client
}

func (p *githubProvider) Post(ctx context.Context, st Status) error {
	rs := &github.RepoStatus{State: github.String(string(st.State)), Description: github.String(st.Description), Context: github.String(p.contextOf(st))}
	if p.target != "" {
		rs.TargetURL = github.String(p.target)
	}
	_, _, err := p.gh.Repositories.CreateStatus(ctx, p.owner, p.name, st.SHA, rs)
	if err != nil {
		return p.scrub(fmt.Errorf("github create status on %s/%s@%s: %w", p.owner, p.name, st.SHA, err))
	}
	return nil
}

// giteaStatus is Gitea's CreateStatusOption.
type giteaStatus struct {
	Context     string `json:"context"`
	Description string `json:"description"`
	State       string `json:"state"`
	TargetURL   string `json:"target_url,omitempty"`
}

// giteaProvider posts to Gitea's POST /repos/{owner}/{repo}/statuses/{sha}.
type giteaProvider struct{ common }

func (p *giteaProvider) Post(ctx context.Context, st Status) error {
	body := giteaStatus{Context: p.contextOf(st), Description: st.Description, State: string(st.State), TargetURL: p.target}
	if err := p.post(ctx, body, "repos", p.owner, p.name, "statuses", st.SHA); err != nil {
		return fmt.Errorf("gitea create status on %s/%s@%s: %w", p.owner, p.name, st.SHA, err)
	}
	return nil
}

// gitlabStatus is the body of GitLab's POST /projects/:id/statuses/:sha.
type gitlabStatus struct {
	State       string `json:"state"`
	Name        string `json:"name"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url,omitempty"`
}

// gitlabState maps a state to GitLab's: pending, success, failed.
func gitlabState(s State) string {
	switch s {
	case Pending, Success:
		return string(s)
	default:
		return "failed"
	}
}

// gitlabProvider posts to GitLab's POST /projects/:id/statuses/:sha.
type gitlabProvider struct{ common }

func (p *gitlabProvider) Post(ctx context.Context, st Status) error {
	body := gitlabStatus{State: gitlabState(st.State), Name: p.contextOf(st), Description: st.Description, TargetURL: p.target}
	if err := p.post(ctx, body, "projects", p.owner, "statuses", st.SHA); err != nil {
		return fmt.Errorf("gitlab create status on %s@%s: %w", p.owner, st.SHA, err)
	}
	return nil
}
