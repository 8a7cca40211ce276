package reconcile

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/upgrade"
)

// PreflightGC reclaims orphaned pre-flight resources (§3.5): leader only, independent of
// the upgrade gate, once at start and then every Interval. A resource younger than Grace, or
// whose owner cannot be read, is kept (fail-closed); one whose owner is gone, has no
// pre-flight in flight, or pre-flights another target is deleted.
type PreflightGC struct {
	Client   client.Client // uncached
	Served   func(schema.GroupVersionKind) bool
	Interval time.Duration
	Grace    time.Duration
	Now      func() time.Time
	Log      logr.Logger
}

// Start runs the collector until ctx ends.
func (g *PreflightGC) Start(ctx context.Context) error {
	t := time.NewTicker(upgrade.GCInterval(g.Interval))
	defer t.Stop()
	for {
		g.Collect(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Collect is one pass; it returns how many resources it deleted. A list error of one kind skips
// that kind.
func (g *PreflightGC) Collect(ctx context.Context) int {
	grace := g.Grace
	if grace == 0 {
		grace = upgrade.DefaultGCGrace
	}
	owners := map[types.UID]upgrade.OwnerState{}
	deleted := 0
	for _, gvk := range preflightKinds {
		if g.Served != nil && !g.Served(gvk) {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := g.Client.List(ctx, list, client.HasLabels{upgrade.LabelPreflightOf}); err != nil {
			if !meta.IsNoMatchError(err) {
				g.Log.Info("Pre-flight collector could not list a kind, skipping it", "kind", gvk.Kind, "error", err.Error())
			}
			continue
		}
		for i := range list.Items {
			o := &list.Items[i]
			state := g.owner(ctx, o, owners)
			orphan, why := upgrade.Collect(upgrade.Resource{Labels: o.GetLabels(), Created: o.GetCreationTimestamp().Time}, state, g.Now(), grace)
			if !orphan {
				continue
			}
			if err := deletePreflight(ctx, g.Client, o); err != nil {
				g.Log.Info("Pre-flight collector could not delete", "object", apply.RefOf(o).String(), "error", err.Error())
				continue
			}
			deleted++
			metricPreflightGC.Inc()
			g.Log.Info("Collected orphaned pre-flight resource", "object", apply.RefOf(o).String(), "reason", why)
		}
	}
	return deleted
}

// owner reads the CR of a pre-flight resource through its owner reference, memoized by uid:
// gone (or replaced by a CR of the same name) means nothing in flight; an API error means
// unknown (keep); a resource with no owner reference is not judged (unknown).
func (g *PreflightGC) owner(ctx context.Context, o *unstructured.Unstructured, memo map[types.UID]upgrade.OwnerState) upgrade.OwnerState {
	refs := o.GetOwnerReferences()
	if len(refs) == 0 {
		return upgrade.OwnerState{}
	}
	ref := refs[0]
	if s, ok := memo[ref.UID]; ok {
		return s
	}
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion(ref.APIVersion)
	cr.SetKind(ref.Kind)
	state := upgrade.OwnerState{}
	err := g.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}, cr)
	switch {
	case apierrors.IsNotFound(err):
		state = upgrade.OwnerState{Known: true}
	case err != nil:
		g.Log.Info("Pre-flight collector could not read an owner, keeping its resources", "owner", ref.Kind+"/"+o.GetNamespace()+"/"+ref.Name, "error", err.Error())
	case cr.GetUID() != ref.UID:
		state = upgrade.OwnerState{Known: true}
	default:
		state = upgrade.OwnerState{Known: true}
		phase, _, _ := unstructured.NestedString(cr.Object, "status", "upgrade", "phase")
		target, _, _ := unstructured.NestedString(cr.Object, "status", "upgrade", "targetImage")
		if upgrade.Phase(phase) == upgrade.Preflighting && target != "" {
			state.InFlight = upgrade.TargetHash(target)
		}
	}
	memo[ref.UID] = state
	return state
}
