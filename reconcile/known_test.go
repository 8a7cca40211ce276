package reconcile_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestApplyKnown: one request per object, classified from what the caller knew.
func TestApplyKnown(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &apply.Applier{Client: c, Manager: kinds.ManagerGitOps}
	cm := read(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: known, namespace: default}
data: {k: v}
`)[0]
	res, live := a.ApplyKnown(ctx, cm, nil)
	if res.Action != apply.Created || live == nil || live.GetResourceVersion() == "" {
		t.Fatalf("first apply: %+v, want Created with the stored object", res)
	}
	res, again := a.ApplyKnown(ctx, cm, live)
	if res.Action != apply.InSync || again.GetResourceVersion() != live.GetResourceVersion() {
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
	if diff := cmp.Diff(apply.Result{Object: apply.RefOf(cm), Action: apply.Updated, DriftedBy: []string{"kubectl-edit"}}, res); diff != "" {
		t.Errorf("apply after an edit (-want +got):\n%s", diff)
	}
}
