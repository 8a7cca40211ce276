package drive

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

type cond struct {
	Status metav1.ConditionStatus
	Reason string
}

func conds(s Status) map[string]cond {
	m := map[string]cond{}
	for _, c := range s.Conditions {
		m[c.Type] = cond{c.Status, c.Reason}
	}
	return m
}

func TestSummarize(t *testing.T) {
	current := []Child{{Ref: "Deployment/ns/web", Status: kstatus.CurrentStatus}, {Ref: "Service/ns/web", Status: kstatus.CurrentStatus}}
	cases := map[string]struct {
		in        Observation
		phase     v1.Phase
		conds     map[string]cond
		message   string
		readyReps int32
		restarts  int32
	}{
		"all children current and replicas ready": {
			in:        Observation{Generation: 3, Children: current, Workload: &Replicas{Desired: 2, Ready: 2}},
			phase:     v1.PhaseRunning,
			conds:     map[string]cond{"Ready": {"True", ReasonAvailable}},
			message:   "2/2 replicas ready",
			readyReps: 2,
		},
		"a later step's lasting error: Stalled with its reason, over the children's state": {
			in: Observation{Generation: 2, Children: current, Workload: &Replicas{Desired: 2, Ready: 2},
				PhaseErr: fmt.Errorf("delete HorizontalPodAutoscaler/ns/web: %w", apierrors.NewForbidden(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "web", errors.New("no delete")))},
			phase:     v1.PhaseDegraded,
			conds:     map[string]cond{"Ready": {"False", ReasonForbidden}, "Stalled": {"True", ReasonForbidden}},
			message:   `delete HorizontalPodAutoscaler/ns/web: horizontalpodautoscalers.autoscaling "web" is forbidden: no delete`,
			readyReps: 2,
		},
		"a later step's unnamed error is ReconcileFailed": {
			in:      Observation{Generation: 2, Children: current, PhaseErr: condition.TerminalError("", errors.New("status of web: bad json"))},
			phase:   v1.PhaseDegraded,
			conds:   map[string]cond{"Ready": {"False", ReasonReconcileFailed}, "Stalled": {"True", ReasonReconcileFailed}},
			message: "status of web: bad json",
		},
		"rolling out: Reconciling, not Stalled": {
			in: Observation{Generation: 1, Workload: &Replicas{Desired: 2},
				Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.InProgressStatus, Message: "Available: 0/2"}}},
			phase:   v1.PhaseCreating,
			conds:   map[string]cond{"Ready": {"False", ReasonNotReady}, "Reconciling": {"True", ReasonNotReady}},
			message: "Deployment/ns/web: Available: 0/2",
		},
		"crash loop is named in the message": {
			in: Observation{Generation: 1, Workload: &Replicas{Desired: 2, Ready: 1}, PodProblem: "pod web-1 container web: CrashLoopBackOff", Restarts: 4,
				Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.InProgressStatus, Message: "Available: 1/2"}}},
			phase:     v1.PhaseDegraded,
			conds:     map[string]cond{"Ready": {"False", ReasonNotReady}, "Reconciling": {"True", ReasonNotReady}},
			message:   "Deployment/ns/web: Available: 1/2; pod web-1 container web: CrashLoopBackOff",
			readyReps: 1,
			restarts:  4,
		},
		"a failed child stalls": {
			in: Observation{Generation: 1, Workload: &Replicas{Desired: 1},
				Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.FailedStatus, Message: "Progress deadline exceeded"}}},
			phase:   v1.PhaseCreating,
			conds:   map[string]cond{"Ready": {"False", ReasonFailed}, "Stalled": {"True", ReasonFailed}},
			message: "Deployment/ns/web: Progress deadline exceeded",
		},
		"unknown role halts Degraded and Stalled": {
			in:      Observation{Generation: 2, Halt: &kinds.Halt{Phase: v1.PhaseDegraded, Reason: kinds.ReasonUnknownRole, Message: `role "blender" is not known`}},
			phase:   v1.PhaseDegraded,
			conds:   map[string]cond{"Ready": {"False", kinds.ReasonUnknownRole}, "Stalled": {"True", kinds.ReasonUnknownRole}},
			message: `role "blender" is not known`,
		},
		"delegated role is Pending, not Stalled": {
			in:      Observation{Generation: 2, Halt: &kinds.Halt{Phase: v1.PhasePending, Reason: kinds.ReasonDelegated, Message: "materialized by the gateway controller"}},
			phase:   v1.PhasePending,
			conds:   map[string]cond{"Ready": {"False", kinds.ReasonDelegated}},
			message: "materialized by the gateway controller",
		},
		"build error stalls": {
			in:      Observation{Generation: 4, BuildErr: errors.New("spec.storage.size: invalid quantity")},
			phase:   v1.PhaseDegraded,
			conds:   map[string]cond{"Ready": {"False", ReasonBuildFailed}, "Stalled": {"True", ReasonBuildFailed}},
			message: "spec.storage.size: invalid quantity",
		},
		"denied stalls, naming the grant": {
			in:      Observation{Generation: 1, Denied: []string{"forbidden: grant patch on Deployment", "forbidden: grant patch on Service"}},
			phase:   v1.PhaseDegraded,
			conds:   map[string]cond{"Ready": {"False", ReasonForbidden}, "Stalled": {"True", ReasonForbidden}},
			message: "forbidden: grant patch on Deployment (and 1 more)",
		},
		"an invalid child stalls": {
			in:      Observation{Generation: 1, Rejected: []string{"Deployment/ns/web: spec.template.spec.containers[0].name: Invalid value"}},
			phase:   v1.PhaseDegraded,
			conds:   map[string]cond{"Ready": {"False", ReasonRejected}, "Stalled": {"True", ReasonRejected}},
			message: "Deployment/ns/web: spec.template.spec.containers[0].name: Invalid value",
		},
		"a transient apply failure keeps reconciling": {
			in:      Observation{Generation: 1, Failed: []string{"Deployment/ns/web: conflict"}},
			phase:   v1.PhaseCreating,
			conds:   map[string]cond{"Ready": {"False", ReasonApplyFailed}, "Reconciling": {"True", ReasonApplyFailed}},
			message: "Deployment/ns/web: conflict",
		},
		"no workload: ready when every child is current": {
			in:      Observation{Generation: 1, Children: []Child{{Ref: "Ingress/ns/edge", Status: kstatus.CurrentStatus}}},
			phase:   v1.PhaseRunning,
			conds:   map[string]cond{"Ready": {"True", ReasonAvailable}},
			message: "1 objects applied and current",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.in.Now = t0
			got := Summarize(tc.in)
			if got.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.phase)
			}
			if diff := cmp.Diff(tc.conds, conds(got)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if got.Message != tc.message {
				t.Errorf("message = %q, want %q", got.Message, tc.message)
			}
			if got.ReadyReplicas != tc.readyReps || got.ObservedGeneration != tc.in.Generation {
				t.Errorf("readyReplicas/observedGeneration = %d/%d, want %d/%d", got.ReadyReplicas, got.ObservedGeneration, tc.readyReps, tc.in.Generation)
			}
			if got.Restarts != tc.restarts {
				t.Errorf("restarts = %d, want %d", got.Restarts, tc.restarts)
			}
			for _, c := range got.Conditions {
				if strings.Contains(c.Message, "restarts") {
					t.Errorf("condition %s message carries a restart count: %q", c.Type, c.Message)
				}
			}
		})
	}
}

