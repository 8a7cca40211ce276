package alert

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/transport"
)

// Defaults of a Sink.
const (
	DefaultWindow = 10 * time.Minute // a key is sent at most once per window
	DefaultEvery  = 6 * time.Second  // a target refills one message per 6 s (10 a minute) …
	DefaultBurst  = 10               // … up to 10 at once
	DefaultQueue  = 64               // messages waiting per target
	// sendTimeout bounds one attempt; retries (retryablehttp) come on top.
	sendTimeout = 10 * time.Second
)

var metricAlerts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "universe_operator_alerts_total",
	Help: "Alerts by target (slack, webhook) and result: sent, failed (the target refused or could not be reached after retries), dropped (its queue was full), deduplicated and rate_limited (held back, counted in the next send's repeats), unpaired (a recovery whose failure the target was not sent).",
}, []string{"target", "result"})

// Metrics lists the sink's collectors; cmd/operator registers them once, with every loop's.
func Metrics() []prometheus.Collector { return []prometheus.Collector{metricAlerts} }

// Config is what a Sink sends to and how often. FromSecret fills the targets.
type Config struct {
	// SlackURL is a Slack-compatible incoming webhook; WebhookURL a generic JSON webhook,
	// signed with WebhookKey. Either may be empty, not both.
	SlackURL, WebhookURL, WebhookKey source.Token
	// Window, Every and Burst tune the Gate of each target (the defaults when zero); Queue
	// bounds each target's queue (DefaultQueue).
	Window, Every time.Duration
	Burst, Queue  int
	// RetryMax is how many times retryablehttp retries an attempt (3 when zero, none when
	// negative); RetryWaitMin and RetryWaitMax its backoff (1 s and 30 s when zero).
	RetryMax                   int
	RetryWaitMin, RetryWaitMax time.Duration
	// Mask are more secrets no payload may carry (the git token): replaced like the
	// sink's own URLs and key.
	Mask []source.Token
	// Now is the clock of the gates (time.Now when nil).
	Now func() time.Time
}

// Sink is the Hook that sends alerts: Alert decides and queues, Start drains the queues.
type Sink struct {
	targets []*target
	mask    []string
	now     func() time.Time
	log     logr.Logger
}

// target is one destination with its gate, queue and failure state.
type target struct {
	name   string // "slack" or "webhook": the metric's label and the log's
	url    string
	key    []byte // the webhook's HMAC key; nil for Slack
	client *http.Client

	mu   sync.Mutex // guards gate (Alert is called from many loops)
	gate *Gate

	queue   chan message
	failing bool // only the target's worker touches it
}

type message struct {
	ev      Event
	repeats int
	at      time.Time
}

