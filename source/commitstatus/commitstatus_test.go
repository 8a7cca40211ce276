package commitstatus

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

const (
	shaA = "0123456789abcdef0123456789abcdef01234567"
	shaB = "89abcdef0123456789abcdef0123456789abcdef"
)

func tokenFile(t *testing.T, token string) *source.TokenFile {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func options(provider, url, repo string) Options {
	o := DefaultOptions()
	o.Provider, o.URL, o.Repository, o.TokenFile = provider, url, repo, "/unused"
	o.Timeout = 5 * time.Second
	return o
}

// TestProvidersSpeakTheDocumentedShape: each provider posts pending then success (and a
// failure, in GitLab's word "failed") to a server that checks method, path, the
// authentication header of its kind, content type and a body with no unknown field.
func TestProvidersSpeakTheDocumentedShape(t *testing.T) {
	cases := []struct {
		provider, repo, wantRepo, failState string
	}{
		{GitHub, "o/r", "o/r", "failure"},
		{Gitea, "org/universe", "org/universe", "failure"},
		{GitLab, "group/sub/project", "group/sub/project", "failed"},
		{GitLab, "4711", "4711", "failed"},
	}
	for _, c := range cases {
		t.Run(c.provider+" "+c.repo, func(t *testing.T) {
			const token = "glpat-s3cret-t0ken"
			srv := statustest.New(t, c.provider, token)
			o := options(c.provider, srv.URL, c.repo)
			o.TargetURL = "https://operator.example/gitops"
			p, err := NewProvider(o, tokenFile(t, token))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, st := range []Status{{shaA, Pending, "sweep started", ""}, {shaA, Success, "applied 1, in sync 2", ""}, {shaB, Failure, "failed 1", ""},
				{shaA, Success, "applied 1", ClusterContext(DefaultContext, "acme/prod")}} {
				if err := p.Post(ctx, st); err != nil {
					t.Fatalf("post %s: %v (violations %v)", st.State, err, srv.Violations())
				}
			}
			want := []statustest.Post{
				{Repository: c.wantRepo, SHA: shaA, State: "pending", Context: DefaultContext, Description: "sweep started", TargetURL: o.TargetURL},
				{Repository: c.wantRepo, SHA: shaA, State: "success", Context: DefaultContext, Description: "applied 1, in sync 2", TargetURL: o.TargetURL},
				{Repository: c.wantRepo, SHA: shaB, State: c.failState, Context: DefaultContext, Description: "failed 1", TargetURL: o.TargetURL},
				{Repository: c.wantRepo, SHA: shaA, State: "success", Context: "universe-operator/sync/acme/prod", Description: "applied 1", TargetURL: o.TargetURL},
			}
			if d := cmp.Diff(want, srv.Posts()); d != "" {
				t.Errorf("posts (-want +got):\n%s", d)
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Errorf("requests against the documented API: %v", v)
			}
		})
	}
}

// TestFakesRefuseWhatTheHostsRefuse: the fakes are only worth their checks: another
// header form than the provider's is 401, an unknown field and an unknown state are
// refused as violations, and the right request is 201.
func TestFakesRefuseWhatTheHostsRefuse(t *testing.T) {
	cases := []struct {
		provider, path, header, value, wrongHeader, wrongValue string
	}{
		{GitHub, "repos/o/r/statuses/" + shaA, "Authorization", "Bearer t0k", "Authorization", "Basic dDBr"},
		{Gitea, "repos/o/r/statuses/" + shaA, "Authorization", "token t0k", "Authorization", "Bearer t0k"},
		{GitLab, "projects/o%2Fr/statuses/" + shaA, "PRIVATE-TOKEN", "t0k", "Authorization", "Bearer t0k"},
	}
	for _, c := range cases {
		t.Run(c.provider, func(t *testing.T) {
			srv := statustest.New(t, c.provider, "t0k")
			send := func(header, value, body string) int {
				t.Helper()
				req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(srv.URL, "/")+"/"+c.path, strings.NewReader(body))
				req.Header.Set(header, value)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/vnd.github+json")
				req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
				return resp.StatusCode
			}
			state := "success"
			if code := send(c.wrongHeader, c.wrongValue, `{"state":"`+state+`"}`); code != http.StatusUnauthorized {
				t.Errorf("%s: %s answered %d, want 401", c.wrongHeader, c.wrongValue, code)
			}
			if code := send(c.header, c.value, `{"state":"success","colour":"green"}`); code < 400 {
				t.Errorf("an unknown field answered %d", code)
			}
			if code := send(c.header, c.value, `{"state":"bogus"}`); code < 400 {
				t.Errorf("an unknown state answered %d", code)
			}
			if n := len(srv.Violations()); n != 2 {
				t.Errorf("violations %q, want the unknown field and state", srv.Violations())
			}
			if code := send(c.header, c.value, `{"state":"success"}`); code != http.StatusCreated {
				t.Errorf("a valid post answered %d (%q)", code, srv.Violations())
			}
		})
	}
}

