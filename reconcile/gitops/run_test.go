package gitops

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestRunSweepsAtStartAndOnInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		Run(ctx, 20*time.Millisecond, NewTrigger(), func(context.Context) {
			if n.Add(1) == 3 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not sweep three times within 5s")
	}
}

func TestRunTriggerDuringSweepIsOneExtraSweep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trig := NewTrigger()
	started := make(chan struct{})
	release := make(chan struct{})
	sweeps := make(chan int, 10)
	var n int
	go Run(ctx, time.Hour, trig, func(context.Context) {
		n++
		sweeps <- n
		if n == 1 {
			close(started)
			<-release
		}
	})
	<-started
	for range 20 {
		trig.Fire()
	}
	close(release)
	if got := <-sweeps; got != 1 {
		t.Fatalf("first sweep = %d", got)
	}
	if got := <-sweeps; got != 2 {
		t.Fatalf("second sweep = %d", got)
	}
	select {
	case got := <-sweeps:
		t.Errorf("sweep %d ran: a burst during a sweep must cost one extra sweep only", got)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		Run(ctx, time.Hour, NewTrigger(), func(context.Context) {})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// The trigger keeps when the oldest request a sweep will serve was fired: requests that join
// a pending one do not move it, and a sweep taking it leaves nothing for the next.
func TestTriggerKeepsTheOldestRequestTime(t *testing.T) {
	trig := NewTrigger()
	if at := trig.take(); !at.IsZero() {
		t.Fatalf("nothing fired, take = %s", at)
	}
	before := time.Now()
	trig.Fire()
	time.Sleep(5 * time.Millisecond)
	mid := time.Now()
	trig.Fire()
	at := trig.take()
	if at.Before(before) || !at.Before(mid) {
		t.Fatalf("take = %s, want the first Fire's time (between %s and %s)", at, before, mid)
	}
	if again := trig.take(); !again.IsZero() {
		t.Fatalf("second take = %s, want zero", again)
	}
}

// The sweep does not inherit the process's client-side rate limit (the manager's 50 per
// second made a 1 000-object cold sync take at least 14 s); --gitops-kube-qps sets its own.
func TestSweepConfigRateLimit(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 300, RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	c := sweepConfig(base, DefaultOptions())
	if c.QPS >= 0 || c.RateLimiter != nil {
		t.Fatalf("default: QPS %v, RateLimiter %v; want no client-side limit", c.QPS, c.RateLimiter)
	}
	if base.QPS != 50 || base.RateLimiter == nil {
		t.Fatal("sweepConfig changed the config it was given")
	}
	o := DefaultOptions()
	o.KubeQPS, o.KubeBurst = 20, 5
	if c := sweepConfig(base, o); c.QPS != 20 || c.Burst != 20 || c.RateLimiter != nil {
		t.Fatalf("--gitops-kube-qps 20 --gitops-kube-burst 5: QPS %v burst %d; want 20 and a burst of at least the QPS", c.QPS, c.Burst)
	}
}
