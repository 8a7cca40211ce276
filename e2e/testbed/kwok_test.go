package testbed_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/e2e/testbed"
)

func deployment(name string, replicas int32, podLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range podLabels {
		labels[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr.To(replicas),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name + ":1"}}},
			},
		},
	}
}

// TestKwokRollout proves the full control plane runs workloads: a Deployment becomes
// Available on the kwok node, and a pod labelled to crash-loop reports CrashLoopBackOff with
// a rising restartCount while its Deployment stays unavailable.
func TestKwokRollout(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("healthy", 3, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "healthy", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return available(d) && d.Status.ReadyReplicas == 3, nil
	})
	if err != nil {
		t.Fatalf("deployment healthy never became Available with 3 ready replicas: %v", err)
	}
	t.Logf("3-replica Deployment Available after %s", time.Since(start).Round(time.Millisecond))

	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("crashing", 1, map[string]string{testbed.CrashLoopLabel: "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []int32
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=crashing"})
		if err != nil || len(pods.Items) == 0 || len(pods.Items[0].Status.ContainerStatuses) == 0 {
			return false, err
		}
		st := pods.Items[0].Status.ContainerStatuses[0]
		if st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" {
			if len(seen) == 0 || seen[len(seen)-1] != st.RestartCount {
				seen = append(seen, st.RestartCount)
			}
		}
		return len(seen) >= 2, nil
	})
	if err != nil {
		t.Fatalf("crash-looping pod: restart counts seen in CrashLoopBackOff %v: %v", seen, err)
	}
	if seen[1] <= seen[0] {
		t.Errorf("restartCount did not rise: %v", seen)
	}
	d, err := cs.AppsV1().Deployments("default").Get(ctx, "crashing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if available(d) || d.Status.ReadyReplicas != 0 {
		t.Errorf("crash-looping deployment reports available=%v ready=%d, want unavailable with 0 ready", available(d), d.Status.ReadyReplicas)
	}
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue && d.Status.ObservedGeneration == d.Generation
		}
	}
	return false
}
