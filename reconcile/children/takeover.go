package children

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/reconcile/apply"
)

// The takeover decisions: a namespace the Rust or Go operator ran is taken over without
// deleting or recreating anything. Pure functions of the built and the live children.

// ForceAnnotation on a CR, set to "enabled", lets its controller recreate a child whose
// immutable fields differ from the built ones (the meaning of Flux's
// kustomize.toolkit.fluxcd.io/force). Without it the live values are kept.
const ForceAnnotation = "universe.dev/force"

// Forced reports whether the CR asks for children to be recreated on immutable changes.
func Forced(annotations map[string]string) bool {
	return strings.EqualFold(annotations[ForceAnnotation], "enabled") || strings.EqualFold(annotations[ForceAnnotation], "true")
}

// Kept is one immutable field whose live value is kept.
type Kept struct {
	Object apply.ObjRef `json:"object"`
	Field  string       `json:"field"`
	Live   string       `json:"live"`
	Built  string       `json:"built"`
}

func (k Kept) String() string {
	return fmt.Sprintf("%s %s: kept %s (built %s)", k.Object, k.Field, k.Live, k.Built)
}

// ImmutableFields are the fields the API refuses to change once an object exists, per kind.
var ImmutableFields = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "StatefulSet"}: {"spec.serviceName", "spec.selector", "spec.volumeClaimTemplates", "spec.podManagementPolicy"},
	{Group: "apps", Kind: "Deployment"}:  {"spec.selector"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec.selector"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec.selector"},
	{Kind: "Service"}:                    {"spec.clusterIP", "spec.clusterIPs"},
	{Group: "batch", Kind: "Job"}:        {"spec.selector", "spec.template", "spec.completionMode"},
	{Kind: "PersistentVolumeClaim"}:      {"spec.storageClassName", "spec.accessModes", "spec.volumeName", "spec.volumeMode"},
}

// KeepImmutable returns the children to apply: each built child whose live counterpart (by
// group, kind, namespace and name) holds a different value in a field the API will not
// change gets the live value instead, and the field is reported. A built value the live one
// contains (the live object has only added defaults) is no difference. When a workload's
// selector is kept, the selector's labels are added to its pod template so it still matches.
// desired is not modified.
func KeepImmutable(desired []*unstructured.Unstructured, live map[apply.ObjRef]*unstructured.Unstructured) ([]*unstructured.Unstructured, []Kept) {
	out := make([]*unstructured.Unstructured, len(desired))
	var kept []Kept
	for i, d := range desired {
		out[i] = d
		l := live[Unversioned(apply.RefOf(d))]
		fields := ImmutableFields[d.GroupVersionKind().GroupKind()]
		if l == nil || len(fields) == 0 {
			continue
		}
		var obj *unstructured.Unstructured
		for _, f := range fields {
			path := strings.Split(f, ".")
			lv, lok, _ := unstructured.NestedFieldNoCopy(l.Object, path...)
			if !lok {
				continue // the live object never set it: the built value is accepted
			}
			dv, dok, _ := unstructured.NestedFieldNoCopy(d.Object, path...)
			if !dok || contains(lv, dv) {
				continue // unset in the build (the live, defaulted value stays) or the same
			}
			if obj == nil {
				obj = d.DeepCopy()
			}
			keep := cleanLive(f, lv)
			_ = unstructured.SetNestedField(obj.Object, keep, path...)
			kept = append(kept, Kept{Object: apply.RefOf(d), Field: f, Live: compact(keep), Built: compact(dv)})
			if f == "spec.selector" {
				matchTemplate(obj, keep)
			}
		}
		if obj != nil {
			out[i] = obj
		}
	}
	return out, kept
}

// cleanLive drops from a kept live value what the apiserver adds and no client may send
// back: the status and creation time of volume claim templates.
func cleanLive(field string, v any) any {
	v = deepCopyJSON(v)
	if field != "spec.volumeClaimTemplates" {
		return v
	}
	if list, ok := v.([]any); ok {
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				delete(m, "status")
				if md, ok := m["metadata"].(map[string]any); ok {
					delete(md, "creationTimestamp")
				}
			}
		}
	}
	return v
}

// matchTemplate adds the matchLabels of a kept selector to the pod template's labels.
func matchTemplate(obj *unstructured.Unstructured, selector any) {
	sel, _ := selector.(map[string]any)
	ml, _ := sel["matchLabels"].(map[string]any)
	if len(ml) == 0 {
		return
	}
	labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range ml {
		if s, ok := v.(string); ok {
			labels[k] = s
		}
	}
	_ = unstructured.SetNestedStringMap(obj.Object, labels, "spec", "template", "metadata", "labels")
}

// contains reports whether live holds every value built sets: maps by key (live may have
// more), lists element by element with the same length, scalars equal (numbers by value).
func contains(live, built any) bool {
	switch b := built.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, bv := range b {
			lv, ok := l[k]
			if !ok {
				if bv == nil {
					continue
				}
				return false
			}
			if !contains(lv, bv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(b) {
			return false
		}
		for i := range b {
			if !contains(l[i], b[i]) {
				return false
			}
		}
		return true
	default:
		if lf, ok := number(live); ok {
			bf, ok := number(built)
			return ok && lf == bf
		}
		return reflect.DeepEqual(live, built)
	}
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopyJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopyJSON(x)
		}
		return out
	default:
		return t
	}
}

// compact renders a value for a message: JSON, cut at 120 characters.
func compact(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(raw)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// Leftovers returns the live objects the CR with uid owner controls that the build does not
// produce and that manager never applied: another operator's children, which prune leaves
// in place. Sorted by reference.
func Leftovers(desired []*unstructured.Unstructured, live []unstructured.Unstructured, owner types.UID, manager string) []apply.ObjRef {
	want := map[apply.ObjRef]bool{}
	for _, o := range desired {
		want[Unversioned(apply.RefOf(o))] = true
	}
	var out []apply.ObjRef
	for i := range live {
		child := &live[i]
		if want[Unversioned(apply.RefOf(child))] || !controlledBy(child, owner) || apply.AppliedBy(child, manager) {
			continue
		}
		out = append(out, apply.RefOf(child))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
