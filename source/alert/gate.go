package alert

import (
	"time"

	"golang.org/x/time/rate"
)

// Verdict is the Gate's answer for one event.
type Verdict string

// The verdicts.
const (
	Send        Verdict = "send"
	Duplicate   Verdict = "deduplicated"
	RateLimited Verdict = "rate_limited"
	// Unpaired: a recovery whose failure this target was never sent, or was already sent
	// the recovery of: the receiver has nothing to clear.
	Unpaired Verdict = "unpaired"
)

// maxKeys bounds the keys a Gate remembers; beyond it the expired ones are forgotten.
const maxKeys = 1024

// Gate decides, per target, which events are sent: the same key within Window of its last
// send is a Duplicate (counted, not sent); beyond Every-per-Burst a RateLimited (counted
// against its key too). The next send of a key carries the count of repeats suppressed since
// its last. It is pure over the times it is given (no clock of its own) and not safe for
// concurrent use.
type Gate struct {
	window time.Duration
	lim    *rate.Limiter
	keys   map[string]*seen
}

type seen struct {
	sent    time.Time // zero: never sent (rate-limited before its first send)
	repeats int
	// open: a failure was sent and its recovery not yet; recovered: the last message about
	// the key was its recovery (so the failure again is news, whatever the window).
	open, recovered bool
}

// NewGate returns a gate that sends a key at most once per window and at most burst
// messages at once, refilled at one per every.
func NewGate(window, every time.Duration, burst int) *Gate {
	return &Gate{window: window, lim: rate.NewLimiter(rate.Every(every), burst), keys: map[string]*seen{}}
}

// Admit says whether the event with key, at now, is sent, and if so how many repeats of it
// were suppressed since its last send.
func (g *Gate) Admit(key string, now time.Time) (Verdict, int) { return g.admit(key, false, now) }

// AdmitFailure is Admit for a failure a recovery may end (Recover): sent, the key stays
// open until its recovery is sent; after a sent recovery the failure is sent again even
// within the window (the receiver was told it had cleared), still under the token bucket.
func (g *Gate) AdmitFailure(key string, now time.Time) (Verdict, int) { return g.admit(key, true, now) }

// Recover says whether the recovery of the failure key is sent: only when this target was
// sent the failure and not yet its recovery (else Unpaired, not counted as a repeat), under
// the token bucket. So a receiver gets at most one recovery per failure it was told of.
func (g *Gate) Recover(failureKey string, now time.Time) Verdict {
	s := g.keys[failureKey]
	if s == nil || !s.open {
		return Unpaired
	}
	if !g.lim.AllowN(now, 1) {
		return RateLimited
	}
	s.open, s.recovered = false, true
	return Send
}

// AdmitEvent is the gate of e: Recover for a recovery kind (of the failure of e's cluster
// and object), AdmitFailure for a failure a recovery ends, Admit for the rest.
func (g *Gate) AdmitEvent(e Event, now time.Time) (Verdict, int) {
	if f, ok := recovers[e.Kind]; ok {
		failure := Event{Kind: f, Cluster: e.Cluster, Object: e.Object}
		return g.Recover(failure.key(), now), 0
	}
	if ends[e.Kind] {
		return g.AdmitFailure(e.key(), now)
	}
	return g.Admit(e.key(), now)
}

func (g *Gate) admit(key string, failure bool, now time.Time) (Verdict, int) {
	s := g.keys[key]
	if s != nil && !s.sent.IsZero() && now.Sub(s.sent) < g.window && !s.recovered {
		s.repeats++
		return Duplicate, 0
	}
	if !g.lim.AllowN(now, 1) {
		if s == nil {
			s = &seen{}
			g.keys[key] = s
		}
		s.repeats++
		return RateLimited, 0
	}
	repeats := 0
	if s != nil {
		repeats = s.repeats
	}
	g.keys[key] = &seen{sent: now, open: failure}
	g.prune(now)
	return Send, repeats
}

// prune forgets keys whose window has passed, that owe no repeats and await no recovery,
// once the gate holds more than maxKeys; then, if still over, any whose window has passed.
func (g *Gate) prune(now time.Time) {
	if len(g.keys) <= maxKeys {
		return
	}
	for k, s := range g.keys {
		if now.Sub(s.sent) >= g.window && s.repeats == 0 && !s.open {
			delete(g.keys, k)
		}
	}
	for k, s := range g.keys {
		if len(g.keys) <= maxKeys {
			return
		}
		if now.Sub(s.sent) >= g.window {
			delete(g.keys, k)
		}
	}
}
