package gitops

// Trigger asks the sweep loop for a sweep. It holds at most one pending
// request, so any number of Fire calls while a sweep runs (or before the loop
// looks) cost exactly one extra sweep.
type Trigger struct {
	c chan struct{}
}

// NewTrigger returns a Trigger with nothing pending.
func NewTrigger() *Trigger { return &Trigger{c: make(chan struct{}, 1)} }

// Fire requests a sweep without blocking. It reports whether this call queued
// one (false: one was already pending and this request joined it).
func (t *Trigger) Fire() bool {
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
