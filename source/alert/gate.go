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
}

// NewGate returns a gate that sends a key at most once per window and at most burst
// messages at once, refilled at one per every.
func NewGate(window, every time.Duration, burst int) *Gate {
	return &Gate{window: window, lim: rate.NewLimiter(rate.Every(every), burst), keys: map[string]*seen{}}
}

// Admit says whether the event with key, at now, is sent, and if so how many repeats of it
// were suppressed since its last send.
func (g *Gate) Admit(key string, now time.Time) (Verdict, int) {
	s := g.keys[key]
	if s != nil && !s.sent.IsZero() && now.Sub(s.sent) < g.window {
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
	g.keys[key] = &seen{sent: now}
	g.prune(now)
	return Send, repeats
}

// prune forgets keys whose window has passed and that owe no repeats, once the gate holds
// more than maxKeys; then, if still over, those that owe some.
func (g *Gate) prune(now time.Time) {
	if len(g.keys) <= maxKeys {
		return
	}
	for k, s := range g.keys {
		if now.Sub(s.sent) >= g.window && s.repeats == 0 {
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
