package reconcile_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile"
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
		want          reconcile.Action
		drifted       []string
	}{
		"absent before is a create": {
			before: nil, after: meta("5", entry("gitops", replicas)), want: reconcile.Created,
		},
		"same resourceVersion is in sync": {
			before: meta("5", entry("gitops", replicas)), after: meta("5", entry("gitops", replicas)), want: reconcile.InSync,
		},
		"a new resourceVersion names who had taken our fields": {
			before: meta("5", entry("gitops", image), entry("kubectl-edit", replicas), entry("hpa", `{"f:metadata":{}}`)),
			after:  meta("6", entry("gitops", both), entry("hpa", `{"f:metadata":{}}`)),
			want:   reconcile.Updated, drifted: []string{"kubectl-edit"},
		},
		"an apply owning no field changed nothing (before-first-apply bookkeeping)": {
			before: meta("5"), after: meta("6", entry("before-first-apply", `{"f:metadata":{"f:labels":{}}}`)), want: reconcile.InSync,
		},
		"an update nobody drifted names nobody": {
			before: meta("5", entry("gitops", image)), after: meta("6", entry("gitops", both)), want: reconcile.Updated,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, drifted := reconcile.Classify(c.before, c.after, "gitops")
			if got != c.want {
				t.Errorf("action = %s, want %s", got, c.want)
			}
			if diff := cmp.Diff(c.drifted, drifted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drifted by (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyKnown: one request per object, classified from what the caller knew.
func TestApplyKnown(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &reconcile.Applier{Client: c, Manager: reconcile.ManagerGitOps}
	cm := read(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: known, namespace: default}
data: {k: v}
`)[0]
	res, live := a.ApplyKnown(ctx, cm, nil)
	if res.Action != reconcile.Created || live == nil || live.GetResourceVersion() == "" {
		t.Fatalf("first apply: %+v, want Created with the stored object", res)
	}
	res, again := a.ApplyKnown(ctx, cm, live)
	if res.Action != reconcile.InSync || again.GetResourceVersion() != live.GetResourceVersion() {
		t.Fatalf("second apply: %+v (rv %s → %s), want InSync", res, live.GetResourceVersion(), again.GetResourceVersion())
	}
	if err := c.Patch(ctx, again.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"k":"edited"}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	edited := again.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(edited), edited); err != nil {
		t.Fatal(err)
	}
	res, _ = a.ApplyKnown(ctx, cm, edited)
	if diff := cmp.Diff(reconcile.Result{Object: reconcile.RefOf(cm), Action: reconcile.Updated, DriftedBy: []string{"kubectl-edit"}}, res); diff != "" {
		t.Errorf("apply after an edit (-want +got):\n%s", diff)
	}
}
