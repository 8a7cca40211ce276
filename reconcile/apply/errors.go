package apply

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ErrorClass says what retrying an error can do. Every error the controllers meet is
// classified here, once; the class decides the condition and the requeue.
type ErrorClass string

// The classes.
const (
	// Transient errors may pass on their own: network, timeouts, conflicts, throttling, an
	// apiserver that is starting. Retried (an apply failure after requeueApplyFailed, any
	// other with backoff); the CR is Reconciling meanwhile.
	Transient ErrorClass = "Transient"
	// Forbidden: the operator lacks an RBAC grant. Terminal until its RBAC changes: the CR
	// is Stalled (reason Forbidden) and not requeued.
	Forbidden ErrorClass = "Forbidden"
	// Invalid: the apiserver found the object invalid (a schema violation, an immutable
	// field) or the request malformed. Terminal until the spec changes: the CR is Stalled
	// (reason Rejected) and not requeued.
	Invalid ErrorClass = "Invalid"
)

// ClassOf returns the class of err. Unknown errors are Transient: retrying is the safe
// default for what the operator cannot name.
func ClassOf(err error) ErrorClass {
	switch {
	case err == nil:
		return Transient
	case apierrors.IsForbidden(err):
		return Forbidden
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return Invalid
	case errors.Is(err, crreconcile.TerminalError(nil)):
		return Invalid // already classified terminal where it arose
	}
	return Transient
}

// Terminal reports whether an apply error cannot be fixed by retrying because the object
// itself is wrong (Invalid): the spec that built it must change.
func Terminal(err error) bool { return err != nil && ClassOf(err) == Invalid }

// TerminalError wraps err so controller-runtime logs it once and does not requeue: the
// next reconcile comes from a change of the CR.
func TerminalError(err error) error { return crreconcile.TerminalError(err) }

// failure turns an apply error into its Result: Forbidden is Denied with the grant it
// lacked, anything else Failed (ClassOf tells Invalid from Transient).
func failure(ref ObjRef, err error) Result {
	if ClassOf(err) == Forbidden {
		return Result{Object: ref, Action: Denied, Err: err, Message: MissingGrant(ref, "patch")}
	}
	return Result{Object: ref, Action: Failed, Err: err, Message: err.Error()}
}
