package condition_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
)

var gr = schema.GroupResource{Group: "hanzo.ai", Resource: "services"}

// TestClassOf: every error a controller meets has one class and reason.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		class  condition.Class
		reason string
	}{
		{"nil", nil, condition.Ready, ""},
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("no")), condition.Blocked, condition.ReasonForbidden},
		{"wrapped forbidden", fmt.Errorf("apply: %w", apierrors.NewForbidden(gr, "web", errors.New("no"))), condition.Blocked, condition.ReasonForbidden},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "hanzo.ai", Kind: "Service"}, "web", nil), condition.Terminal, condition.ReasonRejected},
		{"bad request", apierrors.NewBadRequest("malformed"), condition.Terminal, condition.ReasonRejected},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), condition.Transient, condition.ReasonError},
		{"timeout", apierrors.NewTimeoutError("slow", 1), condition.Transient, condition.ReasonError},
		{"network", context.DeadlineExceeded, condition.Transient, condition.ReasonError},
		{"classified terminal", condition.TerminalError(condition.ReasonInvalidSpec, errors.New("policy")), condition.Terminal, condition.ReasonInvalidSpec},
		{"classified wins over the apiserver's", condition.TransientError(condition.ReasonCloudError, apierrors.NewForbidden(gr, "web", errors.New("no"))), condition.Transient, condition.ReasonCloudError},
		{"wrapped classified", fmt.Errorf("step: %w", condition.BlockedError(condition.ReasonMachineTaken, errors.New("taken"))), condition.Blocked, condition.ReasonMachineTaken},
		{"tenancy", &kinds.TenancyError{Reason: kinds.ReasonOrgMismatch, Message: "acme is not beta"}, condition.Blocked, kinds.ReasonOrgMismatch},
		{"wrapped tenancy", fmt.Errorf("admit: %w", &kinds.TenancyError{Reason: kinds.ReasonNamespaceHasNoOrg}), condition.Blocked, kinds.ReasonNamespaceHasNoOrg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, reason := condition.ClassOf(tc.err)
			if c != tc.class || reason != tc.reason {
				t.Errorf("ClassOf = %s %q, want %s %q", c, reason, tc.class, tc.reason)
			}
		})
	}
	if condition.TerminalError("X", nil) != nil {
		t.Error("TerminalError(nil) is not nil")
	}
}

// TestConditionsAndRequeue: each class maps once to Ready, Stalled and Reconciling, and to
// when the controller looks again.
func TestConditionsAndRequeue(t *testing.T) {
	iv := condition.Intervals{Retry: 30 * time.Second, Progress: 10 * time.Second, Resync: 5 * time.Minute}
	for _, tc := range []struct {
		class                       condition.Class
		ready, stalled, reconciling bool
		after                       time.Duration
	}{
		{condition.Ready, true, false, false, 5 * time.Minute},
		{condition.Progressing, false, false, true, 10 * time.Second},
		{condition.Idle, false, false, false, 5 * time.Minute},
		{condition.Transient, false, false, true, 30 * time.Second},
		{condition.Blocked, false, true, false, 5 * time.Minute},
		{condition.Terminal, false, true, false, 0},
	} {
		t.Run(string(tc.class), func(t *testing.T) {
			t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			// the previous status holds every abnormal condition and a foreign one
			prev := []metav1.Condition{
				{Type: "Custom", Status: metav1.ConditionTrue, Reason: "Mine"},
				{Type: condition.TypeStalled, Status: metav1.ConditionTrue, Reason: "Old", LastTransitionTime: t0},
				{Type: condition.TypeReconciling, Status: metav1.ConditionTrue, Reason: "Old", LastTransitionTime: t0},
			}
			now := metav1.NewTime(t0.Add(time.Hour))
			v := condition.Verdict{Class: tc.class, Reason: "Why", Message: "because"}
			got := v.Conditions(prev, 7, now)
			if len(prev) != 3 || prev[1].Reason != "Old" {
				t.Fatal("Conditions modified prev")
			}
			r := meta.FindStatusCondition(got, condition.TypeReady)
			if r == nil || (r.Status == metav1.ConditionTrue) != tc.ready || r.Reason != "Why" || r.Message != "because" || r.ObservedGeneration != 7 {
				t.Errorf("Ready = %+v, want ready=%v", r, tc.ready)
			}
			for typ, want := range map[string]bool{condition.TypeStalled: tc.stalled, condition.TypeReconciling: tc.reconciling} {
				c := meta.FindStatusCondition(got, typ)
				switch {
				case want && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Why"):
					t.Errorf("%s = %+v, want True with reason Why", typ, c)
				case want && !c.LastTransitionTime.Equal(&t0):
					t.Errorf("%s moved its transition time though it stayed True", typ)
				case !want && c != nil:
					t.Errorf("%s present, want absent", typ)
				}
			}
			if meta.FindStatusCondition(got, "Custom") == nil {
				t.Error("a condition of another owner was dropped")
			}
			if a := tc.class.After(iv); a != tc.after {
				t.Errorf("After = %s, want %s", a, tc.after)
			}
			if b := tc.class.Backoff(iv); b {
				t.Error("Backoff with a retry interval")
			}
		})
	}
	if !condition.Transient.Backoff(condition.Intervals{}) || condition.Terminal.Backoff(condition.Intervals{}) {
		t.Error("Backoff: only a Transient class without a retry interval backs off")
	}
}

