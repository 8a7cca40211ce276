package alert

import (
	"testing"
	"time"
)

// TestGate: deduplication by key within the window, the repeats carried by the next send,
// and the token bucket per target, on an injected clock.
func TestGate(t *testing.T) {
	type step struct {
		key     string
		at      time.Duration // since t0
		want    Verdict
		repeats int
	}
	cases := []struct {
		name          string
		window, every time.Duration
		burst         int
		steps         []step
	}{
		{"first send, then duplicates within the window, then the count", 10 * time.Minute, time.Second, 10, []step{
			{"a", 0, Send, 0},
			{"a", time.Minute, Duplicate, 0},
			{"a", 9 * time.Minute, Duplicate, 0},
			{"a", 10 * time.Minute, Send, 2},
			{"a", 11 * time.Minute, Duplicate, 0},
			{"a", 30 * time.Minute, Send, 1},
			{"a", 50 * time.Minute, Send, 0},
		}},
		{"keys are independent", 10 * time.Minute, time.Second, 10, []step{
			{"a", 0, Send, 0},
			{"b", 0, Send, 0},
			{"a", time.Second, Duplicate, 0},
			{"b", 2 * time.Second, Duplicate, 0},
			{"c", 3 * time.Second, Send, 0},
		}},
		{"the burst, then one per every", time.Millisecond, time.Minute, 2, []step{
			{"a", 0, Send, 0},
			{"b", 0, Send, 0},
			{"c", 0, RateLimited, 0},
			{"c", 30 * time.Second, RateLimited, 0},
			{"c", time.Minute, Send, 2}, // both limited tries are owed
			{"d", time.Minute, RateLimited, 0},
			{"d", 2 * time.Minute, Send, 1},
		}},
		{"a duplicate does not spend the bucket", time.Hour, time.Hour, 1, []step{
			{"a", 0, Send, 0},
			{"a", time.Second, Duplicate, 0},
			{"a", 2 * time.Second, Duplicate, 0},
			{"b", 3 * time.Second, RateLimited, 0},
		}},
	}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(tc.window, tc.every, tc.burst)
			for i, s := range tc.steps {
				v, n := g.Admit(s.key, t0.Add(s.at))
				if v != s.want || n != s.repeats {
					t.Fatalf("step %d (%s at %s): got %s with %d repeats, want %s with %d", i, s.key, s.at, v, n, s.want, s.repeats)
				}
			}
		})
	}
}

// TestGateForgets: the keys a gate remembers stay bounded.
func TestGateForgets(t *testing.T) {
	g := NewGate(time.Second, time.Nanosecond, 1<<20)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range 5 * maxKeys {
		g.Admit(string(rune('a'+i%26))+time.Duration(i).String(), t0.Add(time.Duration(i)*time.Second))
	}
	if len(g.keys) > maxKeys+1 {
		t.Fatalf("the gate remembers %d keys, want at most %d", len(g.keys), maxKeys+1)
	}
}
