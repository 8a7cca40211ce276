package alert

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openuniverse/operator/source"
)

// received is one request a test server saw.
type received struct {
	header http.Header
	body   []byte
}

// recorder is an httptest server that keeps what it receives and answers with code.
type recorder struct {
	*httptest.Server
	got chan received
}

func newRecorder(t *testing.T, check func(received) int) *recorder {
	t.Helper()
	r := &recorder{got: make(chan received, 16)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rc := received{header: req.Header.Clone(), body: body}
		code := http.StatusOK
		if req.Method != http.MethodPost {
			code = http.StatusMethodNotAllowed
		} else if check != nil {
			code = check(rc)
		}
		w.WriteHeader(code)
		if code == http.StatusOK {
			_, _ = io.WriteString(w, "ok")
		} else {
			_, _ = io.WriteString(w, "invalid_token")
		}
		r.got <- rc
	}))
	t.Cleanup(r.Close)
	return r
}

// receiver verifies the generic webhook as a receiver would: the signature over the raw body
// with its key, then the body's timestamp equal to the header's and recent.
func receiver(key string, now time.Time) func(received) int {
	return func(r received) int {
		if r.header.Get("Content-Type") != "application/json" {
			return http.StatusUnsupportedMediaType
		}
		if !Verify([]byte(key), r.body, r.header.Get(HeaderSignature)) {
			return http.StatusUnauthorized
		}
		var p Payload
		if err := json.Unmarshal(r.body, &p); err != nil {
			return http.StatusBadRequest
		}
		ts, err := strconv.ParseInt(r.header.Get(HeaderTimestamp), 10, 64)
		if err != nil || ts != p.Timestamp || now.Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
			return http.StatusUnauthorized // a replay, or a timestamp the body does not sign
		}
		return http.StatusOK
	}
}

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func fixedClock() func() time.Time { return func() time.Time { return t0 } }

