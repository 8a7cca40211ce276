package drive

import (
	"fmt"
	"sort"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Condition types (condition.Type*): Ready is the summary; Reconciling and Stalled are
// abnormal-true and present only while true.
const (
	ConditionReady       = condition.TypeReady
	ConditionReconciling = condition.TypeReconciling
	ConditionStalled     = condition.TypeStalled
)

// Reasons set by Summarize (the registry's, kinds/condition).
const (
	ReasonAvailable   = condition.ReasonAvailable
	ReasonNotReady    = condition.ReasonNotReady
	ReasonFailed      = condition.ReasonFailed
	ReasonBuildFailed = condition.ReasonBuildFailed
	ReasonApplyFailed = condition.ReasonApplyFailed
	ReasonForbidden   = condition.ReasonForbidden
	ReasonRejected    = condition.ReasonRejected
	// ReasonReconcileFailed: a step after the build failed for a reason that lasts.
	ReasonReconcileFailed = condition.ReasonReconcileFailed
)

// Child is what the shell observed of one applied child.
type Child struct {
	Ref     string         // Kind/namespace/name
	Status  kstatus.Status // from kstatus.Compute on the live object
	Message string
}

// Observation is everything Summarize decides from. The shell fills it after one reconcile.
type Observation struct {
	Generation int64
	// Halt is a deliberate stop from the builder (unknown role, invalid spec, delegated).
	Halt *kinds.Halt
	// BuildErr is a builder error that is not a Halt: terminal until the spec changes.
	BuildErr error
	// PhaseErr is the error of a step after the build (reading the cache, pruning, the
	// upgrade machine) that retrying cannot fix: the CR is Stalled with its class's reason
	// (condition.ClassOf; ReasonReconcileFailed when the error names none).
	PhaseErr error
	// Denied (403), Rejected (the apiserver found the object invalid: retrying cannot help
	// until the spec changes) and Failed (anything else, transient) hold one message per
	// child the apiserver refused.
	Denied, Rejected, Failed []string
	// Children are the applied children, as observed after the apply.
	Children []Child
	// Workload reports the replicas of the main Deployment or StatefulSet, if the Kind has one.
	Workload *Replicas
	// PodProblem explains why pods are not ready (Problem.Message of PodProblem), or is
	// empty. It carries no counts, so a crash loop does not rewrite the conditions.
	PodProblem string
	// Restarts is the restart count of the container PodProblem names (Problem.Restarts).
	Restarts int32
	// Previous conditions, so that lastTransitionTime survives when a status does not flip.
	Previous []metav1.Condition
	Now      metav1.Time
}

// Replicas of the main workload.
type Replicas struct{ Desired, Ready int32 }

// Status is what the shell writes to the CR's status, once, when it changed.
type Status struct {
	Phase              v1.Phase
	ObservedGeneration int64
	Conditions         []metav1.Condition
	Message            string
	ReadyReplicas      int32
	// Restarts is the restart count of the container the message names while pods are
	// stuck, 0 otherwise: the number that changes on every crash lives here, not in a
	// condition message.
	Restarts int32
}

// Summarize decides the status of a CR from one reconcile's observation. It is pure.
func Summarize(o Observation) Status {
	s := Status{ObservedGeneration: o.Generation, Conditions: append([]metav1.Condition(nil), o.Previous...)}
	if o.Workload != nil {
		s.ReadyReplicas = o.Workload.Ready
	}
	if o.PodProblem != "" {
		s.Restarts = o.Restarts
	}
	v := decide(o)
	s.Message = v.Message
	s.Phase = phase(o, v.Class == condition.Ready)
	s.Conditions = v.Conditions(s.Conditions, o.Generation, o.Now)
	sort.Slice(s.Conditions, func(i, j int) bool { return s.Conditions[i].Type < s.Conditions[j].Type })
	return s
}

// decide returns the verdict of an observation: its class (which conditions it sets:
// condition.Verdict.Conditions), reason and message.
func decide(o Observation) condition.Verdict {
	v := func(c condition.Class, reason, msg string) condition.Verdict {
		return condition.Verdict{Class: c, Reason: reason, Message: msg}
	}
	switch {
	case o.PhaseErr != nil:
		pv := condition.Of(o.PhaseErr)
		if !pv.Class.Stalled() {
			pv.Class = condition.Terminal // the shell retries what may pass instead of reporting it
		}
		if pv.Reason == "" || pv.Reason == condition.ReasonError {
			pv.Reason = ReasonReconcileFailed
		}
		return pv
	case o.Halt != nil && o.Halt.Phase == v1.PhaseDegraded:
		return v(condition.Terminal, o.Halt.Reason, o.Halt.Message)
	case o.Halt != nil:
		return v(condition.Idle, o.Halt.Reason, o.Halt.Message)
	case o.BuildErr != nil:
		return v(condition.Terminal, ReasonBuildFailed, o.BuildErr.Error())
	case len(o.Denied) > 0:
		return v(condition.Blocked, ReasonForbidden, first(o.Denied))
	case len(o.Rejected) > 0:
		return v(condition.Terminal, ReasonRejected, first(o.Rejected))
	case len(o.Failed) > 0:
		return v(condition.Transient, ReasonApplyFailed, first(o.Failed))
	}
	for _, c := range o.Children {
		if c.Status == kstatus.FailedStatus {
			return v(condition.Terminal, ReasonFailed, join(c.Ref, c.Message, o.PodProblem))
		}
	}
	for _, c := range o.Children {
		if c.Status != kstatus.CurrentStatus {
			return v(condition.Progressing, ReasonNotReady, join(c.Ref, c.Message, o.PodProblem))
		}
	}
	if w := o.Workload; w != nil {
		if w.Ready < w.Desired {
			return v(condition.Progressing, ReasonNotReady, join(replicasMsg(w), "", o.PodProblem))
		}
		return v(condition.Ready, ReasonAvailable, replicasMsg(w))
	}
	return v(condition.Ready, ReasonAvailable, fmt.Sprintf("%d objects applied and current", len(o.Children)))
}

func replicasMsg(w *Replicas) string { return fmt.Sprintf("%d/%d replicas ready", w.Ready, w.Desired) }

// phase follows the wire contract: Running when ready >= desired > 0, Degraded when some
// replicas are ready or the CR is stalled, Creating otherwise; a Halt sets its own phase.
func phase(o Observation, ready bool) v1.Phase {
	switch {
	case o.Halt != nil:
		return o.Halt.Phase
	case o.PhaseErr != nil || o.BuildErr != nil || len(o.Denied) > 0 || len(o.Rejected) > 0:
		return v1.PhaseDegraded
	case o.Workload != nil:
		w := o.Workload
		switch {
		case ready && w.Ready >= w.Desired && w.Desired > 0:
			return v1.PhaseRunning
		case w.Ready > 0:
			return v1.PhaseDegraded
		default:
			return v1.PhaseCreating
		}
	case ready:
		return v1.PhaseRunning
	default:
		return v1.PhaseCreating
	}
}

func first(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%s (and %d more)", msgs[0], len(msgs)-1)
}

func join(ref, msg, detail string) string {
	out := ref
	if msg != "" {
		out += ": " + msg
	}
	if detail != "" {
		out += "; " + detail
	}
	return out
}

// waitingReasons are container states a user must hear about: they do not resolve alone.
var waitingReasons = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true,
	"CreateContainerConfigError": true, "InvalidImageName": true, "RunContainerError": true,
}

