package gitops

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestParsePullRequest reads the hosts' documented pull request payloads (testdata/pullrequest,
// whose README says where each comes from) and refuses or ignores the rest.
func TestParsePullRequest(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/pullrequest/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gh, gitea, gl := read("github-synchronize.json"), read("gitea-synchronized.json"), read("gitlab-merge-request-open.json")
	hdr := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	github, giteaH, gitlab := hdr("X-GitHub-Event", "pull_request"), hdr("X-Gitea-Event", "pull_request", "X-GitHub-Event", "pull_request"), hdr("X-Gitlab-Event", "Merge Request Hook")
	cases := map[string]struct {
		h       http.Header
		body    string
		want    PullRequest
		ignored string // a part of the reason
		err     string // a part of the error
	}{
		"github synchronize": {h: github, body: gh, want: PullRequest{Host: HostGitHub, Number: 2, Action: "synchronize",
			BaseRef: "master", BaseSHA: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "refs/pull/2/head"}},
		"github opened": {h: github, body: strings.Replace(gh, `"synchronize"`, `"opened"`, 1),
			want: PullRequest{Host: HostGitHub, Number: 2, Action: "opened", BaseRef: "master", BaseSHA: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "refs/pull/2/head"}},
		"github form body": {h: http.Header{"X-Github-Event": {"pull_request"}, "Content-Type": {"application/x-www-form-urlencoded"}}, body: "payload=" + url.QueryEscape(gh),
			want: PullRequest{Host: HostGitHub, Number: 2, Action: "synchronize", BaseRef: "master", BaseSHA: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "refs/pull/2/head"}},
		"github closed is ignored":            {h: github, body: strings.Replace(gh, `"synchronize"`, `"closed"`, 1), ignored: `action "closed"`},
		"github labeled is ignored":           {h: github, body: strings.Replace(gh, `"synchronize"`, `"labeled"`, 1), ignored: `action "labeled"`},
		"github gitea's word is not github's": {h: github, body: strings.Replace(gh, `"synchronize"`, `"synchronized"`, 1), ignored: `action "synchronized"`},
		"github fork is ignored":              {h: github, body: strings.Replace(gh, `"repo": {"id": 186853002`, `"repo": {"id": 99`, 1), ignored: "fork"},
		"github deleted fork is ignored": {h: github, body: strings.Replace(gh, `"repo": {"id": 186853002, "name": "Hello-World", "full_name": "Codertocat/Hello-World", "private": false, "fork": false, "default_branch": "master"}
    },
    "base"`, `"repo": null
    },
    "base"`, 1), ignored: "fork"},
		"github not json":        {h: github, body: `{"action":`, err: "not JSON"},
		"github no head":         {h: github, body: `{"action":"opened","number":2,"pull_request":{"base":{"ref":"main"}}}`, err: "no pull_request with head and base"},
		"github bad head sha":    {h: github, body: strings.ReplaceAll(gh, "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "--upload-pack=evil"), err: "head sha"},
		"github bad base ref":    {h: github, body: strings.Replace(gh, `"ref": "master"`, `"ref": "ma..ster"`, 1), err: "base ref"},
		"github no number":       {h: github, body: strings.Replace(gh, `"number": 2,`, ``, 1), err: "number 0"},
		"github form no payload": {h: http.Header{"X-Github-Event": {"pull_request"}, "Content-Type": {"application/x-www-form-urlencoded"}}, body: "x=1", err: "payload field"},
		"gitea synchronized": {h: giteaH, body: gitea, want: PullRequest{Host: HostGitea, Number: 3, Action: "synchronized",
			BaseRef: "main", BaseSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", HeadSHA: "4f2b8d9e1a3c5b7d9f1e3a5c7b9d1f3e5a7c9b1d", HeadRef: "refs/pull/3/head"}},
		"forgejo synchronized": {h: hdr("X-Forgejo-Event", "pull_request"), body: gitea, want: PullRequest{Host: HostGitea, Number: 3, Action: "synchronized",
			BaseRef: "main", BaseSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", HeadSHA: "4f2b8d9e1a3c5b7d9f1e3a5c7b9d1f3e5a7c9b1d", HeadRef: "refs/pull/3/head"}},
		"gitea fork is ignored": {h: giteaH, body: strings.Replace(gitea, `"repo_id": 7,
      "repo": {"id": 7, "owner": {"id": 2, "login": "acme"}, "name": "universe", "full_name": "acme/universe", "fork": false, "default_branch": "main"}
    },
    "merge_base"`, `"repo_id": 8,
      "repo": {"id": 8, "owner": {"id": 3, "login": "mallory"}, "name": "universe", "full_name": "mallory/universe", "fork": true, "default_branch": "main"}
    },
    "merge_base"`, 1), ignored: "fork"},
		"gitlab open": {h: gitlab, body: gl, want: PullRequest{Host: HostGitLab, Number: 1, Action: "open",
			BaseRef: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", HeadRef: "refs/merge-requests/1/head"}},
		"gitlab update": {h: gitlab, body: strings.Replace(gl, `"action": "open"`, `"action": "update"`, 1), want: PullRequest{Host: HostGitLab, Number: 1, Action: "update",
			BaseRef: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", HeadRef: "refs/merge-requests/1/head"}},
		"gitlab merge is ignored":    {h: gitlab, body: strings.Replace(gl, `"action": "open"`, `"action": "merge"`, 1), ignored: `action "merge"`},
		"gitlab approved is ignored": {h: gitlab, body: strings.Replace(gl, `"action": "open"`, `"action": "approved"`, 1), ignored: `action "approved"`},
		"gitlab fork is ignored":     {h: gitlab, body: strings.Replace(gl, `"source_project_id": 14`, `"source_project_id": 15`, 1), ignored: "fork"},
		"gitlab another kind":        {h: gitlab, body: `{"object_kind":"push"}`, err: `object_kind "push"`},
		"gitlab no last commit":      {h: gitlab, body: strings.Replace(gl, `"last_commit"`, `"first_commit"`, 1), err: "head sha"},
		"push is not one":            {h: hdr("X-GitHub-Event", "push"), body: `{}`, err: "not a pull request event"},
		"gitea push is not one":      {h: hdr("X-Gitea-Event", "push", "X-GitHub-Event", "pull_request"), body: gitea, err: "not a pull request event"},
		"gitlab push is not one":     {h: hdr("X-Gitlab-Event", "Push Hook"), body: gl, err: "not a pull request event"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ignored, err := ParsePullRequest(tc.h, []byte(tc.body))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.ignored != "":
				if !strings.Contains(ignored, tc.ignored) {
					t.Fatalf("ignored %q, want a reason naming %q (%+v)", ignored, tc.ignored, got)
				}
			case ignored != "":
				t.Fatalf("ignored: %s", ignored)
			case got != tc.want:
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

type queueFunc func(PullRequest) string

func (f queueFunc) Enqueue(pr PullRequest) string { return f(pr) }

type relayCount struct{ n int }

func (r *relayCount) Record(context.Context) error { r.n++; return nil }

// TestWebhookPullRequest: a pull request event goes through the push event's signature
// check, then to the preview's queue (202) or is acknowledged and ignored (200, the log
// saying why); it never fires a sweep nor is relayed to a leader.
func TestWebhookPullRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/pullrequest/github-synchronize.json")
	if err != nil {
		t.Fatal(err)
	}
	closed := []byte(strings.Replace(string(body), `"synchronize"`, `"closed"`, 1))
	cases := map[string]struct {
		body   []byte
		sig    string // X-Hub-Signature-256; "" unsigned
		queue  string // what the queue answers; "-" no queue (no --preview)
		code   int
		queued bool
		log    string
	}{
		"queued":                {body: body, sig: "sha256=" + sign(hookSecret, string(body)), code: http.StatusAccepted, queued: true, log: "Pull request queued for a preview"},
		"unsigned":              {body: body, code: http.StatusUnauthorized, log: "no signature header"},
		"badly signed":          {body: body, sig: "sha256=" + sign("other", string(body)), code: http.StatusUnauthorized, log: "signature does not match"},
		"preview off":           {body: body, sig: "sha256=" + sign(hookSecret, string(body)), queue: "-", code: http.StatusOK, log: "the preview is off (operator run --preview)"},
		"unsigned, preview off": {body: body, queue: "-", code: http.StatusUnauthorized, log: "no signature header"},
		"closed":                {body: closed, sig: "sha256=" + sign(hookSecret, string(closed)), code: http.StatusOK, log: `action \"closed\"`},
		"malformed":             {body: []byte(`{"number":`), sig: "sha256=" + sign(hookSecret, `{"number":`), code: http.StatusBadRequest, log: "not JSON"},
		"refused by the queue":  {body: body, sig: "sha256=" + sign(hookSecret, string(body)), queue: "base branch master is not the swept branch main", code: http.StatusOK, queued: true, log: "not the swept branch"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var logs strings.Builder
			var mu sync.Mutex
			log := funcr.New(func(p, a string) { mu.Lock(); logs.WriteString(p + a + "\n"); mu.Unlock() }, funcr.Options{Verbosity: 1})
			var got []PullRequest
			trig, relay := NewTrigger(), &relayCount{}
			h := &Webhook{Trigger: trig, Secret: staticSecret(hookSecret), Log: log, Leader: func() bool { return false }, Relay: relay}
			if tc.queue != "-" {
				h.PullRequests = queueFunc(func(pr PullRequest) string { got = append(got, pr); return tc.queue })
			}
			req := httptest.NewRequest(http.MethodPost, "/reconcile", bytes.NewReader(tc.body))
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("Content-Type", "application/json")
			if tc.sig != "" {
				req.Header.Set(HeaderGitHub, tc.sig)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Errorf("status %d, want %d (%s)", rec.Code, tc.code, rec.Body)
			}
			if (len(got) == 1) != tc.queued || len(got) > 1 {
				t.Errorf("queued %+v, want queued %v", got, tc.queued)
			}
			if tc.queued && (got[0].Number != 2 || got[0].HeadRef != "refs/pull/2/head") {
				t.Errorf("queued %+v", got[0])
			}
			if len(trig.C()) != 0 || relay.n != 0 {
				t.Errorf("a pull request event fired a sweep (%d) or was relayed (%d)", len(trig.C()), relay.n)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, logs.String())
			}
			if strings.Contains(logs.String(), hookSecret) {
				t.Errorf("the log shows the secret:\n%s", logs.String())
			}
		})
	}
}
