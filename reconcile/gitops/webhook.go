package gitops

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/source"
)

// Signature headers, in the order they are checked.
const (
	HeaderGitHub  = "X-Hub-Signature-256" // "sha256=<hex>"
	HeaderGitea   = "X-Gitea-Signature"   // "<hex>"
	HeaderForgejo = "X-Forgejo-Signature" // "<hex>"
	HeaderGeneric = "X-Signature-256"     // "sha256=<hex>"
	HeaderGitLab  = "X-Gitlab-Token"      // the secret itself (GitLab sends no HMAC)
)

// deliveryHeaders carry a delivery's unique id, per host.
var deliveryHeaders = []string{"X-GitHub-Delivery", "X-Gitea-Delivery", "X-Forgejo-Delivery", "X-Gitlab-Event-UUID"}

// Secret hands out the current webhook secret; *source.TokenFile is one, so a
// rotated secret is used without a restart.
type Secret interface {
	Token() source.Token
}

// Webhook is the handler of POST /reconcile. See the package documentation
// for the accepted signatures.
type Webhook struct {
	// Trigger receives one Fire per accepted request.
	Trigger *Trigger
	// Secret, when not nil, is required to have signed the body.
	Secret Secret
	// MaxBytes caps the body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Log records rejections (at V(1): they are cheap for anyone to cause).
	Log logr.Logger
	// Leader, when set, says whether this replica leads. A standby hands an accepted
	// request to the leader through Relay instead of firing its own (idle) trigger.
	Leader func() bool
	Relay  interface{ Record(context.Context) error }
	// Deliveries, when set, drops a signed request whose delivery id it has
	// seen recently (a host's redelivery, a replay): 200, no sweep.
	Deliveries *Deliveries
	// PullRequests, when set, takes the pull request events (ParsePullRequest) that open a
	// pull request or move its head: the preview's queue, on every replica. Nil (no
	// --preview): they are acknowledged and ignored. A pull request event never fires a sweep.
	PullRequests PullRequestQueue
}

// PullRequestQueue takes the pull request events a preview answers. Enqueue never waits
// for the preview; it returns why the event is not queued, or "".
type PullRequestQueue interface {
	Enqueue(pr PullRequest) (ignored string)
}

var (
	errUnsigned     = errors.New("no signature header")
	errBadSignature = errors.New("signature does not match")
)

// ServeHTTP implements http.Handler.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	limit := h.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if r.ContentLength > limit {
		h.Log.V(1).Info("Rejected webhook", "reason", "body too large", "bytes", r.ContentLength, "limit", limit)
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			h.Log.V(1).Info("Rejected webhook", "reason", "body too large", "limit", limit)
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		h.Log.V(1).Info("Rejected webhook", "reason", "body unreadable", "error", err.Error())
		http.Error(w, "body unreadable", http.StatusBadRequest)
		return
	}
	if h.Secret != nil {
		if err := verify(r, body, h.Secret.Token()); err != nil {
			h.Log.V(1).Info("Rejected webhook", "reason", err.Error(), "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	if id := deliveryID(r); id != "" && h.Deliveries != nil && !h.Deliveries.First(id) {
		h.Log.V(1).Info("Webhook delivery already seen, ignored", "delivery", id)
		_, _ = io.WriteString(w, "delivery already seen\n")
		return
	}
	if IsPullRequestEvent(r.Header) {
		h.pullRequest(w, r, body)
		return
	}
	if h.Leader != nil && h.Relay != nil && !h.Leader() {
		if err := h.Relay.Record(r.Context()); err != nil {
			h.Log.Error(err, "Webhook accepted but not relayed to the leader; the resync will catch up")
			http.Error(w, "not relayed to the leader", http.StatusServiceUnavailable)
			return
		}
		h.Log.V(1).Info("Webhook accepted and relayed to the leader", "event", event(r))
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "reconcile relayed to the leader\n")
		return
	}
	queued := h.Trigger.Fire()
	h.Log.V(1).Info("Webhook accepted", "queued", queued, "event", event(r))
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "reconcile queued\n")
}

