package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/children"
)

// takeover is what the keep and prune phases found about children another operator made.
type takeover struct {
	force     bool            // the CR carries ForceAnnotation: recreate instead of keeping
	kept      []children.Kept // immutable live values kept
	keptKnown bool            // the keep phase ran
	leftover  []apply.ObjRef  // children owned by the CR that we neither build nor applied
	leftKnown bool            // the prune phase ran
}

// keep reads the live children whose kinds have immutable fields (from the cache) and keeps
// their live immutable values in what is applied, unless the CR asks to force.
func (r *KindReconciler) keep(ctx context.Context, s *scope) error {
	if s.halted {
		return nil
	}
	s.takeover.force = children.Forced(s.cr.GetAnnotations())
	if s.takeover.force {
		s.takeover.keptKnown = true
		return nil
	}
	live := map[apply.ObjRef]*unstructured.Unstructured{}
	for _, d := range s.desired {
		gvk := d.GroupVersionKind()
		if len(children.ImmutableFields[gvk.GroupKind()]) == 0 || !slices.Contains(r.Owned, gvk) {
			continue // only kinds the controller watches are read (from their informers)
		}
		u, err := r.child(ctx, s, d)
		if err != nil {
			return err
		}
		if u != nil {
			live[children.Unversioned(apply.RefOf(d))] = u
		}
	}
	s.desired, s.takeover.kept = children.KeepImmutable(s.desired, live)
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
		if res.Action == apply.Adopted {
			adopted = append(adopted, res.Object.String()+" (from "+joinNames(res.AdoptedFrom)+")")
			log.Info("Adopted child", "object", res.Object.String(), "action", res.Action, "from", res.AdoptedFrom)
		}
	}
	if len(adopted) > 0 {
		r.event(s.cr, corev1.EventTypeNormal, EventAdopted, "now applied by %s, nothing recreated: %s", kinds.ManagerKinds, joinNames(adopted))
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

// Condition types and reasons of the takeover. Both are abnormal-true and absent when there
// is nothing to say.
const (
	// ConditionImmutableFieldsKept: a child keeps live values of fields the API will not
	// change; the message names each field with the live and the built value.
	ConditionImmutableFieldsKept = "ImmutableFieldsKept"
	ReasonImmutableFieldKept     = "ImmutableFieldKept"
	// ConditionLeftoverChildren: children the CR owns that this operator neither builds nor
	// applied (the previous operator's, under other names) are left in place, never deleted.
	ConditionLeftoverChildren = "LeftoverChildren"
	ReasonLeftoverChildren    = "LeftoverChildren"
)

// Event reasons of the takeover (the registry's, kinds/condition).
const (
	EventAdopted            = condition.EventAdopted            // Normal: existing children are now applied by this operator
	EventLeftover           = condition.EventLeftover           // Warning: children left in place for the user to remove
	EventImmutableFieldKept = condition.EventImmutableFieldKept // Warning: live immutable values kept
)

// takeoverConditions sets or removes the two takeover conditions on conds: kept immutable
// fields and leftover children. A nil slice (the phase did not run) keeps the previous
// condition as it was.
func takeoverConditions(conds, previous []metav1.Condition, kept []children.Kept, left []apply.ObjRef, keptKnown, leftKnown bool, gen int64, now metav1.Time) []metav1.Condition {
	out := slices.Clone(conds)
	set := func(typ, reason, msg string, known bool) {
		out = slices.DeleteFunc(out, func(c metav1.Condition) bool { return c.Type == typ })
		if !known {
			if p := meta.FindStatusCondition(previous, typ); p != nil {
				out = append(out, *p)
			}
			return
		}
		if msg == "" {
			return
		}
		c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now}
		if p := meta.FindStatusCondition(previous, typ); p != nil && p.Status == c.Status {
			c.LastTransitionTime = p.LastTransitionTime
		}
		out = append(out, c)
	}
	set(ConditionImmutableFieldsKept, ReasonImmutableFieldKept, keptMessage(kept), keptKnown)
	set(ConditionLeftoverChildren, ReasonLeftoverChildren, leftoverMessage(left), leftKnown)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func keptMessage(kept []children.Kept) string {
	if len(kept) == 0 {
		return ""
	}
	parts := make([]string, len(kept))
	for i, k := range kept {
		parts[i] = k.String()
	}
	return "immutable fields keep their live values (annotate the CR " + children.ForceAnnotation + "=enabled to recreate instead): " + strings.Join(parts, "; ")
}

func leftoverMessage(left []apply.ObjRef) string {
	if len(left) == 0 {
		return ""
	}
	names := make([]string, len(left))
	for i, r := range left {
		names[i] = r.String()
	}
	return fmt.Sprintf("%d children owned by this CR were not applied by %s and are left in place (delete them when no longer needed): %s",
		len(left), kinds.ManagerKinds, strings.Join(names, ", "))
}
