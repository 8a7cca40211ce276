package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// TestClassifyRecorded: a watch that lags behind our own last apply shows the object
// absent; the record of that apply (uid, resourceVersion) says it existed.
func TestClassifyRecorded(t *testing.T) {
	obj := func(uid, rv string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv, ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "gitops", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}}
	}
	rec := func(ok bool, uid, rv string) *apply.Record {
		return &apply.Record{OK: ok, UID: types.UID(uid), ResourceVersion: rv}
	}
	cases := map[string]struct {
		before metav1.Object
		after  metav1.Object
		prev   *apply.Record
		want   apply.Action
	}{
		"never applied, absent: created":        {before: nil, after: obj("u1", "5"), prev: nil, want: apply.Created},
		"not delivered yet, moved: updated":     {before: nil, after: obj("u1", "7"), prev: rec(true, "u1", "5"), want: apply.Updated},
		"not delivered yet, unmoved: in sync":   {before: nil, after: obj("u1", "5"), prev: rec(true, "u1", "5"), want: apply.InSync},
		"not delivered, rv unrecorded: updated": {before: nil, after: obj("u1", "7"), prev: rec(true, "u1", ""), want: apply.Updated},
		"recreated by someone else: created":    {before: nil, after: obj("u2", "9"), prev: rec(true, "u1", "5"), want: apply.Created},
		"last apply failed: created":            {before: nil, after: obj("u1", "7"), prev: rec(false, "u1", "5"), want: apply.Created},
		"record without uid: created":           {before: nil, after: obj("u1", "7"), prev: rec(true, "", ""), want: apply.Created},
		"watch shows it: as Classify":           {before: obj("u1", "5"), after: obj("u1", "5"), prev: rec(true, "u1", "3"), want: apply.InSync},
		"watch shows it moved: as Classify":     {before: obj("u1", "5"), after: obj("u1", "6"), prev: nil, want: apply.Updated},
		"watch shows an older uid: created":     {before: obj("u0", "5"), after: obj("u1", "8"), prev: rec(true, "u0", "5"), want: apply.Created},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got, _ := apply.ClassifyRecorded(c.before, c.after, c.prev, "gitops"); got != c.want {
				t.Errorf("action = %s, want %s", got, c.want)
			}
		})
	}
}
