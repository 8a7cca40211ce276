package reconcile

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds/condition"
	kindsv1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/reconcile/apply"
)

var (
	grDeploy   = schema.GroupResource{Group: "apps", Resource: "deployments"}
	errInvalid = apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil)
	errDenied  = apierrors.NewForbidden(grDeploy, "web", errors.New("no grant"))
	errBusy    = apierrors.NewTooManyRequests("slow down", 1)
	errConfl   = apierrors.NewConflict(grDeploy, "web", errors.New("stale"))
)

func TestClassOf(t *testing.T) {
	cases := map[string]struct {
		err  error
		want condition.Class
	}{
		"invalid object (schema, immutable field)": {errInvalid, condition.Terminal},
		"malformed request":                        {apierrors.NewBadRequest("bad"), condition.Terminal},
		"forbidden":                                {errDenied, condition.Blocked},
		"wrapped forbidden":                        {fmt.Errorf("list pods: %w", errDenied), condition.Blocked},
		"conflict":                                 {errConfl, condition.Transient},
		"throttled":                                {errBusy, condition.Transient},
		"timeout":                                  {apierrors.NewServerTimeout(grDeploy, "patch", 1), condition.Transient},
		"network":                                  {fmt.Errorf("get: %w", errors.New("connection refused")), condition.Transient},
		"already terminal":                         {apply.TerminalError(errors.New("cannot encode")), condition.Terminal},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := apply.ClassOf(tc.err); got != tc.want {
				t.Errorf("ClassOf(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}

// TestPhaseErrorTable: the Kind controllers' error → condition → requeue for an error of a
// phase (not an apply result): a transient one goes back to the backoff with the status
// untouched; any other ends the reconcile Stalled with its reason and is not requeued.
func TestPhaseErrorTable(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		stalled string // the Stalled reason; "" when the error is retried instead
	}{
		"delete forbidden":   {fmt.Errorf("delete HorizontalPodAutoscaler/ns/web: %w", errDenied), condition.ReasonForbidden},
		"list invalid":       {fmt.Errorf("list pods: %w", errInvalid), condition.ReasonRejected},
		"terminal elsewhere": {apply.TerminalError(errors.New("read upgrade state: bad json")), condition.ReasonReconcileFailed},
		"conflict":           {errConfl, ""},
		"throttled":          {errBusy, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if apply.ClassOf(tc.err) == condition.Transient {
				if tc.stalled != "" {
					t.Fatalf("%v is retried, want Stalled %s", tc.err, tc.stalled)
				}
				return
			}
			st := drive.Summarize(drive.Observation{Generation: 1, PhaseErr: tc.err})
			c := meta.FindStatusCondition(st.Conditions, condition.TypeStalled)
			if c == nil || c.Reason != tc.stalled || c.Message != tc.err.Error() {
				t.Fatalf("Stalled = %+v, want reason %s", c, tc.stalled)
			}
			if res, _ := next(st, Outcome{}, Wake{}); res.RequeueAfter != 0 {
				t.Errorf("requeued after %s, want never (the CR's change wakes it)", res.RequeueAfter)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	ref := func(name string) apply.ObjRef {
		return apply.ObjRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: name}
	}
	cases := map[string]struct {
		results []apply.Result
		want    Outcome
		clean   bool
	}{
		"all applied": {
			results: []apply.Result{{Object: ref("a"), Action: apply.Created}, {Object: ref("b"), Action: apply.Updated}, {Object: ref("c"), Action: apply.InSync}},
			clean:   true,
		},
		"one of each refusal, in order": {
			results: []apply.Result{
				{Object: ref("a"), Action: apply.Denied, Err: errDenied, Message: "forbidden: grant"},
				{Object: ref("b"), Action: apply.Failed, Err: errInvalid, Message: "invalid"},
				{Object: ref("c"), Action: apply.Failed, Err: errBusy, Message: "slow down"},
				{Object: ref("d"), Action: apply.InSync},
			},
			want: Outcome{Denied: []string{"Deployment/ns/a: forbidden: grant"}, Rejected: []string{`Deployment/ns/b: the apiserver refused the apply: 422 Invalid: Deployment.apps "***" is invalid`},
				Failed: []string{"Deployment/ns/c: the apiserver refused the apply: 429 TooManyRequests: slow down"}},
		},
		"conflicts are retried": {
			results: []apply.Result{{Object: ref("a"), Action: apply.Failed, Err: errConfl, Message: "stale"}},
			want:    Outcome{Failed: []string{`Deployment/ns/a: the apiserver refused the apply: 409 Conflict: Operation cannot be fulfilled on deployments.apps "***": stale`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := outcome(tc.results)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got.Clean() != tc.clean {
				t.Errorf("Clean() = %v, want %v", got.Clean(), tc.clean)
			}
		})
	}
}

func TestNext(t *testing.T) {
	status := func(conds ...metav1.Condition) drive.Status { return drive.Status{Conditions: conds} }
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	ready := cond(drive.ConditionReady, metav1.ConditionTrue, drive.ReasonAvailable)
	notReady := func(reason string) metav1.Condition { return cond(drive.ConditionReady, metav1.ConditionFalse, reason) }
	rolling := status(notReady(drive.ReasonNotReady), cond(drive.ConditionReconciling, metav1.ConditionTrue, drive.ReasonNotReady))
	applyFailed := status(notReady(drive.ReasonApplyFailed), cond(drive.ConditionReconciling, metav1.ConditionTrue, drive.ReasonApplyFailed))
	failed := Outcome{Failed: []string{"x"}}
	cases := map[string]struct {
		status drive.Status
		out    Outcome
		wake   Wake
		want   time.Duration
	}{
		"ready: wait for a change":                    {status(ready), Outcome{}, Wake{}, 0},
		"rolling out: the watches wake it":            {rolling, Outcome{}, Wake{}, requeueProgressing},
		"rolling out with stuck pods: look again":     {rolling, Outcome{}, Wake{StuckPods: true}, requeueStuckPods},
		"stuck pods but ready (one of many): no poll": {status(ready), Outcome{}, Wake{StuckPods: true}, 0},
		"first transient failure: retry soon":         {applyFailed, failed, Wake{Failures: 1}, backoffBase},
		"fourth transient failure: backs off":         {applyFailed, failed, Wake{Failures: 4}, 8 * backoffBase},
		"failing for long: capped":                    {applyFailed, failed, Wake{Failures: 40}, backoffMax},
		"stalled (invalid): no requeue":               {status(notReady(drive.ReasonRejected), cond(drive.ConditionStalled, metav1.ConditionTrue, drive.ReasonRejected)), Outcome{Rejected: []string{"x"}}, Wake{}, 0},
		"stalled with a transient one: retry":         {status(notReady(drive.ReasonForbidden), cond(drive.ConditionStalled, metav1.ConditionTrue, drive.ReasonForbidden)), Outcome{Denied: []string{"x"}, Failed: []string{"y"}}, Wake{Failures: 2}, 2 * backoffBase},
		"halted, Pending (delegated): no retry":       {status(notReady("Delegated")), Outcome{}, Wake{}, 0},
		"ready with a held-back status write":         {status(ready), Outcome{}, Wake{Status: 3 * time.Second}, 3 * time.Second},
		"rolling out, a child lagging: sooner":        {rolling, Outcome{}, Wake{Lag: 4 * time.Second}, 4 * time.Second},
		"backing off, a later status write: backoff":  {applyFailed, failed, Wake{Failures: 1, Status: 9 * time.Second}, backoffBase},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, why := next(tc.status, tc.out, tc.wake)
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: tc.want}, got); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
			if why == "" {
				t.Error("next gives no reason")
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	var prev time.Duration
	for f := 1; f <= 20; f++ {
		d := backoff(f)
		if d < prev || d > backoffMax || (f == 1 && d != backoffBase) {
			t.Fatalf("backoff(%d) = %s after %s: want doubling from %s, capped at %s", f, d, prev, backoffBase, backoffMax)
		}
		prev = d
	}
	if prev != backoffMax {
		t.Errorf("backoff(20) = %s, want the cap %s", prev, backoffMax)
	}
}

func TestStatusDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := metav1.NewTime(t0)
	st := func(phase string, reason string, msg string, ready int32) drive.Status {
		status := metav1.ConditionFalse
		if reason == drive.ReasonAvailable {
			status = metav1.ConditionTrue
		}
		return drive.Status{Phase: kindsv1.Phase(phase), ObservedGeneration: 1, Message: msg, ReadyReplicas: ready,
			Conditions: []metav1.Condition{{Type: drive.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at}}}
	}
	rolling := st("Creating", drive.ReasonNotReady, "Deployment/ns/web: Replicas: 0/2", 0)
	moved := st("Creating", drive.ReasonNotReady, "Deployment/ns/web: Available: 1/2", 0)
	ready := st("Running", drive.ReasonAvailable, "2/2 replicas ready", 2)
	ready.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(5 * time.Second))
	newGen := rolling
	newGen.ObservedGeneration = 2
	stalled := st("Degraded", drive.ReasonRejected, "Deployment/ns/web: spec.replicas: Invalid value", 0)
	stalled.Conditions = append(stalled.Conditions, metav1.Condition{Type: drive.ConditionStalled, Status: metav1.ConditionTrue, Reason: drive.ReasonRejected, ObservedGeneration: 1, LastTransitionTime: at})
	failed := st("Creating", drive.ReasonApplyFailed, "Deployment/ns/web: the apiserver timed out", 0)
	never := time.Time{}
	cases := map[string]struct {
		previous, next            drive.Status
		lastWrite, firstSeen, now time.Time
		write                     bool
		wait                      time.Duration
	}{
		"unchanged: nothing":                      {rolling, rolling, t0, t0, t0.Add(time.Hour), false, 0},
		"never written by this process: write":    {rolling, moved, never, t0, t0, true, 0},
		"progress only, just written: held back":  {rolling, moved, t0, t0, t0.Add(5 * time.Second), false, progressEvery - 5*time.Second},
		"progress only, long since: write":        {rolling, moved, t0, t0, t0.Add(progressEvery), true, 0},
		"Ready flips: at once":                    {rolling, ready, t0, t0, t0.Add(time.Second), true, 0},
		"a new generation: at once":               {rolling, newGen, t0, t0, t0.Add(time.Second), true, 0},
		"phase only (first replicas up): later":   {rolling, withPhase(rolling, "Degraded"), t0, t0, t0.Add(time.Second), false, progressEvery - time.Second},
		"restart count only, just written: later": {withRestarts(rolling, 3), withRestarts(rolling, 4), t0, t0, t0.Add(time.Second), false, progressEvery - time.Second},
		// a new CR: one status write on the way to Ready when it is Ready within firstLook
		"first look, on its way: held back":           {drive.Status{}, rolling, never, t0, t0.Add(time.Second), false, firstLook - time.Second},
		"first look, on its way, firstLook on: write": {drive.Status{}, rolling, never, t0, t0.Add(firstLook), true, 0},
		"first look, Ready at once: write":            {drive.Status{}, ready, never, t0, t0.Add(time.Second), true, 0},
		"first look, Stalled: at once":                {drive.Status{}, stalled, never, t0, t0.Add(time.Second), true, 0},
		"first look, apply failed: at once":           {drive.Status{}, failed, never, t0, t0.Add(time.Second), true, 0},
		"first look, not seen before: at once":        {drive.Status{}, rolling, never, never, t0, true, 0},
		"first look after a restart (status kept)":    {rolling, moved, never, t0, t0.Add(time.Second), true, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			write, wait := statusDue(tc.previous, tc.next, tc.lastWrite, tc.firstSeen, tc.now)
			if write != tc.write || wait != tc.wait {
				t.Errorf("statusDue = %v, %s; want %v, %s", write, wait, tc.write, tc.wait)
			}
		})
	}
}

func withPhase(s drive.Status, p string) drive.Status {
	s.Phase = kindsv1.Phase(p)
	return s
}

func withRestarts(s drive.Status, n int32) drive.Status {
	s.Restarts = n
	return s
}

func TestStatusLag(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		rv, from string
		now      time.Time
		lag      time.Duration
		ok       bool
	}{
		"never written":                              {"5", "", t0, 0, false},
		"read after our write showed up":             {"6", "5", t0.Add(time.Second), 0, false},
		"read before the cache showed our write":     {"5", "5", t0.Add(2 * time.Second), apply.LagGrace - 2*time.Second, true},
		"still the same long after: not lag (no-op)": {"5", "5", t0.Add(apply.LagGrace), 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lag, ok := statusLag(tc.rv, tc.from, t0, tc.now)
			if lag != tc.lag || ok != tc.ok {
				t.Errorf("statusLag = %s, %v; want %s, %v", lag, ok, tc.lag, tc.ok)
			}
		})
	}
}
