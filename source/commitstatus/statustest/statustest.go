// Package statustest serves the commit status APIs of GitHub, Gitea and GitLab over
// httptest, as their public documentation describes them, for tests of
// source/commitstatus and its callers: each request is checked for its method, path,
// authentication header (GitHub "Bearer <t>" or "token <t>", Gitea "token <t>", GitLab
// PRIVATE-TOKEN), content type and JSON body, whose unknown fields and unknown states are
// refused as the hosts refuse them (422 or 400); a valid one is answered 201 with the
// documented status object and recorded.
package statustest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Post is one status a server accepted.
type Post struct {
	// Repository is owner/name (GitLab: the project id or path, unescaped).
	Repository, SHA, State, Context, Description, TargetURL string
	// CheckRun is set on a GitHub check run (POST /repos/{owner}/{repo}/check-runs): State is
	// its conclusion, Context its name, Description its output's title; Summary and Text its
	// output's.
	CheckRun      bool
	Summary, Text string
}

// Server is one fake host.
type Server struct {
	// Provider is github, gitea or gitlab.
	Provider string
	// Token is what the authentication header must carry.
	Token string
	// URL is the REST API root to configure (--commit-status-url).
	URL string
	// Posted receives every accepted post (buffered; a full channel drops the notice).
	Posted chan Post

	mu         sync.Mutex
	posts      []Post
	violations []string
	down       int
	hang       chan struct{}
	echo       bool
	requests   int
}

// New starts a fake of provider that wants token; it stops with the test.
func New(t testing.TB, provider, token string) *Server {
	s := &Server{Provider: provider, Token: token, Posted: make(chan Post, 256)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(s.Release)
	switch provider {
	case "github":
		s.URL = srv.URL + "/"
	case "gitea":
		s.URL = srv.URL + "/api/v1"
	case "gitlab":
		s.URL = srv.URL + "/api/v4"
	default:
		t.Fatalf("statustest: unknown provider %q", provider)
	}
	return s
}

// Posts returns the accepted posts, in order.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posts)
}

// Violations returns what requests did against the documented API (besides bad credentials).
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// Requests returns how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Down makes the next n requests answer 503 (an outage).
func (s *Server) Down(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = n
}

// Hang makes every request wait, unanswered, until Release or the client gives up.
func (s *Server) Hang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hang == nil {
		s.hang = make(chan struct{})
	}
}

// Release answers the requests Hang holds, and the later ones.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hang != nil {
		close(s.hang)
		s.hang = nil
	}
}

// Echo makes a refused credential come back in the error message, as a hostile or broken
// host might: the client must not pass it on.
func (s *Server) Echo() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = true
}

var (
	githubChecks = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/check-runs$`)
	githubPath   = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/statuses/([0-9a-f]{40}|[0-9a-f]{64})$`)
	giteaPath    = regexp.MustCompile(`^/api/v1/repos/([^/]+)/([^/]+)/statuses/([0-9a-f]{40}|[0-9a-f]{64})$`)
	gitlabPath   = regexp.MustCompile(`^/api/v4/projects/([^/]+)/statuses/([0-9a-f]{40}|[0-9a-f]{64})$`)
)

// States each API accepts.
var states = map[string][]string{
	"github": {"error", "failure", "pending", "success"},
	"gitea":  {"pending", "success", "error", "failure", "warning"},
	"gitlab": {"pending", "running", "success", "failed", "canceled", "skipped"},
}

// githubBody is "Create a commit status"'s body (docs.github.com/rest/commits/statuses).
type githubBody struct {
	State       string `json:"state"`
	TargetURL   string `json:"target_url,omitempty"`
	Description string `json:"description,omitempty"`
	Context     string `json:"context,omitempty"`
}

// githubCheckBody is "Create a check run"'s body (docs.github.com/rest/checks/runs), the
// fields a completed run without annotations sends.
type githubCheckBody struct {
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	DetailsURL string `json:"details_url,omitempty"`
	Status     string `json:"status,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
	Output     *struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text,omitempty"`
	} `json:"output,omitempty"`
}

// giteaBody is Gitea's CreateStatusOption (swagger: repoCreateStatus).
type giteaBody struct {
	Context     string `json:"context"`
	Description string `json:"description"`
	State       string `json:"state"`
	TargetURL   string `json:"target_url"`
}

