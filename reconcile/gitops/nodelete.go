package gitops

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNeverDeletes is what the git path's client answers to any delete: the
// sweep never prunes, and that is enforced below the Plan, in the client
// itself, so no later code path can delete through it.
var ErrNeverDeletes = errors.New("the git path never deletes")

// neverDelete is a client that refuses Delete and DeleteAllOf without
// sending anything; every other call goes to the wrapped client.
type neverDelete struct {
	client.WithWatch
}

// NeverDelete wraps c so that Delete and DeleteAllOf fail with
// ErrNeverDeletes and reach no apiserver.
func NeverDelete(c client.WithWatch) client.WithWatch { return neverDelete{WithWatch: c} }

func (neverDelete) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	return fmt.Errorf("delete %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), ErrNeverDeletes)
}

func (neverDelete) DeleteAllOf(_ context.Context, obj client.Object, _ ...client.DeleteAllOfOption) error {
	return fmt.Errorf("delete all %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, ErrNeverDeletes)
}
