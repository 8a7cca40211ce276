package upgrade

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func dep(replicas *int32, gen, observed int64, st appsv1.DeploymentStatus) *appsv1.Deployment {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas}, Status: st}
	d.Generation, d.Status.ObservedGeneration = gen, observed
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "a", Image: "img:1"}, {Name: "b", Image: "side:1"}}
	return d
}

func TestDeploymentHealth(t *testing.T) {
	done := appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}
	cases := map[string]struct {
		d                 *appsv1.Deployment
		complete, healthy bool
	}{
		"rollout_complete_true_when_converged":               {dep(ptr.To[int32](2), 3, 3, done), true, true},
		"rollout_incomplete_when_observed_generation_behind": {dep(ptr.To[int32](2), 4, 3, done), false, false},
		"rollout_incomplete_when_old_replicas_linger": {dep(ptr.To[int32](2), 3, 3,
			appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}), false, false},
		"rollout_incomplete_when_unavailable": {dep(ptr.To[int32](2), 3, 3,
			appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}), false, false},
		"rollout_incomplete_when_no_status":        {dep(ptr.To[int32](2), 1, 0, appsv1.DeploymentStatus{}), false, false},
		"replicas_default_to_one":                  {dep(nil, 1, 1, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}), true, true},
		"deployment_unhealthy_when_scaled_to_zero": {dep(ptr.To[int32](0), 2, 2, appsv1.DeploymentStatus{}), true, false},
		"nil": {nil, false, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RolloutComplete(tc.d); got != tc.complete {
				t.Errorf("RolloutComplete = %v, want %v", got, tc.complete)
			}
			if got := DeploymentHealthy(tc.d); got != tc.healthy {
				t.Errorf("DeploymentHealthy = %v, want %v", got, tc.healthy)
			}
		})
	}
	if got := DeploymentImage(dep(nil, 0, 0, done)); got != "img:1" {
		t.Errorf("deployment_image_reads_first_container: %q", got)
	}
}

func testPod(phase corev1.PodPhase, ready bool, cs ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: cs}}
	p.Spec.Containers = []corev1.Container{{Name: "candidate", Image: "img:2"}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func waiting(reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "candidate", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func exited(code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "candidate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func TestBootOutcome(t *testing.T) {
	cases := map[string]struct {
		p    *corev1.Pod
		want Boot
	}{
		"boot_outcome_ready_when_ready_condition_true": {testPod(corev1.PodRunning, true), BootReady},
		"boot_outcome_failed_on_nonzero_exit":          {testPod(corev1.PodRunning, false, exited(3)), BootFailed},
		"boot_outcome_failed_on_pod_failed_phase":      {testPod(corev1.PodFailed, false), BootFailed},
		"boot_outcome_failed_on_image_pull_error":      {testPod(corev1.PodPending, false, waiting("ErrImagePull")), BootFailed},
		"boot_outcome_booting_while_starting":          {testPod(corev1.PodPending, false, waiting("ContainerCreating")), Booting},
		"boot_outcome_zero_exit_is_not_failed":         {testPod(corev1.PodSucceeded, false, exited(0)), Booting},
		"absent_pod_is_booting":                        {nil, Booting},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, msg := BootOutcome(tc.p)
			if got != tc.want {
				t.Errorf("BootOutcome = %s (%s), want %s", got, msg, tc.want)
			}
			if got == BootFailed && msg == "" {
				t.Error("a failure carries its reason")
			}
		})
	}
}

func TestCrashLooping(t *testing.T) {
	restarts := corev1.ContainerStatus{Name: "candidate", RestartCount: 3}
	if !PodCrashLooping(testPod(corev1.PodRunning, false, waiting("CrashLoopBackOff"))) {
		t.Error("crashlooping_on_backoff_reason")
	}
	if !PodCrashLooping(testPod(corev1.PodRunning, true, restarts)) {
		t.Error("crashlooping_on_high_restart_count")
	}
	if PodCrashLooping(testPod(corev1.PodRunning, true, corev1.ContainerStatus{Name: "candidate", RestartCount: 2})) {
		t.Error("not_crashlooping_when_healthy")
	}
	pods := []corev1.Pod{*testPod(corev1.PodRunning, false, waiting("CrashLoopBackOff"))}
	if !AnyCrashLooping(pods, "img:2") || AnyCrashLooping(pods, "img:1") {
		t.Error("AnyCrashLooping counts only pods running the image")
	}
}