// gitlabBody is "Set the pipeline status of a commit"'s attributes (docs.gitlab.com/api/commits).
type gitlabBody struct {
	State       string   `json:"state"`
	Ref         string   `json:"ref,omitempty"`
	Name        string   `json:"name,omitempty"`
	Context     string   `json:"context,omitempty"`
	TargetURL   string   `json:"target_url,omitempty"`
	Description string   `json:"description,omitempty"`
	Coverage    *float64 `json:"coverage,omitempty"`
	PipelineID  *int     `json:"pipeline_id,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) violate(w http.ResponseWriter, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.violations = append(s.violations, msg)
	s.mu.Unlock()
	writeJSON(w, code, map[string]string{"message": msg})
}

// credential is the header value the provider authenticates with, and whether it is right.
func (s *Server) credential(r *http.Request) (string, bool) {
	switch s.Provider {
	case "github":
		h := r.Header.Get("Authorization")
		return h, h == "Bearer "+s.Token || h == "token "+s.Token
	case "gitea":
		h := r.Header.Get("Authorization")
		return h, h == "token "+s.Token
	default:
		h := r.Header.Get("PRIVATE-TOKEN")
		return h, h == s.Token && r.Header.Get("Authorization") == ""
	}
}

// ServeHTTP serves POST of a commit status.
//
//nolint:funlen,gocyclo // one request's checks, in the order the hosts make them
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	hang, down, echo := s.hang, s.down > 0, s.echo
	if down {
		s.down--
	}
	s.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	if down {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"message": "Service Unavailable"})
		return
	}
	if cred, ok := s.credential(r); !ok {
		msg := map[string]string{"github": "Bad credentials", "gitea": "user does not exist [uid: 0, name: ]", "gitlab": "401 Unauthorized"}[s.Provider]
		if echo {
			msg += ": " + cred
		}
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": msg})
		return
	}
	if r.Method != http.MethodPost {
		s.violate(w, http.StatusMethodNotAllowed, "%s %s: want POST", r.Method, r.URL.Path)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.violate(w, http.StatusUnsupportedMediaType, "Content-Type %q: want application/json", ct)
		return
	}
	body, _ := io.ReadAll(r.Body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var p Post
	now := time.Now().UTC().Format(time.RFC3339)
	switch s.Provider {
	case "github":
		if c := githubChecks.FindStringSubmatch(r.URL.EscapedPath()); c != nil {
			var b githubCheckBody
			if err := dec.Decode(&b); err != nil {
				s.violate(w, http.StatusUnprocessableEntity, "body: %v", err)
				return
			}
			if b.Name == "" || !regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`).MatchString(b.HeadSHA) || b.Output == nil ||
				(b.Status == "completed") != (b.Conclusion != "") {
				s.violate(w, http.StatusUnprocessableEntity, "check run: want name, head_sha, output, and a conclusion exactly when completed")
				return
			}
			p = Post{Repository: c[1] + "/" + c[2], SHA: b.HeadSHA, State: b.Conclusion, Context: b.Name, Description: b.Output.Title,
				TargetURL: b.DetailsURL, CheckRun: true, Summary: b.Output.Summary, Text: b.Output.Text}
			if !slices.Contains([]string{"success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required"}, p.State) {
				s.violate(w, http.StatusUnprocessableEntity, "conclusion %q", p.State)
				return
			}
			s.record(p)
			writeJSON(w, http.StatusCreated, map[string]any{"id": len(s.Posts()), "head_sha": p.SHA, "name": p.Context, "status": "completed", "conclusion": p.State})
			return
		}
		m := githubPath.FindStringSubmatch(r.URL.EscapedPath())
		if m == nil {
			s.violate(w, http.StatusNotFound, "path %s: want /repos/{owner}/{repo}/statuses/{sha}", r.URL.EscapedPath())
			return
		}
		if a := r.Header.Get("Accept"); !strings.HasPrefix(a, "application/vnd.github") {
			s.violate(w, http.StatusUnsupportedMediaType, "Accept %q: want application/vnd.github+json", a)
			return
		}
		if v := r.Header.Get("X-GitHub-Api-Version"); v != "2022-11-28" {
			s.violate(w, http.StatusBadRequest, "X-GitHub-Api-Version %q: want 2022-11-28", v)
			return
		}
		var b githubBody
		if err := dec.Decode(&b); err != nil {
			s.violate(w, http.StatusUnprocessableEntity, "body: %v", err)
			return
		}
		p = Post{Repository: m[1] + "/" + m[2], SHA: m[3], State: b.State, Context: b.Context, Description: b.Description, TargetURL: b.TargetURL}
		if p.Context == "" {
			p.Context = "default"
		}
	case "gitea":
		m := giteaPath.FindStringSubmatch(r.URL.EscapedPath())
		if m == nil {
			s.violate(w, http.StatusNotFound, "path %s: want /api/v1/repos/{owner}/{repo}/statuses/{sha}", r.URL.EscapedPath())
			return
		}
		var b giteaBody
		if err := dec.Decode(&b); err != nil {
			s.violate(w, http.StatusUnprocessableEntity, "body: %v", err)
			return
		}
		p = Post{Repository: m[1] + "/" + m[2], SHA: m[3], State: b.State, Context: b.Context, Description: b.Description, TargetURL: b.TargetURL}
	default:
		m := gitlabPath.FindStringSubmatch(r.URL.EscapedPath())
		if m == nil {
			s.violate(w, http.StatusNotFound, "path %s: want /api/v4/projects/{id or url-encoded path}/statuses/{sha}", r.URL.EscapedPath())
			return
		}
		var b gitlabBody
		if err := dec.Decode(&b); err != nil {
			s.violate(w, http.StatusBadRequest, "body: %v", err)
			return
		}
		name := b.Name
		if name == "" {
			name = b.Context
		}
		if name == "" {
			name = "default"
		}
		project := strings.ReplaceAll(m[1], "%2F", "/")
		p = Post{Repository: project, SHA: m[2], State: b.State, Context: name, Description: b.Description, TargetURL: b.TargetURL}
	}
	if !slices.Contains(states[s.Provider], p.State) {
		s.violate(w, http.StatusUnprocessableEntity, "state %q: want one of %v", p.State, states[s.Provider])
		return
	}
	if len([]rune(p.Description)) > 140 && s.Provider == "github" {
		s.violate(w, http.StatusUnprocessableEntity, "description longer than 140 characters")
		return
	}
	s.mu.Lock()
	if s.Provider == "gitlab" {
		// GitLab moves a pending or running status of the same name along its state
		// machine, and refuses to move it to the state it is in.
		for i := len(s.posts) - 1; i >= 0; i-- {
			q := s.posts[i]
			if q.SHA == p.SHA && q.Context == p.Context {
				if q.State == p.State && (q.State == "pending" || q.State == "running") {
					s.mu.Unlock()
					s.violate(w, http.StatusBadRequest, "Cannot transition status via :enqueue from :%s", q.State)
					return
				}
				break
			}
		}
	}
	s.posts = append(s.posts, p)
	id := len(s.posts)
	s.mu.Unlock()
	select {
	case s.Posted <- p:
	default:
	}
	switch s.Provider {
	case "github":
		writeJSON(w, http.StatusCreated, map[string]any{
			"url": "https://api.github.com/repos/" + p.Repository + "/statuses/" + p.SHA, "avatar_url": "https://github.com/images/error/hubot_happy.gif",
			"id": id, "node_id": fmt.Sprintf("SC_%d", id), "state": p.State, "description": p.Description, "target_url": p.TargetURL,
			"context": p.Context, "created_at": now, "updated_at": now, "creator": map[string]any{"login": "octocat", "id": 1, "type": "User"},
		})
	case "gitea":
		writeJSON(w, http.StatusCreated, map[string]any{
			"id": id, "status": p.State, "target_url": p.TargetURL, "description": p.Description, "url": "",
			"context": p.Context, "creator": map[string]any{"id": 1, "login": "operator"}, "created_at": now, "updated_at": now,
		})
	default:
		writeJSON(w, http.StatusCreated, map[string]any{
			"id": id, "sha": p.SHA, "ref": nil, "status": p.State, "name": p.Context, "target_url": p.TargetURL,
			"description": p.Description, "created_at": now, "started_at": nil, "finished_at": nil, "allow_failure": false,
			"coverage": nil, "author": map[string]any{"id": 1, "username": "operator", "state": "active"},
		})
	}
}

// record keeps p and notifies Posted.
func (s *Server) record(p Post) {
	s.mu.Lock()
	s.posts = append(s.posts, p)
	s.mu.Unlock()
	select {
	case s.Posted <- p:
	default:
	}
}
