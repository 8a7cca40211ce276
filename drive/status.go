package drive

import (
	"fmt"
	"sort"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Condition types, kstatus vocabulary: Ready is the summary; Reconciling and Stalled are
// abnormal-true and present only while true.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons set by Summarize.
const (
	ReasonAvailable   = "Available"   // every child is current
	ReasonNotReady    = "NotReady"    // children are still rolling out
	ReasonFailed      = "Failed"      // a child failed (e.g. ProgressDeadlineExceeded)
	ReasonBuildFailed = "BuildFailed" // the spec cannot be built
	ReasonApplyFailed = "ApplyFailed" // the apiserver refused a child
	ReasonForbidden   = "Forbidden"   // the operator lacks an RBAC grant
	ReasonRejected    = "Rejected"    // the apiserver found a child invalid
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
	// Denied (403), Rejected (the apiserver found the object invalid: retrying cannot help
	// until the spec changes) and Failed (anything else, transient) hold one message per
	// child the apiserver refused.
	Denied, Rejected, Failed []string
	// Children are the applied children, as observed after the apply.
	Children []Child
	// Workload reports the replicas of the main Deployment or StatefulSet, if the Kind has one.
	Workload *Replicas
	// PodProblem explains why pods are not ready (see PodProblem), or is empty.
	PodProblem string
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
}

// Summarize decides the status of a CR from one reconcile's observation. It is pure.
func Summarize(o Observation) Status {
	s := Status{ObservedGeneration: o.Generation, Conditions: append([]metav1.Condition(nil), o.Previous...)}
	if o.Workload != nil {
		s.ReadyReplicas = o.Workload.Ready
	}
	ready, reason, msg, stalled, reconciling := decide(o)
	s.Message = msg
	s.Phase = phase(o, ready)
	set := func(typ string, st metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{
			Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: o.Generation, LastTransitionTime: o.Now,
		})
	}
	if ready {
		set(ConditionReady, metav1.ConditionTrue, reason, msg)
	} else {
		set(ConditionReady, metav1.ConditionFalse, reason, msg)
	}
	for typ, on := range map[string]bool{ConditionStalled: stalled, ConditionReconciling: reconciling} {
		if on {
			set(typ, metav1.ConditionTrue, reason, msg)
		} else {
			meta.RemoveStatusCondition(&s.Conditions, typ)
		}
	}
	sort.Slice(s.Conditions, func(i, j int) bool { return s.Conditions[i].Type < s.Conditions[j].Type })
	return s
}

// decide returns the Ready verdict with its reason and message, and whether the CR is
// stalled (retrying will not help) or reconciling (progress is expected).
func decide(o Observation) (ready bool, reason, msg string, stalled, reconciling bool) {
	switch {
	case o.Halt != nil:
		return false, o.Halt.Reason, o.Halt.Message, o.Halt.Phase == v1.PhaseDegraded, false
	case o.BuildErr != nil:
		return false, ReasonBuildFailed, o.BuildErr.Error(), true, false
	case len(o.Denied) > 0:
		return false, ReasonForbidden, first(o.Denied), true, false
	case len(o.Rejected) > 0:
		return false, ReasonRejected, first(o.Rejected), true, false
	case len(o.Failed) > 0:
		return false, ReasonApplyFailed, first(o.Failed), false, true
	}
	for _, c := range o.Children {
		if c.Status == kstatus.FailedStatus {
			return false, ReasonFailed, join(c.Ref, c.Message, o.PodProblem), true, false
		}
	}
	for _, c := range o.Children {
		if c.Status != kstatus.CurrentStatus {
			return false, ReasonNotReady, join(c.Ref, c.Message, o.PodProblem), false, true
		}
	}
	if w := o.Workload; w != nil {
		if w.Ready < w.Desired {
			return false, ReasonNotReady, join(replicasMsg(w), "", o.PodProblem), false, true
		}
		return true, ReasonAvailable, replicasMsg(w), false, false
	}
	return true, ReasonAvailable, fmt.Sprintf("%d objects applied and current", len(o.Children)), false, false
}

func replicasMsg(w *Replicas) string { return fmt.Sprintf("%d/%d replicas ready", w.Ready, w.Desired) }

// phase follows the wire contract: Running when ready >= desired > 0, Degraded when some
// replicas are ready or the CR is stalled, Creating otherwise; a Halt sets its own phase.
func phase(o Observation, ready bool) v1.Phase {
	switch {
	case o.Halt != nil:
		return o.Halt.Phase
	case o.BuildErr != nil || len(o.Denied) > 0 || len(o.Rejected) > 0:
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

// PodProblem names the first pod (by name) whose container is stuck, e.g.
// "pod web-7d9f container web: CrashLoopBackOff (3 restarts)", or one that keeps
// restarting between back-offs ("restarting, last exit code 1 (Error), 3 restarts"), or ""
// when none is.
func PodProblem(pods []corev1.Pod) string {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && waitingReasons[w.Reason] {
				return fmt.Sprintf("pod %s container %s: %s (%d restarts)", p.Name, cs.Name, w.Reason, cs.RestartCount)
			}
			if last := cs.LastTerminationState.Terminated; !cs.Ready && cs.RestartCount > 0 && last != nil && last.ExitCode != 0 {
				return fmt.Sprintf("pod %s container %s: restarting, last exit code %d (%s), %d restarts", p.Name, cs.Name, last.ExitCode, last.Reason, cs.RestartCount)
			}
		}
	}
	return ""
}

// Equal reports whether two statuses would write the same bytes; the shell patches only
// when they differ.
func Equal(a, b Status) bool {
	if a.Phase != b.Phase || a.ObservedGeneration != b.ObservedGeneration || a.Message != b.Message ||
		a.ReadyReplicas != b.ReadyReplicas || len(a.Conditions) != len(b.Conditions) {
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
