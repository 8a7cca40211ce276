package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	kcondition "github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestRefusedChildWordsMasked: a Service CR whose built Deployment the real apiserver
// refuses (an env var name with "=" in it, a value the apiserver echoes back quoted) is
// Stalled, reason Rejected, and its condition and its Warning Event carry the apiserver's
// words with the field path, never the echoed value nor a bare status code.
func TestRefusedChildWordsMasked(t *testing.T) {
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := startKinds(t, cfg)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	const ns, planted = "words-test", "planted-hunter2-value"
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	cr := serviceCR("leaky", false, nil)
	cr.SetNamespace(ns)
	if err := unstructured.SetNestedSlice(cr.Object, []any{map[string]any{"name": "TOKEN=" + planted, "value": "x"}}, "spec", "env"); err != nil {
		t.Fatal(err)
	}
	// the Namespace first: Apply fans out, and the CR's create would race its namespace
	for _, o := range []*unstructured.Unstructured{nsObj, cr} {
		if r := (&apply.Applier{Client: admin, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{o})[0]; r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), cr) })

	wantIn := func(what, msg string) {
		t.Helper()
		for _, w := range []string{"Deployment/" + ns + "/leaky: ", "the apiserver refused the apply: 422 Invalid", "env[0].name", "Invalid value"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %q lacks %q", what, msg, w)
			}
		}
		if strings.Contains(msg, planted) {
			t.Errorf("%s %q carries the value the apiserver echoed", what, msg)
		}
	}
	var stalled metav1.Condition
	poll(ctx, t, "leaky Stalled, Rejected", func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkService)
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "leaky"}, u); err != nil {
			return false, err.Error()
		}
		c, ok := conditionOf(u, kcondition.TypeStalled)
		stalled = c
		if raw, _ := json.Marshal(u.Object["status"]); strings.Contains(string(raw), planted) {
			t.Fatalf("status carries the echoed value: %s", raw)
		}
		return ok && c.Status == metav1.ConditionTrue && c.Reason == kcondition.ReasonRejected, fmt.Sprintf("Stalled=%+v", c)
	})
	t.Logf("Stalled: %s", stalled.Message)
	wantIn("Stalled message", stalled.Message)

	var note string
	poll(ctx, t, "a Rejected Event on leaky", func() (bool, string) {
		evs := &eventsv1.EventList{}
		if err := admin.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if strings.Contains(e.Note, planted) {
				t.Fatalf("Event %s/%s carries the echoed value: %q", e.Reason, e.Regarding.Name, e.Note)
			}
			if e.Regarding.Name == "leaky" && e.Reason == kcondition.ReasonRejected {
				note = e.Note
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
	t.Logf("Event: %s", note)
	wantIn("Event note", note)
}
