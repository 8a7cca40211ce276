package drive

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestTenantRequeueTable: each class of onboarding failure → what controller-runtime does.
func TestTenantRequeueTable(t *testing.T) {
	rb := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}
	resync := 10 * time.Minute
	for _, tc := range []struct {
		name     string
		err      error
		after    time.Duration
		returned bool // the error goes back to controller-runtime (backoff)
		terminal bool // ... as terminal: logged once, never retried
	}{
		{"ok", nil, resync, false, false},
		{"conflict backs off", fmt.Errorf("apply RoleBinding: %w", apierrors.NewConflict(rb, "x", errors.New("changed"))), 0, true, false},
		{"network backs off", errors.New("dial tcp: connection refused"), 0, true, false},
		{"no bind grant waits for the resync", fmt.Errorf("apply RoleBinding: %w", apierrors.NewForbidden(rb, "x", errors.New("cannot bind"))), resync, false, false},
		{"refused object is terminal", fmt.Errorf("apply Secret: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "x", nil)), 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tenantRequeue(tc.err, resync)
			if res.RequeueAfter != tc.after || (err != nil) != tc.returned || errors.Is(err, crreconcile.TerminalError(nil)) != tc.terminal {
				t.Errorf("requeue %s, error %v; want after %s, returned %v, terminal %v", res.RequeueAfter, err, tc.after, tc.returned, tc.terminal)
			}
		})
	}
}