// TestTokenNeverInErrorsOrLogs: a host that refuses the token and echoes the header it got
// in its message, one that is down (503) and one that hangs past the timeout: the token is
// in no error and no log line of the poster.
func TestTokenNeverInErrorsOrLogs(t *testing.T) {
	const token = "ghp_v3ry-s3cret-t0ken"
	for _, provider := range []string{GitHub, Gitea, GitLab} {
		for _, fault := range []string{"refused", "down", "hang"} {
			t.Run(provider+" "+fault, func(t *testing.T) {
				srv := statustest.New(t, provider, "another-token")
				srv.Echo()
				switch fault {
				case "down":
					srv.Down(100)
				case "hang":
					srv.Hang()
				}
				o := options(provider, srv.URL, "o/r")
				o.Timeout = 50 * time.Millisecond
				p, err := NewProvider(o, tokenFile(t, token))
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var logged strings.Builder
				log := funcr.New(func(prefix, args string) {
					mu.Lock()
					defer mu.Unlock()
					logged.WriteString(prefix + args + "\n")
				}, funcr.Options{Verbosity: 9})
				poster := NewPoster(p, o, time.Now)
				st := Status{SHA: shaA, State: Pending, Description: "sweep started"}
				err = p.Post(context.Background(), st)
				if err == nil {
					t.Fatal("the post succeeded")
				}
				poster.done(log, st, err)
				poster.done(log, st, err)
				mu.Lock()
				out := logged.String()
				mu.Unlock()
				if strings.Contains(err.Error(), token) || strings.Contains(out, token) {
					t.Errorf("the token leaked:\nerror: %v\nlog: %s", err, out)
				}
				if !strings.Contains(out, "Posting commit status failed") {
					t.Errorf("the failure was not logged: %s", out)
				}
			})
		}
	}
}

// recorder is a Provider that records posts and fails while err is set.
type recorder struct {
	mu    sync.Mutex
	posts []Status
	err   error
}

func (r *recorder) Post(_ context.Context, st Status) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.posts = append(r.posts, st)
	return nil
}

