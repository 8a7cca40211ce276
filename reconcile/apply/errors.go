package apply

import (
	"errors"

	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openuniverse/operator/kinds/condition"
)

// ClassOf returns the class of err in the one vocabulary (condition.ClassOf): Transient
// (retried), Blocked (a 403: the operator lacks an RBAC grant; Stalled, reason Forbidden),
// Terminal (the apiserver found the object invalid or the request malformed, or the error
// was made terminal where it arose; Stalled). Unknown errors are Transient: retrying is the
// safe default for what the operator cannot name; so is nil.
func ClassOf(err error) condition.Class {
	c, _ := condition.ClassOf(err)
	switch {
	case err == nil:
		return condition.Transient
	case c == condition.Transient && errors.Is(err, crreconcile.TerminalError(nil)):
		return condition.Terminal // already classified terminal where it arose
	}
	return c
}

// Terminal reports whether an apply error cannot be fixed by retrying because the object
// itself is wrong (Terminal): the spec that built it must change.
func Terminal(err error) bool { return err != nil && ClassOf(err) == condition.Terminal }

// TerminalError wraps err so controller-runtime logs it once and does not requeue: the
// next reconcile comes from a change of the CR.
func TerminalError(err error) error { return crreconcile.TerminalError(err) }

// failure turns an apply error into its Result: Blocked (a 403) is Denied with the grant it
// lacked, anything else Failed (ClassOf tells Terminal from Transient).
func failure(ref ObjRef, err error) Result {
	if ClassOf(err) == condition.Blocked {
		return Result{Object: ref, Action: Denied, Err: err, Message: MissingGrant(ref, "patch")}
	}
	return Result{Object: ref, Action: Failed, Err: err, Message: err.Error()}
}
