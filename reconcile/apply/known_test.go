package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/reconcile/apply"
)

func TestClassify(t *testing.T) {
	meta := func(rv string, managers ...metav1.ManagedFieldsEntry) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{ResourceVersion: rv, ManagedFields: managers}
	}
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const (
		replicas = `{"f:spec":{"f:replicas":{}}}`
		image    = `{"f:spec":{"f:image":{}}}`
		both     = `{"f:spec":{"f:image":{},"f:replicas":{}}}`
	)
	cases := map[string]struct {
		before, after metav1.Object
		want          apply.Action
		drifted       []string
	}{
		"absent before is a create": {
			before: nil, after: meta("5", entry("gitops", replicas)), want: apply.Created,
		},
		"same resourceVersion is in sync": {
			before: meta("5", entry("gitops", replicas)), after: meta("5", entry("gitops", replicas)), want: apply.InSync,
		},
		"a new resourceVersion names who had taken our fields": {
			before: meta("5", entry("gitops", image), entry("kubectl-edit", replicas), entry("hpa", `{"f:metadata":{}}`)),
			after:  meta("6", entry("gitops", both), entry("hpa", `{"f:metadata":{}}`)),
			want:   apply.Updated, drifted: []string{"kubectl-edit"},
		},
		"an apply owning no field changed nothing (before-first-apply bookkeeping)": {
			before: meta("5"), after: meta("6", entry("before-first-apply", `{"f:metadata":{"f:labels":{}}}`)), want: apply.InSync,
		},
		"an update nobody drifted names nobody": {
			before: meta("5", entry("gitops", image)), after: meta("6", entry("gitops", both)), want: apply.Updated,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, drifted := apply.Classify(c.before, c.after, "gitops")
			if got != c.want {
				t.Errorf("action = %s, want %s", got, c.want)
			}
			if diff := cmp.Diff(c.drifted, drifted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drifted by (-want +got):\n%s", diff)
			}
		})
	}
}
