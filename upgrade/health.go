package upgrade

import (
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// CrashRestartThreshold is the restart count at which a container counts as crash-looping.
const CrashRestartThreshold = 3

// terminalWaiting are the waiting reasons a pod does not recover from by itself.
var terminalWaiting = []string{
	"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError",
}

// RolloutComplete: the controller has observed the current generation, every replica is
// updated, no old replica lingers and every replica is available (reference §5).
func RolloutComplete(d *appsv1.Deployment) bool {
	if d == nil {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration == 0 && s.Replicas == 0 && s.UpdatedReplicas == 0 && s.AvailableReplicas == 0 {
		return false // no status yet
	}
	if d.Generation != 0 && s.ObservedGeneration < d.Generation {
		return false
	}
	return s.UpdatedReplicas >= want && s.Replicas <= s.UpdatedReplicas && s.AvailableReplicas >= want
}

// DeploymentHealthy is the one health predicate of the upgrade machine: more than zero
// replicas wanted and the rollout complete.
func DeploymentHealthy(d *appsv1.Deployment) bool {
	if d == nil || (d.Spec.Replicas != nil && *d.Spec.Replicas <= 0) {
		return false
	}
	return RolloutComplete(d)
}

// DeploymentImage is the image of the pod template's first container.
func DeploymentImage(d *appsv1.Deployment) string {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// BootOutcome of a pre-flight pod (restartPolicy Never), with the reason of a failure: Failed
// on phase Failed, a non-zero exit or a terminal waiting reason; Ready on the Ready condition;
// Booting otherwise (an exit 0 without Ready stays Booting until the deadline).
func BootOutcome(p *corev1.Pod) (Boot, string) {
	if p == nil {
		return Booting, ""
	}
	if p.Status.Phase == corev1.PodFailed {
		msg := "pod failed"
		if p.Status.Reason != "" {
			msg += ": " + p.Status.Reason
		}
		return BootFailed, msg
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return BootFailed, "container " + cs.Name + " exited " + strconv.Itoa(int(t.ExitCode)) + reasonSuffix(t.Reason)
		}
		if w := cs.State.Waiting; w != nil && slices.Contains(terminalWaiting, w.Reason) {
			return BootFailed, "container " + cs.Name + " " + w.Reason
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return BootReady, ""
		}
	}
	return Booting, ""
}

// PodCrashLooping: a container restarted CrashRestartThreshold times or waits on a terminal
// reason.
func PodCrashLooping(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount >= CrashRestartThreshold {
			return true
		}
		if w := cs.State.Waiting; w != nil && slices.Contains(terminalWaiting, w.Reason) {
			return true
		}
	}
	return false
}

// AnyCrashLooping is true when a pod whose first container runs image crash-loops.
func AnyCrashLooping(pods []corev1.Pod, image string) bool {
	for i := range pods {
		p := &pods[i]
		if len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == image && PodCrashLooping(p) {
			return true
		}
	}
	return false
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}
