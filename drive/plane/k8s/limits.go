package k8s

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxLimiters bounds the per-identity limiter map; past it, limiters full again (an
// identity idle for a whole burst) are forgotten.
const maxLimiters = 4096

// limits is each identity's rate of ops (a token bucket per token subject).
type limits struct {
	mu       sync.Mutex
	now      func() time.Time
	rate     rate.Limit
	burst    int
	limiters map[string]*rate.Limiter
}

func newLimits(r float64, burst int, now func() time.Time) *limits {
	return &limits{now: now, rate: rate.Limit(r), burst: burst, limiters: map[string]*rate.Limiter{}}
}

// allow takes one op of key's budget; when there is none, wait is how long until there is.
func (l *limits) allow(key string) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim := l.limiters[key]
	if lim == nil {
		if len(l.limiters) >= maxLimiters {
			for k, v := range l.limiters {
				if v.TokensAt(now) >= float64(l.burst) {
					delete(l.limiters, k)
				}
			}
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.limiters[key] = lim
	}
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return time.Minute, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}