// TestSummarizeTransitions: lastTransitionTime moves only when a condition flips, and the
// abnormal-true conditions disappear once false, so a converged CR's status stops changing.
func TestSummarizeTransitions(t *testing.T) {
	progressing := Observation{Generation: 1, Now: t0, Workload: &Replicas{Desired: 1},
		Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.InProgressStatus}}}
	s1 := Summarize(progressing)

	progressing.Previous, progressing.Now = s1.Conditions, t1
	s2 := Summarize(progressing)
	if !Equal(s1, s2) {
		t.Errorf("same observation a minute later changed the status:\n%+v\n%+v", s1, s2)
	}

	done := Observation{Generation: 1, Now: t1, Previous: s2.Conditions, Workload: &Replicas{Desired: 1, Ready: 1},
		Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.CurrentStatus}}}
	s3 := Summarize(done)
	if _, ok := conds(s3)["Reconciling"]; ok {
		t.Errorf("Reconciling still present once ready: %+v", s3.Conditions)
	}
	for _, c := range s3.Conditions {
		if c.Type == ConditionReady && !c.LastTransitionTime.Equal(&t1) {
			t.Errorf("Ready flipped to True but lastTransitionTime = %v, want %v", c.LastTransitionTime, t1)
		}
	}
}

func TestPodProblem(t *testing.T) {
	waiting := func(name, reason string, restarts int32) corev1.Pod {
		p := corev1.Pod{}
		p.Name = name
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
		return p
	}
	cases := map[string]struct {
		pods []corev1.Pod
		want Problem
	}{
		"none":               {want: Problem{}},
		"container creating": {pods: []corev1.Pod{waiting("a", "ContainerCreating", 0)}, want: Problem{}},
		"crash loop":         {pods: []corev1.Pod{waiting("b", "CrashLoopBackOff", 3)}, want: Problem{"pod b container app: CrashLoopBackOff", 3}},
		"first by name wins": {pods: []corev1.Pod{waiting("z", "CrashLoopBackOff", 1), waiting("c", "ImagePullBackOff", 0)}, want: Problem{"pod c container app: ImagePullBackOff", 0}},
		"running between back-offs": {pods: []corev1.Pod{func() corev1.Pod {
			p := corev1.Pod{}
			p.Name = "e"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 5,
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
			return p
		}()}, want: Problem{"pod e container app: CrashLoopBackOff, last exit code 1 (Error)", 5}},
		"in back-off after a crash: the same message": {pods: []corev1.Pod{func() corev1.Pod {
			p := waiting("e", "CrashLoopBackOff", 6)
			p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
			return p
		}()}, want: Problem{"pod e container app: CrashLoopBackOff, last exit code 1 (Error)", 6}},
		"healthy pod is skipped": {pods: []corev1.Pod{{}, waiting("d", "ErrImagePull", 0)}, want: Problem{"pod d container app: ErrImagePull", 0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodProblem(tc.pods); got != tc.want {
				t.Errorf("PodProblem = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCrashLoopKeepsConditions: a container that restarts again changes status.restarts
// only; the conditions (and the message) stay byte-identical, so a crash loop does not
// rewrite them on every requeue.
func TestCrashLoopKeepsConditions(t *testing.T) {
	pod := func(restarts int32) corev1.Pod {
		p := corev1.Pod{}
		p.Name = "web-1"
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
		return p
	}
	observe := func(restarts int32, previous []metav1.Condition, now metav1.Time) Status {
		p := PodProblem([]corev1.Pod{pod(restarts)})
		return Summarize(Observation{Generation: 1, Workload: &Replicas{Desired: 1}, PodProblem: p.Message, Restarts: p.Restarts,
			Children: []Child{{Ref: "Deployment/ns/web", Status: kstatus.InProgressStatus, Message: "Available: 0/1"}},
			Previous: previous, Now: now})
	}
	first := observe(3, nil, t0)
	second := observe(4, first.Conditions, t1)
	if diff := cmp.Diff(first.Conditions, second.Conditions); diff != "" {
		t.Errorf("conditions changed with the restart count (-first +second):\n%s", diff)
	}
	if first.Message != second.Message {
		t.Errorf("message changed with the restart count: %q then %q", first.Message, second.Message)
	}
	if first.Restarts != 3 || second.Restarts != 4 {
		t.Errorf("restarts = %d then %d, want 3 then 4", first.Restarts, second.Restarts)
	}
	if Equal(first, second) {
		t.Error("Equal ignores the restart count; the new count would never be written")
	}
}
