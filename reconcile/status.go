package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/reconcile/apply"
)

// ownedConditions are the condition types the Kind controllers write, the builds' Warnings
// (kinds.WarningReasons) among them. Others (an upgrade's, a user tool's) are left to their
// own field managers.
var ownedConditions = append([]string{drive.ConditionReady, drive.ConditionReconciling, drive.ConditionStalled,
	ConditionUpgradePolicyIgnored, ConditionUpgradeRefused, ConditionUpgradeFailed, ConditionUpgradeLatched,
	ConditionImmutableFieldsKept, ConditionLeftoverChildren, ConditionFieldsNotMaterialized}, kinds.WarningReasons...)

// readStatus extracts the shared status fields of any Kind.
func readStatus(cr kinds.Object) (drive.Status, error) {
	raw, err := json.Marshal(cr)
	if err != nil {
		return drive.Status{}, err
	}
	var s struct {
		Status struct {
			v1.Status     `json:",inline"`
			ReadyReplicas int32 `json:"readyReplicas"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return drive.Status{}, fmt.Errorf("read status of %s: %w", klog.KObj(cr), err)
	}
	return drive.Status{Phase: s.Status.Phase, ObservedGeneration: s.Status.ObservedGeneration,
		Conditions: s.Status.Conditions, Message: s.Status.Message, ReadyReplicas: s.Status.ReadyReplicas,
		Restarts: s.Status.Restarts}, nil
}

// statusPatch is the status as the Kind controllers apply it: only the fields and
// conditions they own, at the resourceVersion the status was computed from.
//
// up, for a Service-shaped CR, is the upgrade machine's state, applied in the same write (and
// always applied for such a CR, as it is, so that the fields stay owned and are never dropped).
func statusPatch(gvk metav1.GroupVersionKind, cr metav1.Object, st drive.Status, up *upgradeState) (*unstructured.Unstructured, error) {
	var owned []metav1.Condition
	for _, c := range st.Conditions {
		if slices.Contains(ownedConditions, c.Type) {
			owned = append(owned, c)
		}
	}
	body := struct {
		Phase              v1.Phase           `json:"phase,omitempty"`
		ObservedGeneration int64              `json:"observedGeneration"`
		Conditions         []metav1.Condition `json:"conditions"`
		Message            string             `json:"message,omitempty"`
		ReadyReplicas      int32              `json:"readyReplicas"`
		Restarts           int32              `json:"restarts,omitempty"`
		*upgradeState      `json:",inline"`
	}{st.Phase, st.ObservedGeneration, owned, st.Message, st.ReadyReplicas, st.Restarts, up}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var status map[string]any
	if err := json.Unmarshal(raw, &status); err != nil {
		return nil, err
	}
	// A Kind whose status schema has no such field (Ingress, legacy HanzoDNS, LuxRuntime…)
	// would refuse the whole apply: write only the fields the CR's own status declares.
	for _, field := range []string{"readyReplicas", "restarts"} {
		if !statusDeclares(cr, field) {
			delete(status, field)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetAPIVersion(metav1.GroupVersion{Group: gvk.Group, Version: gvk.Version}.String())
	u.SetKind(gvk.Kind)
	u.SetNamespace(cr.GetNamespace())
	u.SetName(cr.GetName())
	// the precondition: a status computed from an older CR (a stale ex-leader's) is refused
	u.SetResourceVersion(cr.GetResourceVersion())
	return u, nil
}

// writeStatus applies the status subresource once, under ManagerStatus, only when the
// summary changed; an event marks a change of the Ready condition. A conflict means the CR
// changed since it was read: that change brings the next reconcile, so it is not an error.
// It returns the CR's resourceVersion after the write, "" when it wrote nothing.
func (r *KindReconciler) writeStatus(ctx context.Context, cr kinds.Object, previous, next drive.Status, up *upgradeStep) (rv string, err error) {
	now := metav1.Now()
	if r.Now != nil {
		now = metav1.NewTime(r.Now())
	}
	next, own := kindStatus(r.Entry, cr, previous, next, now)
	if drive.Equal(previous, next) && (up == nil || !up.changed) {
		return "", nil
	}
	var state *upgradeState
	switch {
	case up != nil:
		state = &up.state
	case r.Entry.ServiceSpec != nil:
		s, err := readUpgradeState(cr)
		if err != nil {
			return "", apply.TerminalError(err)
		}
		state = &s
	}
	gvk := r.Entry.GroupVersionKind(r.Context.APIGroup)
	patch, perr := statusPatch(metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}, cr, next, state)
	if perr != nil {
		return "", apply.TerminalError(fmt.Errorf("encode status of %s: %w", klog.KObj(cr), perr))
	}
	if status, ok := patch.Object["status"].(map[string]any); ok {
		for k, v := range own {
			if _, shared := status[k]; !shared {
				status[k] = v
			}
		}
	}
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(kinds.ManagerStatus), client.ForceOwnership)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil // deleted meanwhile
	case apierrors.IsConflict(err):
		logr.FromContextOrDiscard(ctx).V(1).Info("Status not written, the CR changed since it was read; its change reconciles again", "resourceVersion", cr.GetResourceVersion())
		return "", nil
	case err != nil:
		return "", fmt.Errorf("write status of %s: %w", klog.KObj(cr), err)
	}
	before := meta.FindStatusCondition(previous.Conditions, drive.ConditionReady)
	after := meta.FindStatusCondition(next.Conditions, drive.ConditionReady)
	if r.Recorder != nil && readyEvent(before, after) {
		typ := corev1.EventTypeNormal
		if after.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(cr, nil, typ, after.Reason, apply.ActionReconcile, "%s", after.Message)
	}
	if r.Recorder != nil {
		for _, w := range newWarnings(previous, next) {
			r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, w.Reason, apply.ActionReconcile, "%s", w.Message)
		}
	}
	return patch.GetResourceVersion(), nil
}

// readyEvent reports whether a change of the Ready condition from before to after is an
// Event: a change of what the CR reported (becoming ready after it said not yet, falling
// back from ready) or a failure, which is a Warning even in a CR's first status. A new CR's
// first status is otherwise no Event, ready or not: it is the condition itself, with its
// lastTransitionTime (Flux reports progress in conditions, not events). Each such Event
// cost every CR of a 1 000-CR rollout one request more, 0.036x of the kubectl floor.
func readyEvent(before, after *metav1.Condition) bool {
	switch {
	case after == nil:
		return false
	case before != nil && before.Status == after.Status && before.Reason == after.Reason:
		return false
	case after.Reason == drive.ReasonNotReady:
		return before != nil && before.Status == metav1.ConditionTrue
	case after.Status == metav1.ConditionTrue:
		return before != nil
	}
	return true
}

// ConditionFieldsNotMaterialized lists the spec fields a Kind accepts without acting on them,
// each with why (Entry.Status); absent when there are none.
const ConditionFieldsNotMaterialized = "FieldsNotMaterialized"

// kindStatus applies the Entry's own status (Entry.Status): its phase replaces the computed
// one, its FieldsNotMaterialized and Warning conditions are set or removed, and its fields are returned to
// be written beside the shared ones. Without Entry.Status, next is returned unchanged.
func kindStatus(e kinds.Entry, cr kinds.Object, previous, next drive.Status, now metav1.Time) (drive.Status, map[string]any) {
	if e.Status == nil {
		return next, nil
	}
	ready := meta.IsStatusConditionTrue(next.Conditions, drive.ConditionReady)
	sf := e.Status(cr, kinds.Observed{Phase: next.Phase, Ready: ready, ReadyReplicas: next.ReadyReplicas})
	if sf.Phase != "" {
		next.Phase = sf.Phase
	}
	var own []metav1.Condition
	if len(sf.NotMaterialized) > 0 {
		own = append(own, metav1.Condition{Type: ConditionFieldsNotMaterialized, Status: metav1.ConditionTrue, Reason: "NotMaterialized",
			Message: "accepted but not acted on: " + strings.Join(sf.NotMaterialized, "; ")})
	}
	for _, w := range sf.Warnings {
		own = append(own, metav1.Condition{Type: w.Reason, Status: metav1.ConditionTrue, Reason: w.Reason, Message: w.Message})
	}
	for i := range own {
		own[i].LastTransitionTime, own[i].ObservedGeneration = now, next.ObservedGeneration
		if p := meta.FindStatusCondition(previous.Conditions, own[i].Type); p != nil && p.Status == own[i].Status {
			own[i].LastTransitionTime = p.LastTransitionTime
		}
	}
	// the Kind's own condition types: set from this build, or removed when it reports none
	ownTypes := append([]string{ConditionFieldsNotMaterialized}, kinds.WarningReasons...)
	conds := slices.DeleteFunc(slices.Clone(next.Conditions), func(x metav1.Condition) bool { return slices.Contains(ownTypes, x.Type) })
	if len(own) > 0 {
		conds = append(conds, own...)
		slices.SortFunc(conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	}
	next.Conditions = conds
	return next, sf.Fields
}

// newWarnings are the Warning conditions (kinds.WarningReasons) true in next and not in
// previous: each is reported once as a Warning Event when it appears.
func newWarnings(previous, next drive.Status) []metav1.Condition {
	var out []metav1.Condition
	for _, t := range kinds.WarningReasons {
		if c := meta.FindStatusCondition(next.Conditions, t); c != nil && c.Status == metav1.ConditionTrue &&
			!meta.IsStatusConditionTrue(previous.Conditions, t) {
			out = append(out, *c)
		}
	}
	return out
}

// statusDeclares reports whether the typed CR's Status struct (inlined structs included)
// has a field whose JSON name is name.
func statusDeclares(cr any, name string) bool {
	t := reflect.TypeOf(cr)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return true // not a typed CR: keep the field
	}
	st, ok := t.FieldByName("Status")
	if !ok {
		return true
	}
	return declares(st.Type, name)
}

func declares(t reflect.Type, name string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return true
		}
		if (tag == "" && f.Anonymous) || strings.Contains(f.Tag.Get("json"), ",inline") {
			if declares(f.Type, name) {
				return true
			}
		}
	}
	return false
}
