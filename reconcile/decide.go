package reconcile

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
)

// The decisions of the Kind reconcile: pure functions of what the phases observed.

// Outcome is what one apply means for the CR's status: one message per child the apiserver
// refused, by class.
type Outcome struct {
	Denied   []string // Forbidden: the operator lacks an RBAC grant
	Rejected []string // Invalid: the object must change
	Failed   []string // Transient: retried
}

// Clean reports whether every child applied.
func (o Outcome) Clean() bool { return len(o.Denied)+len(o.Rejected)+len(o.Failed) == 0 }

// outcome sorts apply results into what they mean, in the results' order; a refused
// child's message is the apiserver's, masked (apply.PublicMessage).
func outcome(results []apply.Result) Outcome {
	var o Outcome
	for _, res := range results {
		ref := res.Object.String() + ": "
		// a refusal reaches the status and its Event as the apiserver's words with every
		// quoted value masked (it may echo a Secret's value), bounded: apply.PublicMessage
		msg := ref + apply.PublicMessage(res.Err, res.Message)
		switch {
		case res.Action == apply.Denied:
			o.Denied = append(o.Denied, ref+res.Message) // the grant it lacks, our own words
		case res.Action != apply.Failed:
		case apply.ClassOf(res.Err) == condition.Terminal:
			o.Rejected = append(o.Rejected, msg)
		default:
			o.Failed = append(o.Failed, msg)
		}
	}
	return o
}

// How long a Kind reconcile waits before looking again, when nothing wakes it. Children
// are watched (Owns): a child's readiness change wakes the controller by itself, so these
// are only for what no watch reports.
const (
	// requeueStuckPods: the workload's pods are stuck (crash loop, image pull); pods are
	// not watched, so a rising restart count or a recovery does not wake the controller.
	requeueStuckPods = 10 * time.Second
	// requeueProgressing is the safety net while children roll out: their watches wake
	// the controller long before.
	requeueProgressing = 2 * time.Minute
	// backoffBase and backoffMax bound the retry of children that failed to apply for a
	// reason that may pass: 5 s, 10 s, 20 s … 5 min.
	backoffBase = 5 * time.Second
	backoffMax  = 5 * time.Minute
	// progressEvery is the least time between two status writes that only move a
	// message or a count (replicas ready, restarts): a rollout costs at most two writes —
	// the first look and Ready — not one per event.
	progressEvery = 15 * time.Second
	// firstLook is how long a new CR's first status, when it only says that the children
	// are on their way, is held back: a CR Ready within it costs one status write, not two
	// (the first look, then Ready). A Ready, a stall or a failure is written at once. Was
	// 10 s: once a CR's children waking it no longer waited behind the queue's backlog
	// (priorityProgress), a busy cluster's Deployments took longer than that to become
	// Available for about half of the CRs (1.44 status writes per CR at 1 000, 1.56 at 5 000).
	firstLook = 30 * time.Second
)

