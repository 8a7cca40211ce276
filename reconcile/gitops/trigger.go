package gitops

import (
	"sync"
	"time"
)

// Trigger asks the sweep loop for a sweep. It holds at most one pending
// request, so any number of Fire calls while a sweep runs (or before the loop
// looks) cost exactly one extra sweep.
type Trigger struct {
	c  chan struct{}
	mu sync.Mutex
	at time.Time // when the oldest request not yet served by a sweep was fired
}

// NewTrigger returns a Trigger with nothing pending.
func NewTrigger() *Trigger { return &Trigger{c: make(chan struct{}, 1)} }

// Fire requests a sweep without blocking. It reports whether this call queued
// one (false: one was already pending and this request joined it).
func (t *Trigger) Fire() bool {
	t.mu.Lock()
	if t.at.IsZero() {
		t.at = time.Now()
	}
	t.mu.Unlock()
	select {
	case t.c <- struct{}{}:
		return true
	default:
		return false
	}
}

// C delivers one value per pending request; the sweep loop selects on it
// next to its resync ticker.
func (t *Trigger) C() <-chan struct{} { return t.c }

// take returns when the oldest request a sweep starting now serves was fired, and forgets
// it (zero when nothing fired since the last sweep started).
func (t *Trigger) take() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.at
	t.at = time.Time{}
	return at
}
