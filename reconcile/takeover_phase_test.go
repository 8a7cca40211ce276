package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/children"
)

func TestTakeoverConditions(t *testing.T) {
	t0, t1 := metav1.Unix(100, 0), metav1.Unix(200, 0)
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Available"}
	kept := []children.Kept{{Object: apply.ObjRef{Group: "apps", Kind: "StatefulSet", Namespace: "ns", Name: "db"}, Field: "spec.serviceName", Live: `"db-headless"`, Built: `"db-hs"`}}
	left := []apply.ObjRef{{Kind: "Service", Namespace: "ns", Name: "db-headless"}}
	prevKept := metav1.Condition{Type: ConditionImmutableFieldsKept, Status: metav1.ConditionTrue, Reason: ReasonImmutableFieldKept, Message: "old", LastTransitionTime: t0}
	cases := map[string]struct {
		previous             []metav1.Condition
		kept                 []children.Kept
		left                 []apply.ObjRef
		keptKnown, leftKnown bool
		want                 []metav1.Condition
	}{
		"nothing to say: no conditions": {keptKnown: true, leftKnown: true, want: []metav1.Condition{ready}},
		"kept and leftover: both, with names and values": {kept: kept, left: left, keptKnown: true, leftKnown: true, want: []metav1.Condition{
			{Type: ConditionImmutableFieldsKept, Status: metav1.ConditionTrue, Reason: ReasonImmutableFieldKept, ObservedGeneration: 3, LastTransitionTime: t1,
				Message: `immutable fields keep their live values (annotate the CR universe.dev/force=enabled to recreate instead): StatefulSet/ns/db spec.serviceName: kept "db-headless" (built "db-hs")`},
			{Type: ConditionLeftoverChildren, Status: metav1.ConditionTrue, Reason: ReasonLeftoverChildren, ObservedGeneration: 3, LastTransitionTime: t1,
				Message: "1 children owned by this CR were not applied by universe-operator and are left in place (delete them when no longer needed): Service/ns/db-headless"},
			ready}},
		"still kept: the transition time stays": {previous: []metav1.Condition{prevKept}, kept: kept, keptKnown: true, leftKnown: true, want: []metav1.Condition{
			{Type: ConditionImmutableFieldsKept, Status: metav1.ConditionTrue, Reason: ReasonImmutableFieldKept, ObservedGeneration: 3, LastTransitionTime: t0,
				Message: `immutable fields keep their live values (annotate the CR universe.dev/force=enabled to recreate instead): StatefulSet/ns/db spec.serviceName: kept "db-headless" (built "db-hs")`},
			ready}},
		"no longer kept: removed": {previous: []metav1.Condition{prevKept}, keptKnown: true, leftKnown: true, want: []metav1.Condition{ready}},
		"not looked at (prune did not run): the previous one stays": {previous: []metav1.Condition{prevKept}, keptKnown: false, leftKnown: false,
			want: []metav1.Condition{prevKept, ready}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := takeoverConditions([]metav1.Condition{ready}, tc.previous, tc.kept, tc.left, tc.keptKnown, tc.leftKnown, 3, t1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