// New returns the sink of c. Its errors name the setting, never a value.
func New(c Config, log logr.Logger) (*Sink, error) {
	if c.SlackURL.IsZero() && c.WebhookURL.IsZero() {
		return nil, errors.New("no alert target: want a Slack URL, a webhook URL, or both")
	}
	if !c.WebhookURL.IsZero() && c.WebhookKey.IsZero() {
		return nil, errors.New("the webhook needs an HMAC key")
	}
	c = c.withDefaults()
	s := &Sink{now: c.Now, log: log}
	for _, t := range []source.Token{c.SlackURL, c.WebhookURL, c.WebhookKey} {
		s.mask = append(s.mask, t.Reveal())
	}
	for _, t := range c.Mask {
		s.mask = append(s.mask, t.Reveal())
	}
	for _, spec := range []struct {
		name string
		url  source.Token
		key  source.Token
	}{{"slack", c.SlackURL, source.Token{}}, {"webhook", c.WebhookURL, c.WebhookKey}} {
		if spec.url.IsZero() {
			continue
		}
		if err := CheckURL(spec.url.Reveal()); err != nil {
			return nil, fmt.Errorf("the %s URL: %w", spec.name, err)
		}
		hc, _, err := transport.New(spec.url.Reveal(), transport.Auth{}, transport.Options{Peer: spec.name, Anonymous: true,
			Timeout: sendTimeout, RetryMax: c.RetryMax, RetryWaitMin: c.RetryWaitMin, RetryWaitMax: c.RetryWaitMax})
		if err != nil {
			return nil, fmt.Errorf("the %s URL: not usable", spec.name) // transport's error may name the host
		}
		t := &target{name: spec.name, url: spec.url.Reveal(), client: hc, gate: NewGate(c.Window, c.Every, c.Burst),
			queue: make(chan message, c.Queue)}
		if !spec.key.IsZero() {
			t.key = []byte(spec.key.Reveal())
		}
		s.targets = append(s.targets, t)
	}
	return s, nil
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Every <= 0 {
		c.Every = DefaultEvery
	}
	if c.Burst <= 0 {
		c.Burst = DefaultBurst
	}
	if c.Queue <= 0 {
		c.Queue = DefaultQueue
	}
	switch {
	case c.RetryMax == 0:
		c.RetryMax = 3
	case c.RetryMax < 0:
		c.RetryMax = 0
	}
	if c.RetryWaitMin <= 0 {
		c.RetryWaitMin = time.Second
	}
	if c.RetryWaitMax <= 0 {
		c.RetryWaitMax = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// CheckURL accepts an absolute https URL without user info (plain http only to a loopback
// host). Its error never echoes the URL: a webhook URL is a secret.
func CheckURL(raw string) error {
	if _, err := transport.CheckURL(raw); err != nil {
		return errors.New("want an absolute https:// URL without user info (plain http only to a loopback host)")
	}
	return nil
}

// Targets names the configured targets, in sending order.
func (s *Sink) Targets() []string {
	out := make([]string, len(s.targets))
	for i, t := range s.targets {
		out[i] = t.name
	}
	return out
}

// Alert implements Hook: for each target the gate decides, and a message it admits is
// queued, or dropped when the queue is full. It never blocks on the network.
func (s *Sink) Alert(e Event) {
	if s == nil {
		return
	}
	e = bounded(e, s.mask)
	now := s.now()
	for _, t := range s.targets {
		t.mu.Lock()
		v, repeats := t.gate.AdmitEvent(e, now)
		t.mu.Unlock()
		if v != Send {
			metricAlerts.WithLabelValues(t.name, string(v)).Inc()
			continue
		}
		select {
		case t.queue <- message{ev: e, repeats: repeats, at: now}:
		default:
			metricAlerts.WithLabelValues(t.name, "dropped").Inc()
		}
	}
}

// Start drains every target's queue until ctx is done (manager.Runnable); messages still
// queued then are not sent.
func (s *Sink) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, t := range s.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-t.queue:
					s.deliver(ctx, t, m)
				}
			}
		}()
	}
	s.log.Info("Sending alerts", "targets", s.Targets())
	wg.Wait()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica sends what its
// own loops report (the loops that alert run on the leader).
func (s *Sink) NeedLeaderElection() bool { return false }

// deliver sends m to t, counts the outcome and logs the first failure of a run of them and
// the recovery after it.
func (s *Sink) deliver(ctx context.Context, t *target, m message) {
	reason := t.send(ctx, m)
	if reason == "" {
		metricAlerts.WithLabelValues(t.name, "sent").Inc()
		if t.failing {
			t.failing = false
			s.log.Info("Alert target recovered", "target", t.name)
		}
		return
	}
	metricAlerts.WithLabelValues(t.name, "failed").Inc()
	if !t.failing {
		t.failing = true
		s.log.Info("Alert not delivered; further failures are counted (universe_operator_alerts_total), not logged, until one is", "target", t.name, "reason", reason, "kind", string(m.ev.Kind))
	}
}

// send posts m and returns "" on a 2xx answer, else a fixed reason: the status code (and
// Slack's error word), a timeout, or unreachable. Never the error's text: it names the URL.
func (t *target) send(ctx context.Context, m message) string {
	var body []byte
	var err error
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("User-Agent", "universe-operator-alerts")
	if t.key == nil {
		body, err = slackBody(m.ev, m.repeats)
	} else {
		id := deliveryID()
		body, err = webhookBody(m.ev, m.repeats, id, m.at)
		hdr.Set(HeaderEvent, string(m.ev.Kind))
		hdr.Set(HeaderDelivery, id)
		hdr.Set(HeaderTimestamp, strconv.FormatInt(m.at.Unix(), 10))
		hdr.Set(HeaderSignature, Sign(t.key, body))
	}
	if err != nil {
		return "the payload did not encode"
	}
	ctx, cancel := context.WithTimeout(ctx, 4*sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return "the request could not be built"
	}
	req.Header = hdr
	resp, err := t.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return "timed out"
		}
		return "could not be reached"
	}
	defer func() { _ = resp.Body.Close() }()
	word, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode/100 == 2 {
		return ""
	}
	reason := "answered " + strconv.Itoa(resp.StatusCode)
	if slackWord.Match(word) {
		reason += " " + string(word) // Slack's fixed words: invalid_payload, no_service, …
	}
	return reason
}

// slackWord is the shape of Slack's error answers (a lower-case word with underscores).
var slackWord = regexp.MustCompile(`^[a-z_]{2,40}$`)

// deliveryID is a random id of one delivery.
func deliveryID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
