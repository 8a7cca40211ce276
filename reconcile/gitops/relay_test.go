package gitops

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openuniverse/operator/e2e/testbed"
)

type recorder struct {
	calls int
	err   error
}

func (r *recorder) Record(context.Context) error { r.calls++; return r.err }

// TestWebhookOnStandby: a standby replica relays an accepted request instead of firing its
// own trigger, answers 503 when it cannot, and a leader fires its trigger directly.
func TestWebhookOnStandby(t *testing.T) {
	cases := map[string]struct {
		leader    bool
		relayErr  error
		wantCode  int
		wantFired bool
		wantCalls int
	}{
		"leader fires its trigger":  {leader: true, wantCode: http.StatusAccepted, wantFired: true},
		"standby relays":            {leader: false, wantCode: http.StatusAccepted, wantCalls: 1},
		"standby cannot relay: 503": {leader: false, relayErr: errors.New("forbidden"), wantCode: http.StatusServiceUnavailable, wantCalls: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{err: tc.relayErr}
			trig := NewTrigger()
			h := &Webhook{Trigger: trig, Log: logr.Discard(), Leader: func() bool { return tc.leader }, Relay: rec}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader("{}")))
			if w.Code != tc.wantCode {
				t.Errorf("code = %d, want %d", w.Code, tc.wantCode)
			}
			fired := false
			select {
			case <-trig.C():
				fired = true
			default:
			}
			if fired != tc.wantFired || rec.calls != tc.wantCalls {
				t.Errorf("fired=%v relayed=%d, want fired=%v relayed=%d", fired, rec.calls, tc.wantFired, tc.wantCalls)
			}
		})
	}
}

// TestRelay: on a real apiserver, each Record reaches the leader's Watch as one trigger,
// and the stamp present before the watch started does not fire.
func TestRelay(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(testbed.APIServer(t))
	clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := &Relay{Client: cs, Namespace: "default", Name: "relay-test", Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.Record(ctx); err != nil { // an old request, before this leader
		t.Fatal(err)
	}
	trig := NewTrigger()
	go func() { _ = r.Watch(ctx, trig, logr.Discard()) }()
	select {
	case <-trig.C():
		t.Fatal("the stamp present at start fired the trigger")
	case <-time.After(time.Second):
	}
	for i := range 3 {
		if err := r.Record(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-trig.C():
		case <-time.After(10 * time.Second):
			t.Fatalf("relayed request %d never fired the leader's trigger", i+1)
		}
	}
}

// TestRelayCoalesces: on a real apiserver, a flood on a standby costs one
// relay write a second: the first request writes at once, the rest of the
// interval's are coalesced into one deferred write, which still reaches the
// leader's watch (no push is lost).
func TestRelayCoalesces(t *testing.T) {
	cfg := rest.CopyConfig(testbed.APIServer(t))
	reqs := &requests{}
	cfg.WrapTransport = reqs.wrap
	r := &Relay{Client: kubernetes.NewForConfigOrDie(cfg), Namespace: "default", Name: "relay-flood", Now: time.Now, MinInterval: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	trig := NewTrigger()
	go func() { _ = r.Watch(ctx, trig, logr.Discard()) }()
	time.Sleep(500 * time.Millisecond) // the watch syncs
	reqs.take()
	start := time.Now()
	for range 500 {
		if err := r.Record(ctx); err != nil {
			t.Fatal(err)
		}
	}
	burst := time.Since(start)
	time.Sleep(1500 * time.Millisecond) // the deferred write
	got := reqs.take()
	writes := sumVerb(got, "APPLY")
	t.Logf("500 relayed webhooks in %s: %d ConfigMap writes (%v)", burst.Round(time.Millisecond), writes, got)
	if want := int(burst/time.Second) + 2; writes < 2 || writes > want {
		t.Errorf("%d relay writes, want 2..%d", writes, want)
	}
	fired := 0
	for {
		select {
		case <-trig.C():
			fired++
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
	if fired == 0 {
		t.Error("the coalesced write never reached the leader's trigger")
	}
}
