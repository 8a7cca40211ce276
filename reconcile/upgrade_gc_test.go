package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/upgrade"
)

// TestPreflightGC runs the orphan collector against a real apiserver: within the grace window
// nothing goes; past it, a superseded pre-flight, one whose owner has nothing in flight and
// one whose owner is gone are deleted, while the current pre-flight and one whose owner cannot
// be read are kept (fail-closed).
func TestPreflightGC(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	installSnapshotCRDs(t, cfg)
	ctx := context.Background()
	const ns = "gc-test"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	mkCR := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"image": map[string]any{"repository": "ghcr.io/x/" + name, "tag": "v1"}}}}
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	inflight, idle := mkCR("inflight"), mkCR("idle")
	const current, old = "ghcr.io/x/inflight:v2", "ghcr.io/x/inflight:v1b"
	status := []byte(`{"status":{"upgrade":{"targetImage":"` + current + `","phase":"Preflighting"}}}`)
	if err := c.Status().Patch(ctx, inflight, client.RawPatch(types.MergePatchType, status)); err != nil {
		t.Fatal(err)
	}
	ref := func(u *unstructured.Unstructured) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), UID: u.GetUID()}
	}
	mk := func(name, owner, target string, r metav1.OwnerReference, snapshot bool) client.Object {
		meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: upgrade.Labels(owner, target), OwnerReferences: []metav1.OwnerReference{r}}
		var o client.Object = &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}
		if snapshot {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"source": map[string]any{"persistentVolumeClaimName": owner + "-app-db"}}}}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: upgrade.SnapshotGroup, Version: "v1", Kind: "VolumeSnapshot"})
			u.SetName(name)
			u.SetNamespace(ns)
			u.SetLabels(meta.Labels)
			u.SetOwnerReferences(meta.OwnerReferences)
			o = u
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return o
	}
	gone := metav1.OwnerReference{APIVersion: group + "/v1", Kind: "Service", Name: "gone", UID: "00000000-0000-0000-0000-000000000001"}
	unreadable := metav1.OwnerReference{APIVersion: "nope.example/v1", Kind: "Nope", Name: "x", UID: "00000000-0000-0000-0000-000000000002"}
	keep := []client.Object{
		mk("current", "inflight", current, ref(inflight), false),
		mk("current-snap", "inflight", current, ref(inflight), true),
		mk("unreadable-owner", "x", current, unreadable, false),
	}
	drop := []client.Object{
		mk("superseded", "inflight", old, ref(inflight), false),
		mk("superseded-snap", "inflight", old, ref(inflight), true),
		mk("idle-owner", "idle", "ghcr.io/x/idle:v2", ref(idle), false),
		mk("gone-owner", "gone", "ghcr.io/x/gone:v2", gone, true),
	}
	now := time.Now()
	gc := &reconcile.PreflightGC{Client: c, Grace: time.Hour, Now: func() time.Time { return now }, Log: logr.Discard()}
	if n := gc.Collect(ctx); n != 0 {
		t.Errorf("within the grace window %d resources were deleted", n)
	}
	now = now.Add(2 * time.Hour)
	if n := gc.Collect(ctx); n != len(drop) {
		t.Errorf("past the grace window %d deleted, want %d", n, len(drop))
	}
	exists := func(o client.Object) bool {
		cp := o.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(o), cp)
		return err == nil && cp.GetDeletionTimestamp() == nil
	}
	for _, o := range keep {
		if !exists(o) {
			t.Errorf("%s was collected; it must be kept", o.GetName())
		}
	}
	for _, o := range drop {
		if exists(o) {
			t.Errorf("%s was kept; it is an orphan", o.GetName())
		}
	}
}
