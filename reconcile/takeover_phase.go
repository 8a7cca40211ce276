package reconcile

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
)

// takeover is what the keep and prune phases found about children another operator made.
type takeover struct {
	force     bool     // the CR carries ForceAnnotation: recreate instead of keeping
	kept      []Kept   // immutable live values kept
	keptKnown bool     // the keep phase ran
	leftover  []ObjRef // children owned by the CR that we neither build nor applied
	leftKnown bool     // the prune phase ran
}

// keep reads the live children whose kinds have immutable fields (from the cache) and keeps
// their live immutable values in what is applied, unless the CR asks to force.
func (r *KindReconciler) keep(ctx context.Context, s *scope) error {
	if s.halted {
		return nil
	}
	s.takeover.force = forced(s.cr.GetAnnotations())
	if s.takeover.force {
		s.takeover.keptKnown = true
		return nil
	}
	live := map[ObjRef]*unstructured.Unstructured{}
	for _, d := range s.desired {
		gvk := d.GroupVersionKind()
		if len(immutableFields[gvk.GroupKind()]) == 0 || !slices.Contains(r.Owned, gvk) {
			continue // only kinds the controller watches are read (from their informers)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), u)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("read %s: %w", RefOf(d), err)
		}
		live[unversioned(RefOf(d))] = u
	}
	s.desired, s.takeover.kept = keepImmutable(s.desired, live)
	s.takeover.keptKnown = true
	return nil
}

// reportTakeover sets the takeover conditions on the status about to be written and records
// an Event when children were adopted, or when the kept fields or the leftovers changed.
func (r *KindReconciler) reportTakeover(ctx context.Context, s *scope, st *drive.Status) {
	t := &s.takeover
	st.Conditions = takeoverConditions(st.Conditions, s.previous.Conditions, t.kept, t.leftover, t.keptKnown, t.leftKnown, s.obs.Generation, s.obs.Now)
	log := logr.FromContextOrDiscard(ctx)
	var adopted []string
	for _, res := range s.results {
		if res.Action == Adopted {
			adopted = append(adopted, res.Object.String()+" (from "+joinNames(res.AdoptedFrom)+")")
			log.Info("Adopted child", "object", res.Object.String(), "action", res.Action, "from", res.AdoptedFrom)
		}
	}
	if len(adopted) > 0 {
		r.event(s.cr, corev1.EventTypeNormal, EventAdopted, "now applied by %s, nothing recreated: %s", ManagerKinds, joinNames(adopted))
	}
	changed := func(typ string) (*string, bool) {
		before, after := meta.FindStatusCondition(s.previous.Conditions, typ), meta.FindStatusCondition(st.Conditions, typ)
		if after == nil {
			return nil, false
		}
		return &after.Message, before == nil || before.Message != after.Message
	}
	if msg, ok := changed(ConditionImmutableFieldsKept); ok {
		log.Info("Kept immutable fields", "kept", len(t.kept))
		r.event(s.cr, corev1.EventTypeWarning, EventImmutableFieldKept, "%s", *msg)
	}
	if msg, ok := changed(ConditionLeftoverChildren); ok {
		log.Info("Left children another operator made in place", "leftover", len(t.leftover))
		r.event(s.cr, corev1.EventTypeWarning, EventLeftover, "%s", *msg)
	}
}
