package reconcile

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/drive"
)

var (
	grDeploy   = schema.GroupResource{Group: "apps", Resource: "deployments"}
	errInvalid = apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil)
	errDenied  = apierrors.NewForbidden(grDeploy, "web", errors.New("no grant"))
	errBusy    = apierrors.NewTooManyRequests("slow down", 1)
	errConfl   = apierrors.NewConflict(grDeploy, "web", errors.New("stale"))
)

func TestClassOf(t *testing.T) {
	cases := map[string]struct {
		err  error
		want ErrorClass
	}{
		"invalid object (schema, immutable field)": {errInvalid, Invalid},
		"malformed request":                        {apierrors.NewBadRequest("bad"), Invalid},
		"forbidden":                                {errDenied, Forbidden},
		"wrapped forbidden":                        {fmt.Errorf("list pods: %w", errDenied), Forbidden},
		"conflict":                                 {errConfl, Transient},
		"throttled":                                {errBusy, Transient},
		"timeout":                                  {apierrors.NewServerTimeout(grDeploy, "patch", 1), Transient},
		"network":                                  {fmt.Errorf("get: %w", errors.New("connection refused")), Transient},
		"already terminal":                         {TerminalError(errors.New("cannot encode")), Invalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ClassOf(tc.err); got != tc.want {
				t.Errorf("ClassOf(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	ref := func(name string) ObjRef {
		return ObjRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: name}
	}
	cases := map[string]struct {
		results []Result
		want    Outcome
		clean   bool
	}{
		"all applied": {
			results: []Result{{Object: ref("a"), Action: Created}, {Object: ref("b"), Action: Updated}, {Object: ref("c"), Action: InSync}},
			clean:   true,
		},
		"one of each refusal, in order": {
			results: []Result{
				{Object: ref("a"), Action: Denied, Err: errDenied, Message: "forbidden: grant"},
				{Object: ref("b"), Action: Failed, Err: errInvalid, Message: "invalid"},
				{Object: ref("c"), Action: Failed, Err: errBusy, Message: "slow down"},
				{Object: ref("d"), Action: InSync},
			},
			want: Outcome{Denied: []string{"Deployment/ns/a: forbidden: grant"}, Rejected: []string{"Deployment/ns/b: invalid"},
				Failed: []string{"Deployment/ns/c: slow down"}},
		},
		"conflicts are retried": {
			results: []Result{{Object: ref("a"), Action: Failed, Err: errConfl, Message: "stale"}},
			want:    Outcome{Failed: []string{"Deployment/ns/a: stale"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := outcome(tc.results)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got.Clean() != tc.clean {
				t.Errorf("Clean() = %v, want %v", got.Clean(), tc.clean)
			}
		})
	}
}

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
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: ManagerKinds, Operation: metav1.ManagedFieldsOperationApply}})
		return u
	}
	by := func(u *unstructured.Unstructured, manager string, op metav1.ManagedFieldsOperationType, sub string) *unstructured.Unstructured {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: op, Subresource: sub}})
		return u
	}
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, RefOf(o).String())
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
			live: []*unstructured.Unstructured{by(obj("v1", "ConfigMap", "web-x", owner, true), ManagerKinds, metav1.ManagedFieldsOperationUpdate, "")},
		},
		"our manager applied only its status: kept": {
			live: []*unstructured.Unstructured{by(obj("v1", "ConfigMap", "web-y", owner, true), ManagerKinds, metav1.ManagedFieldsOperationApply, "status")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := make([]unstructured.Unstructured, len(tc.live))
			for i, o := range tc.live {
				live[i] = *o
			}
			if diff := cmp.Diff(tc.want, names(prunable(desired, live, owner, ManagerKinds))); diff != "" {
				t.Errorf("prunable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNext(t *testing.T) {
	status := func(conds ...metav1.Condition) drive.Status { return drive.Status{Conditions: conds} }
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	ready := cond(drive.ConditionReady, metav1.ConditionTrue, drive.ReasonAvailable)
	notReady := func(reason string) metav1.Condition { return cond(drive.ConditionReady, metav1.ConditionFalse, reason) }
	cases := map[string]struct {
		status drive.Status
		out    Outcome
		want   time.Duration
	}{
		"ready: wait for a change":              {status(ready), Outcome{}, 0},
		"rolling out: look again":               {status(notReady(drive.ReasonNotReady), cond(drive.ConditionReconciling, metav1.ConditionTrue, drive.ReasonNotReady)), Outcome{}, requeueProgressing},
		"transient apply failure: retry":        {status(notReady(drive.ReasonApplyFailed), cond(drive.ConditionReconciling, metav1.ConditionTrue, drive.ReasonApplyFailed)), Outcome{Failed: []string{"x"}}, requeueApplyFailed},
		"stalled (invalid): no requeue":         {status(notReady(drive.ReasonRejected), cond(drive.ConditionStalled, metav1.ConditionTrue, drive.ReasonRejected)), Outcome{Rejected: []string{"x"}}, 0},
		"stalled with a transient one: retry":   {status(notReady(drive.ReasonForbidden), cond(drive.ConditionStalled, metav1.ConditionTrue, drive.ReasonForbidden)), Outcome{Denied: []string{"x"}, Failed: []string{"y"}}, requeueApplyFailed},
		"halted, Pending (delegated): no retry": {status(notReady("Delegated")), Outcome{}, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, why := next(tc.status, tc.out)
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: tc.want}, got); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
			if why == "" {
				t.Error("next gives no reason")
			}
		})
	}
}
