// Package condition is the one error vocabulary of every controller (the Kind controllers,
// the upgrade machine, ImageUpdate, AgentDeployment, tenant onboarding): what retrying can do
// about a state (its Class), how a class maps to the kstatus conditions Ready, Stalled and
// Reconciling, and when the controller looks again. It is pure: the caller passes the time.
package condition

import (
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types, kstatus vocabulary: Ready is the summary; Reconciling and Stalled are
// abnormal-true and present only while true.
const (
	TypeReady       = "Ready"
	TypeReconciling = "Reconciling"
	TypeStalled     = "Stalled"
)

// Owned are the condition types Set writes; a status writer owns them (server-side apply).
var Owned = []string{TypeReady, TypeReconciling, TypeStalled}

// Class is what a state means and what retrying can do about it.
type Class string

// The classes, with their conditions and requeue (Verdict.Conditions, Class.After).
const (
	// Ready: done. Ready=True; looked at again at the controller's resync.
	Ready Class = "Ready"
	// Progressing: not ready yet, progress expected (a rollout, an agent starting).
	// Ready=False, Reconciling=True; looked at again at the progress interval.
	Progressing Class = "Progressing"
	// Idle: not ready and nothing wrong, nothing to do until something changes (a Kind
	// delegated to another operator, a read-only mode, no tag of the file's shape).
	// Ready=False; looked at again at the resync.
	Idle Class = "Idle"
	// Transient: an error that may pass on its own (network, timeout, conflict, throttling,
	// a peer's 5xx). Ready=False, Reconciling=True; retried at the retry interval, or with
	// the controller's backoff when that is 0.
	Transient Class = "Transient"
	// Blocked: an error that lasts until something outside the spec changes, which no watch
	// reports (an RBAC grant, a Namespace's org label, a Secret, a file in git, a peer's
	// record). Ready=False, Stalled=True; looked at again at the resync, never sooner.
	Blocked Class = "Blocked"
	// Terminal: an error that lasts until the spec changes (it does not parse, the apiserver
	// found what it builds invalid). Ready=False, Stalled=True; not requeued: the spec's
	// change wakes the controller.
	Terminal Class = "Terminal"
)

// Error is an error classified where it arose, with the condition reason it stands for.
type Error struct {
	Class  Class
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorClass implements Classified.
func (e *Error) ErrorClass() (Class, string) { return e.Class, e.Reason }

// Classified is an error that knows its class and reason (Error, kinds.TenancyError).
type Classified interface {
	error
	ErrorClass() (Class, string)
}

// TransientError classifies err as Transient with reason.
func TransientError(reason string, err error) error { return wrap(Transient, reason, err) }

// BlockedError classifies err as Blocked with reason.
func BlockedError(reason string, err error) error { return wrap(Blocked, reason, err) }

// TerminalError classifies err as Terminal with reason.
func TerminalError(reason string, err error) error { return wrap(Terminal, reason, err) }

func wrap(c Class, reason string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Reason: reason, Err: err}
}

// Reasons ClassOf gives the apiserver's refusals.
const (
	ReasonForbidden = "Forbidden" // the operator lacks an RBAC grant
	ReasonRejected  = "Rejected"  // the apiserver found an object invalid
	ReasonError     = "Error"     // an error nobody classified
)

// ClassOf returns the class of err and the condition reason it stands for: the class of a
// Classified error (the outermost in the chain), Blocked (Forbidden) for a 403, Terminal
// (Rejected) for an invalid object or a malformed request, Transient (Error) otherwise:
// retrying is the safe default for what the operator cannot name. nil is Ready.
func ClassOf(err error) (Class, string) {
	var c Classified
	switch {
	case err == nil:
		return Ready, ""
	case errors.As(err, &c):
		return c.ErrorClass()
	case apierrors.IsForbidden(err):
		return Blocked, ReasonForbidden
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return Terminal, ReasonRejected
	}
	return Transient, ReasonError
}

// Verdict is the outcome of one reconcile: its class, the condition reason and message.
type Verdict struct {
	Class   Class
	Reason  string
	Message string
}

// Of is the verdict of err (ClassOf, its message); of nil, Ready with no reason.
func Of(err error) Verdict {
	c, reason := ClassOf(err)
	v := Verdict{Class: c, Reason: reason}
	if err != nil {
		v.Message = err.Error()
	}
	return v
}

// Stalled reports whether retrying cannot help: something must change first.
func (c Class) Stalled() bool { return c == Blocked || c == Terminal }

// Reconciling reports whether progress is expected without a change.
func (c Class) Reconciling() bool { return c == Progressing || c == Transient }

// Conditions returns prev with Ready, and Stalled or Reconciling, set for v at generation;
// an abnormal condition the class does not hold is removed. now stamps a condition whose
// status changes (meta.SetStatusCondition keeps the transition time otherwise). prev is not
// modified; the other conditions keep their order.
func (v Verdict) Conditions(prev []metav1.Condition, generation int64, now metav1.Time) []metav1.Condition {
	out := slices.Clone(prev)
	set := func(typ string, st metav1.ConditionStatus) {
		meta.SetStatusCondition(&out, metav1.Condition{Type: typ, Status: st, Reason: v.Reason, Message: v.Message,
			ObservedGeneration: generation, LastTransitionTime: now})
	}
	if v.Class == Ready {
		set(TypeReady, metav1.ConditionTrue)
	} else {
		set(TypeReady, metav1.ConditionFalse)
	}
	for _, c := range []struct {
		typ string
		on  bool
	}{{TypeStalled, v.Class.Stalled()}, {TypeReconciling, v.Class.Reconciling()}} {
		if c.on {
			set(c.typ, metav1.ConditionTrue)
		} else {
			meta.RemoveStatusCondition(&out, c.typ)
		}
	}
	return out
}

// Intervals are a controller's waits; 0 means "never by itself" (Retry 0: the controller's
// backoff instead, Backoff).
type Intervals struct {
	// Retry is the wait after a Transient error.
	Retry time.Duration
	// Progress is the wait while Progressing.
	Progress time.Duration
	// Resync is the wait after Ready, Idle and Blocked: what no watch reports.
	Resync time.Duration
}

// After is how long a controller waits before looking again at a CR of class c (0: not
// until a watch wakes it). Terminal is never requeued.
func (c Class) After(iv Intervals) time.Duration {
	switch c {
	case Transient:
		return iv.Retry
	case Progressing:
		return iv.Progress
	case Terminal:
		return 0
	}
	return iv.Resync
}

// Backoff reports whether the controller retries c through its rate limiter's backoff
// (returning the error to controller-runtime) rather than after a fixed wait.
func (c Class) Backoff(iv Intervals) bool { return c == Transient && iv.Retry == 0 }