func sinkFor(t *testing.T, c Config) *Sink {
	t.Helper()
	if c.Now == nil {
		c.Now = fixedClock()
	}
	if c.RetryMax == 0 {
		c.RetryMax = -1
	}
	s, err := New(c, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sendOne sends e through every target of s synchronously (the worker's path, without its
// goroutine) and returns each target's failure reason ("" when delivered).
func sendOne(s *Sink, e Event) []string {
	var out []string
	e = bounded(e, s.mask)
	for _, t := range s.targets {
		out = append(out, t.send(context.Background(), message{ev: e, at: s.now()}))
	}
	return out
}

var sample = Event{Kind: DriftReverted, Warning: true, Cluster: "home", Revision: "0123456789abcdef0123",
	Summary: "reverted drift on 1 object <@here> & co", Details: []string{"ConfigMap apps/web (changed by kubectl-edit)"}}

// TestSlackBody: the incoming webhook gets text and blocks as Slack documents them, mrkdwn
// escaped, as JSON.
func TestSlackBody(t *testing.T) {
	srv := newRecorder(t, nil)
	s := sinkFor(t, Config{SlackURL: source.NewToken(srv.URL + "/services/T000/B000/XXXX")})
	if got := sendOne(s, sample); got[0] != "" {
		t.Fatalf("not delivered: %s", got[0])
	}
	r := <-srv.got
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var m struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
			Elements []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if !strings.Contains(m.Text, "Drift reverted") || !strings.Contains(m.Text, "0123456789ab") {
		t.Errorf("text %q", m.Text)
	}
	if len(m.Blocks) != 3 || m.Blocks[0].Type != "section" || m.Blocks[0].Text.Type != "mrkdwn" || m.Blocks[2].Type != "context" ||
		len(m.Blocks[2].Elements) != 1 || m.Blocks[2].Elements[0].Type != "mrkdwn" {
		t.Fatalf("blocks %s", r.body)
	}
	if b := m.Blocks[0].Text.Text; !strings.Contains(b, "&lt;@here&gt; &amp; co") || strings.Contains(b, "<@here>") {
		t.Errorf("mrkdwn not escaped: %q", b)
	}
	if !strings.Contains(m.Blocks[1].Text.Text, "ConfigMap apps/web") {
		t.Errorf("details %q", m.Blocks[1].Text.Text)
	}
	for _, h := range []string{HeaderSignature, HeaderTimestamp} {
		if r.header.Get(h) != "" {
			t.Errorf("Slack got %s", h)
		}
	}
}

// TestWebhookSigned: the generic webhook's receiver verifies the HMAC with its key and the
// signed timestamp; a receiver with another key refuses it, and the sink says 401.
func TestWebhookSigned(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	srv := newRecorder(t, receiver(key, t0))
	s := sinkFor(t, Config{WebhookURL: source.NewToken(srv.URL + "/hook"), WebhookKey: source.NewToken(key)})
	if got := sendOne(s, sample); got[0] != "" {
		t.Fatalf("not delivered: %s", got[0])
	}
	r := <-srv.got
	var p Payload
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != DriftReverted || p.Severity != "warning" || p.Cluster != "home" || p.Timestamp != t0.Unix() || p.ID == "" ||
		r.header.Get(HeaderDelivery) != p.ID || r.header.Get(HeaderEvent) != string(DriftReverted) || len(p.Details) != 1 {
		t.Fatalf("payload %s, headers %v", r.body, r.header)
	}
	if !strings.HasPrefix(r.header.Get(HeaderSignature), "sha256=") || len(r.header.Get(HeaderSignature)) != len("sha256=")+64 {
		t.Fatalf("signature %q", r.header.Get(HeaderSignature))
	}
	// The same body under another key, or a changed body, does not verify.
	if Verify([]byte("another key entirely, 32 bytes!!"), r.body, r.header.Get(HeaderSignature)) ||
		Verify([]byte(key), append(r.body, ' '), r.header.Get(HeaderSignature)) {
		t.Fatal("the signature verifies what it should not")
	}

	wrong := newRecorder(t, receiver("not the sender's key, 32 bytes!!", t0))
	s = sinkFor(t, Config{WebhookURL: source.NewToken(wrong.URL), WebhookKey: source.NewToken(key)})
	if got := sendOne(s, sample); got[0] != "answered 401 invalid_token" {
		t.Fatalf("reason %q, want the 401", got[0])
	}
	<-wrong.got

	// A replay a day later: the signature holds, the timestamp does not.
	late := newRecorder(t, receiver(key, t0.Add(24*time.Hour)))
	s = sinkFor(t, Config{WebhookURL: source.NewToken(late.URL), WebhookKey: source.NewToken(key)})
	if got := sendOne(s, sample); got[0] != "answered 401 invalid_token" {
		t.Fatalf("reason %q, want the receiver to refuse a stale timestamp", got[0])
	}
	<-late.got
}

// TestNoSecretInPayload: a secret planted in an event (the sink's own URL and key, a token of
// Config.Mask) never reaches a target, and the failure log holds neither URL nor key.
func TestNoSecretInPayload(t *testing.T) {
	const key, gitToken = "0123456789abcdef0123456789abcdef", "ghp_plantedPlantedPlanted0000"
	slack := newRecorder(t, nil)
	hook := newRecorder(t, receiver(key, t0))
	slackURL := slack.URL + "/services/T000/B000/SECRETPATH"
	s := sinkFor(t, Config{SlackURL: source.NewToken(slackURL), WebhookURL: source.NewToken(hook.URL + "/h"),
		WebhookKey: source.NewToken(key), Mask: []source.Token{source.NewToken(gitToken)}})
	e := Event{Kind: SweepFailed, Warning: true, Summary: "head failed: token " + gitToken + " url " + slackURL,
		Details: []string{"key " + key, "x-" + gitToken}, Object: gitToken, Revision: gitToken}
	for _, reason := range sendOne(s, e) {
		if reason != "" {
			t.Fatalf("not delivered: %s", reason)
		}
	}
	for _, r := range []received{<-slack.got, <-hook.got} {
		for _, secret := range []string{gitToken, "SECRETPATH", key} {
			if strings.Contains(string(r.body), secret) {
				t.Fatalf("payload carries a planted secret: %s", r.body)
			}
		}
		if !strings.Contains(string(r.body), redacted) {
			t.Fatalf("payload %s: want %s where the secret was", r.body, redacted)
		}
	}

	// A target that refuses: one log line, with neither the URL nor the key.
	var logs []string
	var mu sync.Mutex
	log := funcr.New(func(prefix, args string) { mu.Lock(); logs = append(logs, args); mu.Unlock() }, funcr.Options{})
	down := newRecorder(t, func(received) int { return http.StatusInternalServerError })
	downURL := down.URL + "/services/T000/B000/SECRETPATH"
	s, err := New(Config{SlackURL: source.NewToken(downURL), RetryMax: -1, Now: fixedClock()}, log)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(metricAlerts.WithLabelValues("slack", "failed"))
	for i := range 3 {
		s.deliver(context.Background(), s.targets[0], message{ev: Event{Kind: SweepFailed, Summary: strconv.Itoa(i)}, at: t0})
		<-down.got
	}
	if got := testutil.ToFloat64(metricAlerts.WithLabelValues("slack", "failed")) - before; got != 3 {
		t.Fatalf("failed counted %v times, want 3", got)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "answered 500") {
		t.Fatalf("logs %q: want one line with the status", logs)
	}
	for _, l := range logs {
		if strings.Contains(l, "SECRETPATH") || strings.Contains(l, down.URL) {
			t.Fatalf("the log names the URL: %s", l)
		}
	}
}

// TestAlertNeverBlocks: a target that never answers fills its queue; Alert keeps returning
// (drops are counted) and the other target still gets its message.
func TestAlertNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) })
	const key = "0123456789abcdef0123456789abcdef"
	hook := newRecorder(t, receiver(key, t0))
	s := sinkFor(t, Config{SlackURL: source.NewToken(hung.URL), WebhookURL: source.NewToken(hook.URL), WebhookKey: source.NewToken(key),
		Queue: 4, Burst: 1000, Every: time.Nanosecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	dropped := testutil.ToFloat64(metricAlerts.WithLabelValues("slack", "dropped"))
	const n = 100
	for i := range n {
		s.Alert(Event{Kind: SweepFailed, Cluster: strconv.Itoa(i), Summary: "x"}) // returns with the Slack target hung
	}
	// the slack worker holds at most one message in flight and Queue in its queue
	if got := testutil.ToFloat64(metricAlerts.WithLabelValues("slack", "dropped")) - dropped; got < n-5 {
		t.Fatalf("%v dropped, want at least %d", got, n-5)
	}
	<-hook.got // the webhook is served by its own worker
}

// TestDedupeThroughAlert: the same event twice in the window queues one message; the next
// send after the window says how many were held back.
func TestDedupeThroughAlert(t *testing.T) {
	now := t0
	srv := newRecorder(t, nil)
	s := sinkFor(t, Config{SlackURL: source.NewToken(srv.URL), Now: func() time.Time { return now }})
	for range 3 {
		s.Alert(sample)
	}
	if got := len(s.targets[0].queue); got != 1 {
		t.Fatalf("%d queued, want 1", got)
	}
	now = now.Add(DefaultWindow)
	s.Alert(sample)
	<-s.targets[0].queue
	m := <-s.targets[0].queue
	if m.repeats != 2 {
		t.Fatalf("repeats %d, want 2", m.repeats)
	}
	body, err := slackBody(m.ev, m.repeats)
	if err != nil || !strings.Contains(string(body), "2 more since the last alert") {
		t.Fatalf("body %s (%v)", body, err)
	}
}

// TestFromSecret: the Secret's keys, and refusals that name the Secret and the key, never a
// value.
func TestFromSecret(t *testing.T) {
	const hookURL, slackURL, key = "https://hooks.example.com/in/SECRET1", "https://hooks.slack.com/services/T/B/SECRET2", "SECRET3-0123456789abcdef"
	cases := []struct {
		name    string
		data    map[string]string
		wantErr string
	}{
		{"slack only", map[string]string{KeySlackURL: slackURL + "\n"}, ""},
		{"webhook with key", map[string]string{KeyWebhookURL: hookURL, KeyWebhookKey: key}, ""},
		{"both", map[string]string{KeySlackURL: slackURL, KeyWebhookURL: hookURL, KeyWebhookKey: key}, ""},
		{"empty", map[string]string{}, "alerts Secret universe-system/alerts: holds neither slack-url nor webhook-url"},
		{"a typo", map[string]string{"slack_url": slackURL}, "alerts Secret universe-system/alerts: key slack_url: not a key the operator reads"},
		{"plain http", map[string]string{KeySlackURL: "http://hooks.slack.com/services/SECRET2"}, "key slack-url: want an absolute https:// URL"},
		{"user info", map[string]string{KeyWebhookURL: "https://u:SECRET1@hooks.example.com/", KeyWebhookKey: key}, "key webhook-url: want an absolute https:// URL"},
		{"not a URL", map[string]string{KeySlackURL: "SECRET2"}, "key slack-url: want an absolute https:// URL"},
		{"blank", map[string]string{KeySlackURL: " \n"}, "key slack-url: empty"},
		{"webhook without key", map[string]string{KeyWebhookURL: hookURL}, "key webhook-hmac-key: missing"},
		{"key without webhook", map[string]string{KeySlackURL: slackURL, KeyWebhookKey: key}, "key webhook-hmac-key: set without webhook-url"},
		{"short key", map[string]string{KeyWebhookURL: hookURL, KeyWebhookKey: "SECRET3"}, "key webhook-hmac-key: shorter than 16 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tc.data {
				data[k] = []byte(v)
			}
			c, err := FromSecret("universe-system/alerts", data)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := New(c, logr.Discard()); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(strings.Join([]string{c.SlackURL.String(), c.WebhookURL.String(), c.WebhookKey.String()}, ""), "SECRET") {
					t.Fatal("a Token prints its value")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "hooks.") {
				t.Fatalf("the error echoes a value: %v", err)
			}
		})
	}
}
