package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/reconcile/apply"
)

type entry struct {
	manager, subresource, fields string
}

func withManaged(entries ...entry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	var mf []metav1.ManagedFieldsEntry
	for _, e := range entries {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: e.manager, Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: e.subresource, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(e.fields)})
	}
	u.SetManagedFields(mf)
	return u
}

const (
	ours        = "universe-operator"
	replicas    = `{"f:spec":{"f:replicas":{}}}`
	replicasImg = `{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	labelTeam   = `{"f:metadata":{"f:labels":{"f:team":{}}}}`
	statusReady = `{"f:status":{"f:readyReplicas":{}}}`
)

// TestDriftedBy: attribution names exactly the managers whose fields an apply took back.
func TestDriftedBy(t *testing.T) {
	cases := map[string]struct {
		before, after *unstructured.Unstructured
		want          []string
	}{
		"kubectl edit took replicas; we took it back": {
			before: withManaged(entry{ours, "", `{"f:spec":{"f:template":{}}}`}, entry{"kubectl-edit", "", replicas}),
			after:  withManaged(entry{ours, "", replicasImg}),
			want:   []string{"kubectl-edit"},
		},
		"kubectl scale writes through /scale": {
			before: withManaged(entry{ours, "", `{"f:spec":{"f:template":{}}}`}, entry{"kubectl", "scale", replicas}),
			after:  withManaged(entry{ours, "", replicasImg}),
			want:   []string{"kubectl"},
		},
		"a field only they own is not drift": {
			before: withManaged(entry{ours, "", replicasImg}, entry{"kubectl-label", "", labelTeam}),
			after:  withManaged(entry{ours, "", replicasImg}, entry{"kubectl-label", "", labelTeam}),
		},
		"status writers are never drift": {
			before: withManaged(entry{ours, "", replicasImg}, entry{"kube-controller-manager", "status", statusReady}),
			after:  withManaged(entry{ours, "", replicasImg}, entry{"kube-controller-manager", "status", statusReady}),
		},
		"a shared value (same value applied by both) is not drift": {
			before: withManaged(entry{ours, "", replicasImg}, entry{"helm", "", replicas}),
			after:  withManaged(entry{ours, "", replicasImg}, entry{"helm", "", replicas}),
		},
		"spec change from git, no other writer": {
			before: withManaged(entry{ours, "", replicas}),
			after:  withManaged(entry{ours, "", replicasImg}),
		},
		"no live object": {after: withManaged(entry{ours, "", replicas})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := apply.DriftedBy(tc.before, tc.after, ours)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DriftedBy (-want +got):\n%s", diff)
			}
		})
	}
}