// TestPosterPacesAndDedupes steps the poster through a script on an injected clock: each
// step enqueues, advances the clock, takes the next status or fails a post, and checks
// what the poster did. No sleeps: next is the decision Run acts on.
func TestPosterPacesAndDedupes(t *testing.T) {
	type step struct {
		enqueue *Status
		queued  bool          // Enqueue's answer
		advance time.Duration // then the clock moves
		take    bool          // then next is asked
		got     string        // "sha state" taken, "" for none
		wait    time.Duration // and the wait it says
		fail    bool          // the taken post fails (forgotten: an equal status is queued again)
	}
	st := func(sha string, s State, d string) *Status { return &Status{SHA: sha, State: s, Description: d} }
	cases := []struct {
		name      string
		perMinute int
		burst     int
		steps     []step
	}{
		{"the same status twice is queued once", 60, 5, []step{
			{enqueue: st(shaA, Pending, "started"), queued: true},
			{enqueue: st(shaA, Pending, "started"), queued: false},
			{take: true, got: shaA + " pending"},
			{enqueue: st(shaA, Pending, "started"), queued: false}, // posted already
			{take: true},
		}},
		{"a new description or state is queued", 60, 5, []step{
			{enqueue: st(shaA, Pending, "started"), queued: true},
			{enqueue: st(shaA, Success, "applied 1"), queued: true},
			{enqueue: st(shaA, Success, "applied 2"), queued: true},
			{enqueue: st(shaA, Pending, "started"), queued: true}, // a force-push back to A
			{take: true, got: shaA + " pending"},
			{take: true, got: shaA + " success"},
			{take: true, got: shaA + " success"},
			{take: true, got: shaA + " pending"},
		}},
		{"a failed post is forgotten: the next sweep's equal status is queued", 60, 5, []step{
			{enqueue: st(shaA, Success, "applied 1"), queued: true},
			{take: true, got: shaA + " success", fail: true},
			{enqueue: st(shaA, Success, "applied 1"), queued: true},
			{take: true, got: shaA + " success"},
		}},
		{"a burst, then one per second at 60 a minute", 60, 2, []step{
			{enqueue: st(shaA, Pending, "1"), queued: true},
			{enqueue: st(shaA, Pending, "2"), queued: true},
			{enqueue: st(shaA, Pending, "3"), queued: true},
			{enqueue: st(shaA, Pending, "4"), queued: true},
			{take: true, got: shaA + " pending"},
			{take: true, got: shaA + " pending"},
			{take: true, wait: time.Second},
			{advance: 500 * time.Millisecond, take: true, wait: 500 * time.Millisecond},
			{advance: 500 * time.Millisecond, take: true, got: shaA + " pending"},
			{take: true, wait: time.Second},
			{advance: time.Second, take: true, got: shaA + " pending"},
			{take: true},
		}},
		{"6 a minute: ten seconds between posts after the burst", 6, 1, []step{
			{enqueue: st(shaA, Pending, "started"), queued: true},
			{enqueue: st(shaB, Pending, "started"), queued: true},
			{take: true, got: shaA + " pending"},
			{take: true, wait: 10 * time.Second},
			{advance: 10 * time.Second, take: true, got: shaB + " pending"},
		}},
		{"an idle minute refills the bucket to its burst only", 60, 2, []step{
			{advance: time.Minute},
			{enqueue: st(shaA, Pending, "1"), queued: true},
			{enqueue: st(shaA, Pending, "2"), queued: true},
			{enqueue: st(shaA, Pending, "3"), queued: true},
			{take: true, got: shaA + " pending"},
			{take: true, got: shaA + " pending"},
			{take: true, wait: time.Second},
		}},
		{"each context of a commit is its own: a fleet cluster's equal status is queued too", 60, 5, []step{
			{enqueue: st(shaA, Success, "applied 1"), queued: true},
			{enqueue: &Status{SHA: shaA, State: Success, Description: "applied 1", Context: "c/acme/prod"}, queued: true},
			{enqueue: &Status{SHA: shaA, State: Success, Description: "applied 1", Context: "c/acme/prod"}, queued: false},
			{enqueue: st(shaA, Success, "applied 1"), queued: false},
			{take: true, got: shaA + " success"},
			{take: true, got: shaA + " success c/acme/prod"},
			{take: true},
		}},
		{"no SHA, no post", 60, 5, []step{
			{enqueue: st("main", Pending, "started"), queued: false},
			{enqueue: st("", Pending, "started"), queued: false},
			{take: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			o := DefaultOptions()
			o.PerMinute, o.Burst = c.perMinute, c.burst
			p := NewPoster(&recorder{}, o, func() time.Time { return now })
			for i, s := range c.steps {
				if s.enqueue != nil {
					if got := p.Enqueue(*s.enqueue); got != s.queued {
						t.Fatalf("step %d: Enqueue(%+v) = %v, want %v", i, *s.enqueue, got, s.queued)
					}
				}
				now = now.Add(s.advance)
				if !s.take {
					continue
				}
				got, wait, ok := p.next(now)
				name := ""
				if ok {
					name = strings.TrimSpace(got.SHA + " " + string(got.State) + " " + got.Context)
				}
				if name != s.got || wait != s.wait {
					t.Fatalf("step %d: next = %q, wait %s; want %q, wait %s", i, name, wait, s.got, s.wait)
				}
				if ok {
					var err error
					if s.fail {
						err = errors.New("503")
					}
					p.done(logr.Discard(), got, err)
				}
			}
		})
	}
}

// TestQueueDropsOldest: a full queue drops its oldest status, counts it, and forgets it,
// so the same status is queued again when a later sweep asks.
func TestQueueDropsOldest(t *testing.T) {
	o := DefaultOptions()
	o.Queue = 3
	p := NewPoster(&recorder{}, o, time.Now)
	before := testutil.ToFloat64(metricStatuses.WithLabelValues("dropped"))
	shas := []string{shaA, shaB, strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40)}
	for _, sha := range shas {
		if !p.Enqueue(Status{SHA: sha, State: Pending, Description: "started"}) {
			t.Fatalf("Enqueue %s refused", sha)
		}
	}
	if d := testutil.ToFloat64(metricStatuses.WithLabelValues("dropped")) - before; d != 2 {
		t.Errorf("dropped %v, want 2", d)
	}
	if n := p.Pending(); n != 3 {
		t.Errorf("%d queued, want 3", n)
	}
	got, _, _ := p.next(time.Now())
	if got.SHA != shas[2] {
		t.Errorf("oldest left is %s, want %s", got.SHA, shas[2])
	}
	if !p.Enqueue(Status{SHA: shaA, State: Pending, Description: "started"}) {
		t.Error("a dropped status was not forgotten: the next sweep cannot queue it again")
	}
}

