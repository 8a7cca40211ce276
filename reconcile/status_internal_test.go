package reconcile

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestStatusWrite: on a real apiserver, the status is applied under ManagerStatus at the
// resourceVersion it was computed from, so a writer holding an older CR (a stale
// ex-leader) is refused; conditions of another manager survive; a field the summary no
// longer sets is removed.
func TestStatusWrite(t *testing.T) {
	cfg := testbed.APIServer(t)
	const group = "status-write.example"
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	var svc []*apiextensionsv1.CustomResourceDefinition
	for i := range crds {
		if crds[i].Name == "services."+group {
			svc = append(svc, &crds[i])
		}
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: svc}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementCanonical, Kind: "Service"}]
	gvk := e.GroupVersionKind(group)
	// The CRD is established, but the apiserver's discovery may not list its group yet (a
	// loaded CI run once answered "unable to retrieve the complete list of server APIs"):
	// wait until a client maps the kind.
	var c client.Client
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		var err error
		if c, err = client.New(cfg, client.Options{}); err != nil {
			return false, nil
		}
		_, err = c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("%s never mapped: %v", gvk, err)
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(gvk)
	cr.SetNamespace("default")
	cr.SetName("web")
	if err := unstructured.SetNestedField(cr.Object, "ghcr.io/example/web", "spec", "image", "repository"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	stale := cr.DeepCopy()

	r := &KindReconciler{Client: c, Entry: e, Context: kinds.Context{APIGroup: group}}
	now := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	crashing := drive.Status{Phase: v1.PhaseCreating, ObservedGeneration: 1, Message: "pod web-1 container web: CrashLoopBackOff", Restarts: 3,
		Conditions: []metav1.Condition{
			{Type: drive.ConditionReady, Status: metav1.ConditionFalse, Reason: drive.ReasonNotReady, Message: "m", ObservedGeneration: 1, LastTransitionTime: now},
			{Type: drive.ConditionReconciling, Status: metav1.ConditionTrue, Reason: drive.ReasonNotReady, Message: "m", ObservedGeneration: 1, LastTransitionTime: now},
		}}
	if rv, err := r.writeStatus(ctx, cr, drive.Status{}, crashing, nil); err != nil || rv == "" {
		t.Fatalf("writeStatus = %q, %v, want written", rv, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(cr.Object, "status", "restarts"); got != 3 {
		t.Errorf("status.restarts = %d, want 3", got)
	}

	// another manager's condition, applied by that manager alone
	other := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Upgrading", "status": "True", "reason": "Rolling", "message": "m", "lastTransitionTime": now.UTC().Format(time.RFC3339)},
	}}}}
	other.SetGroupVersionKind(gvk)
	other.SetNamespace("default")
	other.SetName("web")
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("upgrade-test")); err != nil {
		t.Fatal(err)
	}

	t.Run("a stale writer is refused", func(t *testing.T) {
		patch, err := statusPatch(metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}, stale, crashing, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(kinds.ManagerStatus), client.ForceOwnership)
		if !apierrors.IsConflict(err) {
			t.Fatalf("apply at the creation resourceVersion: %v, want a conflict", err)
		}
		if rv, err := r.writeStatus(ctx, stale, drive.Status{}, crashing, nil); err != nil || rv != "" {
			t.Errorf("writeStatus on a conflict = %q, %v, want not written and nil (the change reconciles again)", rv, err)
		}
	})

	t.Run("ready: restarts removed, the other manager's condition kept", func(t *testing.T) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		ready := drive.Status{Phase: v1.PhaseRunning, ObservedGeneration: 1, Message: "1/1 replicas ready", ReadyReplicas: 1,
			Conditions: []metav1.Condition{{Type: drive.ConditionReady, Status: metav1.ConditionTrue, Reason: drive.ReasonAvailable, Message: "1/1 replicas ready", ObservedGeneration: 1, LastTransitionTime: now}}}
		if rv, err := r.writeStatus(ctx, cr, crashing, ready, nil); err != nil || rv == "" {
			t.Fatalf("writeStatus = %q, %v, want written", rv, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedInt64(cr.Object, "status", "restarts"); found {
			t.Error("status.restarts still set after the pods recovered")
		}
		types := map[string]string{}
		conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			types[m["type"].(string)] = m["status"].(string)
		}
		want := map[string]string{drive.ConditionReady: "True", "Upgrading": "True"}
		if len(types) != len(want) || types[drive.ConditionReady] != "True" || types["Upgrading"] != "True" {
			t.Errorf("conditions = %v, want %v (Reconciling dropped, Upgrading kept)", types, want)
		}
	})
}

// TestStatusDeclares: the status write keeps only the fields a Kind's status schema has
// (an SSA of an undeclared field fails the whole write).
func TestStatusDeclares(t *testing.T) {
	for _, c := range []struct {
		cr    any
		field string
		want  bool
	}{
		{&v1.Service{}, "readyReplicas", true},
		{&v1.Ingress{}, "readyReplicas", false},
		{&v1.LuxRuntime{}, "readyReplicas", false},
		{&v1.Ingress{}, "observedGeneration", true},
		{&v1.Service{}, "noSuchField", false},
	} {
		if got := statusDeclares(c.cr, c.field); got != c.want {
			t.Errorf("statusDeclares(%T, %s) = %v, want %v", c.cr, c.field, got, c.want)
		}
	}
}
