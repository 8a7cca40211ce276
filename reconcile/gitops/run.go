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
	timer := time.NewTimer(0) // the first sweep runs at start
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-trig.C():
		}
		sweep(ctx)
		// Go 1.23+ timers: Reset also drops a value not yet received.
		timer.Reset(interval)
	}
}