// TestFailuresLoggedOncePerChange: a run of failures logs one error, a recovery one line,
// and the next failure one error again.
func TestFailuresLoggedOncePerChange(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	p := NewPoster(&recorder{}, DefaultOptions(), time.Now)
	st := Status{SHA: shaA, State: Success, Description: "ok"}
	outage := errors.New("POST /repos/o/r/statuses/x: answered 503 Service Unavailable")
	for _, err := range []error{outage, outage, outage, nil, nil, outage} {
		p.done(log, st, err)
	}
	var errs, again int
	for _, l := range lines {
		switch {
		case strings.Contains(l, `"msg"="Posting commit status failed; later`):
			errs++
		case strings.Contains(l, "Posting commit statuses again"):
			again++
		}
	}
	if errs != 2 || again != 1 || len(lines) != 3 {
		t.Errorf("logged %d errors and %d recoveries in %d lines, want 2, 1, 3: %q", errs, again, len(lines), lines)
	}
}

// TestEnqueueNeverWaitsForTheHost: with the host hanging and Run stuck in a post, a
// thousand Enqueues return (the queue drops the oldest), and Run ends with its context.
func TestEnqueueNeverWaitsForTheHost(t *testing.T) {
	srv := statustest.New(t, GitHub, "t0k")
	srv.Hang()
	o := options(GitHub, srv.URL, "o/r")
	o.Timeout = time.Hour // only the context ends the post
	prov, err := NewProvider(o, tokenFile(t, "t0k"))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPoster(prov, o, time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx, logr.Discard()); close(done) }()
	p.Enqueue(Status{SHA: shaA, State: Pending, Description: "0"})
	for i := range 1000 {
		p.Enqueue(Status{SHA: shaB, State: Pending, Description: strings.Repeat("x", i%100+1)})
	}
	if n := p.Pending(); n > o.Queue {
		t.Errorf("%d queued, want at most %d", n, o.Queue)
	}
	cancel()
	<-done
}

