package apply

import (
	"context"
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyKnown is the one-request path for a caller that already knows the live object
// (from a watch): it server-side applies obj with a single forced apply patch — no get,
// no dry-run — and classifies the outcome against before, the caller's last view of the
// live object's metadata (nil when the caller knows it is absent). It returns the result
// and the object as the apiserver stored it (nil on failure).
//
// The apiserver does not write a server-side apply that changes nothing, so an
// unchanged resourceVersion means the object was in sync; see Classify. Unlike Apply,
// it does not move kubectl's last-applied annotation or its managedFields to our
// manager: callers with no knowledge of the live object should use Apply.
func (a *Applier) ApplyKnown(ctx context.Context, obj *unstructured.Unstructured, before metav1.Object) (Result, *unstructured.Unstructured) {
	return a.ApplyRecorded(ctx, obj, before, nil)
}

// ApplyRecorded is ApplyKnown for a caller that also remembers its last apply of obj
// (prev, nil for none): the outcome is classified by ClassifyRecorded, so an object the
// caller's watch has not delivered yet, but that the last apply returned, is not Created.
func (a *Applier) ApplyRecorded(ctx context.Context, obj *unstructured.Unstructured, before metav1.Object, prev *Record) (Result, *unstructured.Unstructured) {
	ref := RefOf(obj)
	after := obj.DeepCopy()
	err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(after),
		client.FieldOwner(a.Manager), client.ForceOwnership)
	if err != nil {
		return failure(ref, fmt.Errorf("apply %s: %w", ref, err)), nil
	}
	action, drifted := ClassifyRecorded(before, after, prev, a.Manager)
	return Result{Object: ref, Action: action, DriftedBy: drifted}, after
}

// ClassifyRecorded is Classify for a caller whose view of the live object (before) may lag
// behind its own last apply, recorded in prev (nil: none). A watch that has not delivered
// the object yet shows it absent although the last apply returned it: when prev is OK and
// names the uid the apply returned, the object existed — InSync when its resourceVersion
// is the one the last apply returned (nothing moved it since), else Updated (who moved it
// is not known: the watch never showed it). A uid other than before's is a new object
// (deleted and created again): Created. Otherwise it is Classify. It is pure.
func ClassifyRecorded(before, after metav1.Object, prev *Record, manager string) (Action, []string) {
	known := prev != nil && prev.OK && prev.UID != "" && prev.UID == after.GetUID()
	switch {
	case before == nil && known && prev.ResourceVersion != "" && prev.ResourceVersion == after.GetResourceVersion():
		return InSync, nil
	case before == nil && known:
		return Updated, nil
	case before != nil && before.GetUID() != "" && after.GetUID() != "" && before.GetUID() != after.GetUID():
		return Created, nil
	}
	return Classify(before, after, manager)
}

// Classify decides what an apply did from the live object before it (nil: absent) and
// the object it returned: Created when there was none, InSync when the resourceVersion
// did not move (the apiserver skips no-op writes), else Updated, naming the field
// managers whose fields the apply took back (see DriftedBy).
//
// An apply that declares no field beyond the object's identity (a Namespace with only a
// name) leaves manager owning nothing, so it cannot have changed a value; when it still
// moves the resourceVersion, that is the apiserver's own bookkeeping (its first apply to
// an object with no managedFields records them under "before-first-apply"), and InSync.
func Classify(before, after metav1.Object, manager string) (Action, []string) {
	switch {
	case before == nil:
		return Created, nil
	case before.GetResourceVersion() == after.GetResourceVersion():
		return InSync, nil
	case !owns(after.GetManagedFields(), manager):
		return InSync, nil
	}
	return Updated, driftedBy(before.GetManagedFields(), after.GetManagedFields(), manager)
}

// owns reports whether manager has a managedFields entry for the main resource.
func owns(entries []metav1.ManagedFieldsEntry, manager string) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Subresource == "" {
			return true
		}
	}
	return false
}

// AppliedBy reports whether manager server-side applied obj (a managedFields entry of
// operation Apply on the main resource). Objects another operator created, or that this one
// only found equal to what it builds, have none.
func AppliedBy(obj metav1.Object, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" {
			return true
		}
	}
	return false
}

// Writers names the managers that wrote obj's main resource (not its status), sorted.
func Writers(obj metav1.Object, except string) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Subresource != "" || mf.Manager == except || slices.Contains(out, mf.Manager) {
			continue
		}
		out = append(out, mf.Manager)
	}
	sort.Strings(out)
	return out
}