// backoff is how long to wait before retrying after failures consecutive failed applies
// (1 or more): doubling from backoffBase up to backoffMax.
func backoff(failures int) time.Duration {
	d := backoffBase
	for i := 1; i < failures && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// Wake is what, besides the status, decides the next reconcile.
type Wake struct {
	// Failures counts the consecutive reconciles whose apply had a transient failure,
	// this one included.
	Failures int
	// StuckPods: the workload's pods are stuck (a crash loop), which no watch reports.
	StuckPods bool
	// Status is how long until a status write held back by statusDue is due (0: none).
	Status time.Duration
	// Lag is how long until a child skipped as "the cache has not seen our apply yet"
	// must be looked at again (0: none).
	Lag time.Duration
}

// requeue is the requeue policy, one row per state, first match wins; the delay is then
// shortened to any held-back status write or lagging child (next).
var requeue = []struct {
	when  func(drive.Status, Outcome, Wake) bool
	after func(Wake) time.Duration
	why   string
}{
	// a transient apply failure is retried even when another child's refusal stalls the CR
	{func(_ drive.Status, o Outcome, _ Wake) bool { return len(o.Failed) > 0 },
		func(w Wake) time.Duration { return backoff(max(w.Failures, 1)) }, "retry the children that failed to apply, backing off"},
	{func(s drive.Status, _ Outcome, w Wake) bool {
		return w.StuckPods && meta.IsStatusConditionTrue(s.Conditions, drive.ConditionReconciling)
	}, func(Wake) time.Duration { return requeueStuckPods }, "look at the stuck pods again (pods are not watched)"},
	{func(s drive.Status, _ Outcome, _ Wake) bool {
		return meta.IsStatusConditionTrue(s.Conditions, drive.ConditionReconciling)
	}, func(Wake) time.Duration { return requeueProgressing }, "wait for the children's watches (a slow safety net)"},
	{func(s drive.Status, _ Outcome, _ Wake) bool {
		return meta.IsStatusConditionTrue(s.Conditions, drive.ConditionStalled)
	}, func(Wake) time.Duration { return 0 }, "wait for a change of the CR"},
	{func(drive.Status, Outcome, Wake) bool { return true }, func(Wake) time.Duration { return 0 }, "wait for a change of the CR or a child"},
}

// next returns when to reconcile again after writing status s for apply outcome o, and why.
func next(s drive.Status, o Outcome, w Wake) (ctrl.Result, string) {
	for _, row := range requeue {
		if !row.when(s, o, w) {
			continue
		}
		after, why := row.after(w), row.why
		for _, soon := range []struct {
			d   time.Duration
			why string
		}{{w.Status, "write the status held back"}, {w.Lag, "look at a child the cache has not shown since our apply"}} {
			if soon.d > 0 && (after == 0 || soon.d < after) {
				after, why = soon.d, soon.why
			}
		}
		return ctrl.Result{RequeueAfter: after}, why
	}
	return ctrl.Result{}, "" // unreachable: the last row matches everything
}

// statusDue decides whether status next, summarized from an observation, is written over
// previous, the status as read, given when this process last wrote it (zero: never) and
// when it first looked at the CR. A change of generation or of any condition's status,
// reason or transition is written at once; a change of only the phase, messages or counts
// is written once progressEvery has passed since the last write, and otherwise held back
// for wait. A CR without any status yet whose first one would say only "on its way" (the
// children applied, not Ready yet) is held back until firstLook has passed since the first
// look.
func statusDue(previous, next drive.Status, lastWrite, firstSeen, now time.Time) (write bool, wait time.Duration) {
	if drive.Equal(previous, next) {
		return false, 0
	}
	if len(previous.Conditions) == 0 && onItsWay(next) && !firstSeen.IsZero() {
		if since := now.Sub(firstSeen); since < firstLook {
			return false, firstLook - since
		}
		return true, 0
	}
	if significant(previous, next) || lastWrite.IsZero() {
		return true, 0
	}
	if since := now.Sub(lastWrite); since < progressEvery {
		return false, progressEvery - since
	}
	return true, 0
}

// statusLag reports whether the CR as read (at resourceVersion rv) is the one our last
// status write, at writtenAt, was computed from (from): the cache has not shown that write
// yet, so the status read is stale. For at most LagGrace; lag is how long remains.
func statusLag(rv, from string, writtenAt, now time.Time) (lag time.Duration, ok bool) {
	if from == "" || rv != from || now.Sub(writtenAt) >= apply.LagGrace {
		return 0, false
	}
	return apply.LagGrace - now.Sub(writtenAt), true
}

// onItsWay reports a status that says only that the children are on their way: Ready False
// for NotReady (applied, not current yet), not Stalled; a refusal, a failure or a build error
// has a reason of its own.
func onItsWay(s drive.Status) bool {
	ready := meta.FindStatusCondition(s.Conditions, drive.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == drive.ReasonNotReady &&
		!meta.IsStatusConditionTrue(s.Conditions, drive.ConditionStalled)
}

// significant reports a change a user or a waiting tool acts on: generation, or a
// condition appearing, going, or changing status, reason or transition time. The phase
// alone is progress (Creating → Degraded while the first replicas come up); it moves with
// a condition whenever it means something else (Running with Ready, Degraded with Stalled).
func significant(a, b drive.Status) bool {
	if a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return true
	}
	for _, x := range a.Conditions {
		y := meta.FindStatusCondition(b.Conditions, x.Type)
		if y == nil || x.Status != y.Status || x.Reason != y.Reason || x.ObservedGeneration != y.ObservedGeneration ||
			!x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return true
		}
	}
	return false
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