func TestOf(t *testing.T) {
	v := condition.Of(condition.BlockedError(condition.ReasonCredentialsError, errors.New("the Secret acme/reg is not found")))
	if v != (condition.Verdict{Class: condition.Blocked, Reason: condition.ReasonCredentialsError, Message: "the Secret acme/reg is not found"}) {
		t.Errorf("Of = %+v", v)
	}
	if v := condition.Of(nil); v.Class != condition.Ready || v.Message != "" {
		t.Errorf("Of(nil) = %+v", v)
	}
}

// TestReasons: every registered reason is a valid condition reason, and no name is
// registered twice.
func TestReasons(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`) // metav1.Condition's reason pattern
	seen := map[string]bool{}
	for _, r := range condition.Reasons {
		if !valid.MatchString(r) || len(r) > 1024 || r[0] < 'A' || r[0] > 'Z' {
			t.Errorf("reason %q is not an UpperCamelCase condition reason", r)
		}
		if seen[r] {
			t.Errorf("reason %q registered twice", r)
		}
		seen[r] = true
	}
}

func TestStatusApply(t *testing.T) {
	cr := &metav1.ObjectMeta{Namespace: "acme", Name: "web", ResourceVersion: "42", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
			{Manager: "universe-operator-status", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: "universe-operator-status", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		}}
	u, err := condition.StatusApply(schema.GroupVersionKind{Group: "hanzo.ai", Version: "v1", Kind: "ImageUpdate"}, cr,
		struct {
			Phase string `json:"phase"`
		}{"Running"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "ImageUpdate",
		"metadata": map[string]any{"namespace": "acme", "name": "web"}, "status": map[string]any{"phase": "Running"}}
	if fmt.Sprint(u.Object) != fmt.Sprint(want) {
		t.Errorf("StatusApply = %v, want %v (no labels, no resourceVersion)", u.Object, want)
	}
	if got := condition.LegacyStatusManagers(cr); fmt.Sprint(got) != "[operator universe-operator-status]" {
		t.Errorf("LegacyStatusManagers = %v, want the status's update managers", got)
	}
}

func TestDropPatch(t *testing.T) {
	live := []metav1.Condition{{Type: "Ready"}, {Type: "Custom"}, {Type: "Stalled"}, {Type: "Reconciling"}}
	p, err := condition.DropPatch(live, []metav1.Condition{{Type: "Ready"}, {Type: "Reconciling"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/status/conditions/2/type","value":"Stalled"},{"op":"remove","path":"/status/conditions/2"}]`
	if string(p) != want {
		t.Errorf("DropPatch = %s, want %s", p, want)
	}
	if p, _ := condition.DropPatch(live, live); p != nil {
		t.Errorf("DropPatch of nothing dropped = %s", p)
	}
	if p, _ := condition.DropPatch([]metav1.Condition{{Type: "Custom"}}, nil); p != nil {
		t.Errorf("DropPatch removes a condition it does not own: %s", p)
	}
}
