package apply_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openuniverse/operator/reconcile/apply"
)

func TestFanOut(t *testing.T) {
	for _, tc := range []struct{ n, limit, wantMax int }{
		{0, 3, 0},
		{1, 3, 1},
		{10, 3, 3},
		{10, 1, 1},
		{10, 0, apply.DefaultConcurrency},
		{10, -2, apply.DefaultConcurrency},
		{2, 8, 2},
	} {
		var running, peak atomic.Int32
		var mu sync.Mutex
		calls := map[int]int{}
		apply.FanOut(tc.n, tc.limit, func(i int) {
			now := running.Add(1)
			for {
				p := peak.Load()
				if now <= p || peak.CompareAndSwap(p, now) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond) // hold the slot so calls overlap when allowed
			running.Add(-1)
			mu.Lock()
			calls[i]++
			mu.Unlock()
		})
		if len(calls) != tc.n {
			t.Errorf("n=%d limit=%d: %d indexes called, want %d", tc.n, tc.limit, len(calls), tc.n)
		}
		for i, c := range calls {
			if c != 1 || i < 0 || i >= tc.n {
				t.Errorf("n=%d limit=%d: index %d called %d times", tc.n, tc.limit, i, c)
			}
		}
		if int(peak.Load()) > tc.wantMax {
			t.Errorf("n=%d limit=%d: %d calls at once, want at most %d", tc.n, tc.limit, peak.Load(), tc.wantMax)
		}
		if running.Load() != 0 {
			t.Errorf("n=%d limit=%d: FanOut returned with %d calls running", tc.n, tc.limit, running.Load())
		}
	}
}
