package deploy

import (
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxDiffLimiters bounds the per-identity limiter map; past it, limiters that are full again
// (an identity idle for a whole burst) are forgotten.
const maxDiffLimiters = 4096

// limits are the plane's per-identity and total bounds: open streams, and the rate of live
// diffs (each one a server-side dry-run per child of the CR). Identities are token subjects.
type limits struct {
	mu       sync.Mutex
	now      func() time.Time
	perID    int
	total    int
	open     int
	streams  map[string]int
	rate     rate.Limit
	burst    int
	limiters map[string]*rate.Limiter
}

func newLimits(o Options, now func() time.Time) *limits {
	return &limits{now: now, perID: o.MaxStreamsPerIdentity, total: o.MaxStreams, streams: map[string]int{},
		rate: rate.Limit(o.DiffRate), burst: o.DiffBurst, limiters: map[string]*rate.Limiter{}}
}

// openStream counts one more stream of key; ok is false when key or the plane is at its bound.
func (l *limits) openStream(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.total || l.streams[key] >= l.perID {
		return nil, false
	}
	l.open++
	l.streams[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.open--
			if l.streams[key]--; l.streams[key] <= 0 {
				delete(l.streams, key)
			}
		})
	}, true
}

// allowDiff takes one live diff of key's budget; when there is none, wait is how long until
// there is.
func (l *limits) allowDiff(key string) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lim := l.limiters[key]
	if lim == nil {
		if len(l.limiters) >= maxDiffLimiters {
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
		return time.Duration(math.MaxInt64), false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// limitKey is whom a limit counts: the token's subject (one issuer).
func limitKey(id Identity) string { return "sub:" + id.Subject }

// retryAfter is the Retry-After value for a wait: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	if d == time.Duration(math.MaxInt64) {
		return "60"
	}
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}