func TestValidate(t *testing.T) {
	ok := func(mod func(*Options)) Options {
		o := DefaultOptions()
		o.Provider, o.TokenFile, o.Repository = GitHub, "/t", "o/r"
		mod(&o)
		return o
	}
	cases := []struct {
		name string
		o    Options
		want string // "" valid
	}{
		{"off", DefaultOptions(), ""},
		{"github", ok(func(*Options) {}), ""},
		{"gitlab nested project", ok(func(o *Options) { o.Provider, o.URL, o.Repository = GitLab, "https://gl/api/v4", "a/b/c" }), ""},
		{"url without provider", func() Options { o := DefaultOptions(); o.URL = "https://x"; return o }(), "--commit-status-url is set but --commit-status is not"},
		{"token file without provider", func() Options { o := DefaultOptions(); o.TokenFile = "/t"; return o }(), "--commit-status-token-file is set but"},
		{"unknown provider", ok(func(o *Options) { o.Provider = "bitbucket" }), `--commit-status "bitbucket"`},
		{"no token file", ok(func(o *Options) { o.TokenFile = "" }), "needs --commit-status-token-file"},
		{"gitea without url", ok(func(o *Options) { o.Provider = Gitea }), "needs --commit-status-url"},
		{"no repository", ok(func(o *Options) { o.Repository = "" }), "want owner/name"},
		{"bad repository", ok(func(o *Options) { o.Repository = "o/r/x" }), "want owner/name"},
		{"zero rate", ok(func(o *Options) { o.PerMinute = 0 }), "at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate = %v, want %q", err, c.want)
			}
		})
	}
}

func TestRepositoryOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/o/r.git":         "o/r",
		"https://gitea.example/org/universe": "org/universe",
		"git@gitlab.example:group/sub/p.git": "group/sub/p",
		"ssh://git@host:2222/o/r.git":        "o/r",
		"https://host/":                      "",
		"file:///tmp/repo":                   "",
		"/tmp/repo":                          "",
	} {
		if got := RepositoryOf(in); got != want {
			t.Errorf("RepositoryOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 200)
	if got := []rune(Clip(long)); len(got) != MaxDescription || got[len(got)-1] != '…' {
		t.Errorf("Clip gave %d characters", len(got))
	}
	if Clip("short") != "short" {
		t.Error("Clip changed a short description")
	}
}

// TestClusterContexts: a fleet cluster's sweep posts through Poster.In under
// ClusterContext; the home sweep keeps the configured context.
func TestClusterContexts(t *testing.T) {
	for _, c := range []struct{ base, cluster, want string }{
		{DefaultContext, "", DefaultContext},
		{DefaultContext, "acme/prod", "universe-operator/sync/acme/prod"},
		{"ci/deploy", "acme/edge-1", "ci/deploy/acme/edge-1"},
	} {
		if got := ClusterContext(c.base, c.cluster); got != c.want {
			t.Errorf("ClusterContext(%q, %q) = %q, want %q", c.base, c.cluster, got, c.want)
		}
	}
	p := NewPoster(&recorder{}, DefaultOptions(), time.Now)
	in := p.In("universe-operator/sync/acme/prod")
	if !in.Enqueue(Status{SHA: shaA, State: Pending, Description: "sweep started"}) || !p.Enqueue(Status{SHA: shaA, State: Pending, Description: "sweep started"}) {
		t.Fatal("the same status in two contexts was not queued twice")
	}
	if in.Enqueue(Status{SHA: shaA, State: Pending, Description: "sweep started"}) {
		t.Error("a repeat in the cluster's context was queued again")
	}
	var got []string
	for {
		st, _, ok := p.next(time.Now())
		if !ok {
			break
		}
		got = append(got, st.Context)
	}
	if strings.Join(got, ",") != "universe-operator/sync/acme/prod," {
		t.Errorf("queued contexts %q", got)
	}
}