// Problem is why a workload's pods are not ready.
type Problem struct {
	// Message names the pod, the container and what it is stuck on; it holds no counter,
	// so it stays the same while the container keeps crashing.
	Message string
	// Restarts is that container's restart count (status.restarts).
	Restarts int32
}

// PodProblem names the first pod (by name) whose container is stuck, e.g.
// "pod web-7d9f container web: ImagePullBackOff", with that container's restart count; the
// zero Problem when none is. A container that keeps exiting non-zero is crash-looping
// whether the kubelet shows it waiting in back-off or briefly running between two
// crashes: both read "CrashLoopBackOff, last exit code 1 (Error)", so the message stays
// the same for the whole loop.
func PodProblem(pods []corev1.Pod) Problem {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			last := cs.LastTerminationState.Terminated
			crashed := !cs.Ready && cs.RestartCount > 0 && last != nil && last.ExitCode != 0
			w := cs.State.Waiting
			switch {
			case crashed && (w == nil || w.Reason == "CrashLoopBackOff"):
				return Problem{Message: fmt.Sprintf("pod %s container %s: CrashLoopBackOff, last exit code %d (%s)", p.Name, cs.Name, last.ExitCode, last.Reason), Restarts: cs.RestartCount}
			case w != nil && waitingReasons[w.Reason]:
				return Problem{Message: fmt.Sprintf("pod %s container %s: %s", p.Name, cs.Name, w.Reason), Restarts: cs.RestartCount}
			}
		}
	}
	return Problem{}
}

// Requeue is controller-runtime's answer to a reconcile that ended with err, by its class
// (condition.ClassOf): a Transient error without a retry interval goes back through the
// rate limiter's backoff, a Terminal one is logged once and not retried (the spec's change
// wakes the controller), anything else waits its class's interval. A Blocked error is not
// returned: the caller reports it (its condition, its log line).
func Requeue(err error, iv condition.Intervals) (crreconcile.Result, error) {
	c, _ := condition.ClassOf(err)
	switch {
	case c.Backoff(iv):
		return crreconcile.Result{}, err
	case c == condition.Terminal:
		return crreconcile.Result{}, crreconcile.TerminalError(err)
	}
	return crreconcile.Result{RequeueAfter: c.After(iv)}, nil
}

// Equal reports whether two statuses would write the same bytes; the shell patches only
// when they differ.
func Equal(a, b Status) bool {
	if a.Phase != b.Phase || a.ObservedGeneration != b.ObservedGeneration || a.Message != b.Message ||
		a.ReadyReplicas != b.ReadyReplicas || a.Restarts != b.Restarts || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}
