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

// TestGateRecovery: a recovery is sent once per failure the target was sent, never for a
// failure it was not (rate-limited, or none); after a sent recovery the failure is news again
// within the window; recoveries spend the token bucket like any message. Table over events.
func TestGateRecovery(t *testing.T) {
	type step struct {
		kind    Kind
		cluster string
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
		{"a failure, its duplicate, one recovery", 10 * time.Minute, time.Second, 10, []step{
			{SweepFailed, "home", 0, Send, 0},
			{SweepFailed, "home", time.Minute, Duplicate, 0},
			{SweepRecovered, "home", 2 * time.Minute, Send, 0},
			{SweepRecovered, "home", 3 * time.Minute, Unpaired, 0}, // the receiver was told already
		}},
		{"no failure, no recovery", 10 * time.Minute, time.Second, 10, []step{
			{SweepRecovered, "home", 0, Unpaired, 0},
			{SweepFailed, "home", time.Second, Send, 0},
		}},
		{"a failure after its recovery is sent within the window, with its repeats", 10 * time.Minute, time.Second, 10, []step{
			{SweepFailed, "home", 0, Send, 0},
			{SweepFailed, "home", time.Second, Duplicate, 0},
			{SweepRecovered, "home", time.Minute, Send, 0},
			{SweepFailed, "home", 2 * time.Minute, Send, 1},
			{SweepFailed, "home", 3 * time.Minute, Duplicate, 0},
			{SweepRecovered, "home", 4 * time.Minute, Send, 0},
		}},
		{"clusters are apart: a recovery ends its own cluster's failure only", 10 * time.Minute, time.Second, 10, []step{
			{SweepFailed, "acme/prod", 0, Send, 0},
			{SweepRecovered, "acme/edge", time.Second, Unpaired, 0},
			{SweepFailed, "home", 2 * time.Second, Send, 0},
			{SweepRecovered, "acme/prod", 3 * time.Second, Send, 0},
			{SweepRecovered, "home", 4 * time.Second, Send, 0},
		}},
		{"a rate-limited failure gets no recovery", time.Hour, time.Hour, 1, []step{
			{DriftReverted, "home", 0, Send, 0},
			{SweepFailed, "home", time.Second, RateLimited, 0},
			{SweepRecovered, "home", 2 * time.Second, Unpaired, 0},
		}},
		{"a recovery spends the bucket; limited, the failure stays open for the next", time.Hour, time.Minute, 1, []step{
			{SweepFailed, "home", 0, Send, 0},
			{SweepRecovered, "home", time.Second, RateLimited, 0},
			{SweepRecovered, "home", time.Minute, Send, 0},
		}},
	}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGate(tc.window, tc.every, tc.burst)
			for i, s := range tc.steps {
				v, n := g.AdmitEvent(Event{Kind: s.kind, Cluster: s.cluster}, t0.Add(s.at))
				if v != s.want || n != s.repeats {
					t.Fatalf("step %d (%s %s at %s): got %s with %d repeats, want %s with %d", i, s.kind, s.cluster, s.at, v, n, s.want, s.repeats)
				}
			}
		})
	}
}

// TestGateKeepsOpenFailures: pruning forgets an open failure (awaiting its recovery) only
// after every key that awaits nothing.
func TestGateKeepsOpenFailures(t *testing.T) {
	g := NewGate(time.Second, time.Nanosecond, 1<<20)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g.AdmitEvent(Event{Kind: SweepFailed, Cluster: "acme/prod"}, t0)
	for i := range 2 * maxKeys {
		g.Admit(time.Duration(i).String(), t0.Add(time.Hour+time.Duration(i)*time.Second))
	}
	if v := g.Recover(Event{Kind: SweepFailed, Cluster: "acme/prod"}.key(), t0.Add(3*time.Hour)); v != Send {
		t.Fatalf("the open failure's recovery: %s, want send", v)
	}
}
