package children_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/children"
)

func TestPrunable(t *testing.T) {
	const owner = types.UID("cr-uid")
	obj := func(apiVersion, kind, name string, controller types.UID, isController bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		if controller != "" {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "hanzo.ai/v1", Kind: "Service", Name: "web", UID: controller, Controller: ptr.To(isController)}})
		}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: kinds.ManagerKinds, Operation: metav1.ManagedFieldsOperationApply}})
		return u
	}
	by := func(u *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType, sub string) *unstructured.Unstructured {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: op, Subresource: sub}})
		return u
	}
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, apply.RefOf(o).String())
		}
		return out
	}
	desired := []*unstructured.Unstructured{obj("apps/v1", "Deployment", "web", owner, true), obj("v1", "Service", "web", owner, true)}
	cases := map[string]struct {
		live []*unstructured.Unstructured
		want []string
	}{
		"still built: kept": {
			live: []*unstructured.Unstructured{obj("apps/v1", "Deployment", "web", owner, true)},
		},
		"still built at another API version: kept": {
			live: []*unstructured.Unstructured{obj("autoscaling/v2", "HorizontalPodAutoscaler", "x", "", false), obj("apps/v1beta2", "Deployment", "web", owner, true)},
		},
		"no longer built and ours: deleted": {
			live: []*unstructured.Unstructured{obj("autoscaling/v2", "HorizontalPodAutoscaler", "web", owner, true)},
			want: []string{"HorizontalPodAutoscaler/ns/web"},
		},
		"another CR's: kept": {
			live: []*unstructured.Unstructured{obj("autoscaling/v2", "HorizontalPodAutoscaler", "other", "other-uid", true)},
		},
		"ours but not as controller: kept": {
			live: []*unstructured.Unstructured{obj("autoscaling/v2", "HorizontalPodAutoscaler", "shared", owner, false)},
		},
		"nobody's: kept": {
			live: []*unstructured.Unstructured{obj("v1", "ConfigMap", "loose", "", false)},
		},
		"ours by owner but the Rust operator applied it: kept": {
			live: []*unstructured.Unstructured{by(obj("v1", "Service", "web-old", owner, true), "hanzo-operator", metav1.ManagedFieldsOperationApply, "")},
		},
		"ours by owner but the Go operator created it: kept": {
			live: []*unstructured.Unstructured{by(obj("v1", "ConfigMap", "web-corefile", owner, true), "manager", metav1.ManagedFieldsOperationUpdate, "")},
		},
		"our manager only updated it (not applied): kept": {
			live: []*unstructured.Unstructured{by(obj("v1", "ConfigMap", "web-x", owner, true), kinds.ManagerKinds, metav1.ManagedFieldsOperationUpdate, "")},
		},
		"our manager applied only its status: kept": {
			live: []*unstructured.Unstructured{by(obj("v1", "ConfigMap", "web-y", owner, true), kinds.ManagerKinds, metav1.ManagedFieldsOperationApply, "status")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := make([]unstructured.Unstructured, len(tc.live))
			for i, o := range tc.live {
				live[i] = *o
			}
			if diff := cmp.Diff(tc.want, names(children.Prunable(desired, live, owner, kinds.ManagerKinds))); diff != "" {
				t.Errorf("prunable (-want +got):\n%s", diff)
			}
		})
	}
}
