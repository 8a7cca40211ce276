package gitops

import (
	"context"
	"time"
)

// Run is the sweep cadence: it calls sweep once at once, then after every
// interval and whenever trig fires, until ctx is done. Sweeps never overlap.
// A trigger that fires during a sweep (however often) causes exactly one more
// sweep right after it, and that sweep restarts the interval. Run returns
// when ctx is done; sweep should honour ctx too.
func Run(ctx context.Context, interval time.Duration, trig *Trigger, sweep func(context.Context)) {
	RunLimited(ctx, interval, 0, trig, sweep)
}

// RunLimited is Run with triggered sweeps at most one per minGap, counted
// from the start of the previous sweep: a trigger that fires sooner waits,
// and every trigger fired while it waits is served by that one sweep. So a
// webhook flood costs at most one sweep (one ls-remote, or one GitHub
// request) per minGap, however many requests arrive.
func RunLimited(ctx context.Context, interval, minGap time.Duration, trig *Trigger, sweep func(context.Context)) {
	timer := time.NewTimer(0) // the first sweep runs at start
	defer timer.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-trig.C():
			if wait := minGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				select { // fired while waiting: served by the sweep below
				case <-trig.C():
				default:
				}
			}
		}
		last = time.Now()
		sweep(ctx)
		// Go 1.23+ timers: Reset also drops a value not yet received.
		timer.Reset(interval)
	}
}