// pullRequest answers a verified pull request event: 202 once queued for a preview, 200
// when ignored (the preview is off, or the event is one it skips: the log says why), 400
// when the body is not the host's documented shape. It never fires a sweep.
func (h *Webhook) pullRequest(w http.ResponseWriter, r *http.Request, body []byte) {
	if h.PullRequests == nil {
		h.Log.Info("Pull request event ignored: the preview is off (operator run --preview); it never triggers a sweep", "event", event(r))
		_, _ = io.WriteString(w, "pull request event ignored: the preview is off\n")
		return
	}
	pr, ignored, err := ParsePullRequest(r.Header, body)
	if err != nil {
		h.Log.Info("Rejected pull request event", "reason", err.Error())
		http.Error(w, "malformed pull request event", http.StatusBadRequest)
		return
	}
	if ignored == "" {
		ignored = h.PullRequests.Enqueue(pr)
	}
	if ignored != "" {
		h.Log.Info("Pull request event ignored", "pullRequest", pr.String(), "reason", ignored)
		_, _ = io.WriteString(w, "pull request event ignored (the operator's log says why)\n")
		return
	}
	h.Log.Info("Pull request queued for a preview", "pullRequest", pr.String())
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "preview queued\n")
}

// verify checks the first signature header present against secret. Only
// HMAC-SHA256 is accepted: "sha1=" in X-Hub-Signature-256 (or anywhere) is
// refused; GitLab's X-Gitlab-Token is compared in constant time.
func verify(r *http.Request, body []byte, secret source.Token) error {
	key := []byte(secret.Reveal())
	if len(key) == 0 {
		return errors.New("webhook secret is empty")
	}
	switch {
	case r.Header.Get(HeaderGitHub) != "":
		sig, ok := strings.CutPrefix(r.Header.Get(HeaderGitHub), "sha256=")
		if !ok {
			return errBadSignature
		}
		return checkHex(sig, body, key)
	case r.Header.Get(HeaderGitea) != "":
		return checkHex(r.Header.Get(HeaderGitea), body, key)
	case r.Header.Get(HeaderForgejo) != "":
		return checkHex(r.Header.Get(HeaderForgejo), body, key)
	case r.Header.Get(HeaderGeneric) != "":
		sig, ok := strings.CutPrefix(r.Header.Get(HeaderGeneric), "sha256=")
		if !ok {
			return errBadSignature
		}
		return checkHex(sig, body, key)
	case r.Header.Get(HeaderGitLab) != "":
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(HeaderGitLab)), key) != 1 {
			return errBadSignature
		}
		return nil
	}
	return errUnsigned
}

// deliveryID is the host's id of this delivery, from the first header set.
func deliveryID(r *http.Request) string {
	for _, h := range deliveryHeaders {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	return ""
}

// Deliveries remembers the last delivery ids, a bounded number.
type Deliveries struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
	fifo []string
}

// NewDeliveries remembers up to n ids (1024 when n <= 0).
func NewDeliveries(n int) *Deliveries {
	if n <= 0 {
		n = 1024
	}
	return &Deliveries{max: n, seen: map[string]bool{}}
}

// First records id and reports whether it was not seen before.
func (d *Deliveries) First(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[id] {
		return false
	}
	if len(d.fifo) >= d.max {
		delete(d.seen, d.fifo[0])
		d.fifo = d.fifo[1:]
	}
	d.seen[id] = true
	d.fifo = append(d.fifo, id)
	return true
}

// checkHex compares a hex HMAC-SHA256 of body in constant time.
func checkHex(sig string, body, key []byte) error {
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return errBadSignature
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errBadSignature
	}
	return nil
}

// event names the hook's event for the log, from the first header a known
// host sets.
func event(r *http.Request) string {
	for _, h := range []string{"X-GitHub-Event", "X-Gitea-Event", "X-Forgejo-Event", "X-Gitlab-Event"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	return ""
}
