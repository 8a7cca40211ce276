package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	kcondition "github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestTerminalPhaseErrorStalls: a step after the apply that fails for a reason retrying
// cannot fix ends the reconcile Stalled with that reason. Here the operator runs as a user
// that may do everything but delete: turning a Service's autoscaling off makes prune's
// delete of the HPA Forbidden. Before, the status stayed as it was (Ready, no Stalled).
func TestTerminalPhaseErrorStalls(t *testing.T) {
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const user, ns = "kinds-no-delete", "stall-test"
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}},
	} {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	limited := rest.CopyConfig(cfg)
	limited.Impersonate = rest.ImpersonationConfig{UserName: user}
	logs := startKinds(t, limited)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})

	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	cr := serviceCR("web", true, nil)
	cr.SetNamespace(ns)
	// the Namespace first: Apply fans out, and the CR's create would race its namespace
	for _, o := range []*unstructured.Unstructured{nsObj, cr} {
		if r := (&apply.Applier{Client: admin, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{o})[0]; r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	// the other tests' operators watch every namespace of this apiserver: the CR goes with the test
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cr) })
	at := func(u *unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
		return u, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	hpa := func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkHPA)
		_, err := at(u, "web")
		return err
	}
	poll(ctx, t, "HPA web applied", func() (bool, string) { err := hpa(); return err == nil, fmt.Sprint(err) })

	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvkService)
	if _, err := at(live, "web"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"autoscaling":{"enabled":false}}}`))); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "web Stalled, Forbidden", func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkService)
		if _, err := at(u, "web"); err != nil {
			return false, err.Error()
		}
		c, ok := conditionOf(u, kcondition.TypeStalled)
		gen := u.GetGeneration()
		return ok && c.Status == metav1.ConditionTrue && c.Reason == kcondition.ReasonForbidden && c.ObservedGeneration == gen &&
			strings.Contains(c.Message, "HorizontalPodAutoscaler"), fmt.Sprintf("Stalled=%+v (generation %d)", c, gen)
	})
	if err := hpa(); err != nil {
		t.Errorf("the HPA is gone though its delete was forbidden: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvkService)
	if _, err := at(u, "web"); err != nil {
		t.Fatal(err)
	}
	if c, _ := readyCondition(u); c.Status != metav1.ConditionFalse || c.Reason != kcondition.ReasonForbidden {
		t.Errorf("Ready = %+v, want False Forbidden", c)
	}
}

// conditionOf finds the condition typ of an unstructured CR.
func conditionOf(u *unstructured.Unstructured, typ string) (metav1.Condition, bool) {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		m, _ := r.(map[string]any)
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil && c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}
