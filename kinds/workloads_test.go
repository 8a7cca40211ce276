package kinds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds"
)

// TestWorkloads: each Entry declares the kinds its main workload can have (what the Kind
// controller reads replicas and pod problems from), derived from what it owns.
func TestWorkloads(t *testing.T) {
	deploy := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	cases := map[string]struct {
		ref  kinds.Ref
		want []schema.GroupKind
	}{
		"Service runs a Deployment":                    {canonRef("Service"), []schema.GroupKind{deploy}},
		"SQL runs a StatefulSet":                       {canonRef("SQL"), []schema.GroupKind{sts}},
		"App runs either, as its role decides":         {canonRef("App"), []schema.GroupKind{deploy, sts}},
		"Gateway runs its proxy Deployment":            {canonRef("Gateway"), []schema.GroupKind{deploy}},
		"Ingress runs no pods":                         {canonRef("Ingress"), nil},
		"legacy HanzoService as Service":               {kinds.Ref{Placement: kinds.PlacementV1alpha1, Kind: "HanzoService"}, []schema.GroupKind{deploy}},
		"Static runs its server Deployment":            {canonRef("Static"), []schema.GroupKind{deploy}},
		"KMSSecret (a loop outside the cluster): none": {canonRef("KMSSecret"), nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, ok := kinds.Builtin()[tc.ref]
			if !ok {
				t.Fatalf("no entry %s", tc.ref)
			}
			if diff := cmp.Diff(tc.want, e.Workloads); diff != "" {
				t.Errorf("Workloads (-want +got):\n%s", diff)
			}
			for _, gk := range tc.want {
				if !e.IsWorkload(gk) {
					t.Errorf("IsWorkload(%s) = false", gk)
				}
			}
			if e.IsWorkload(schema.GroupKind{Kind: "Service"}) {
				t.Error("a core Service is never the main workload")
			}
		})
	}
}
