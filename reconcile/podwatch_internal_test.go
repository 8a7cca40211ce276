package reconcile

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/upgrade"
)

func podWith(labels map[string]string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: labels},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img:v2"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: statuses}}
}

var (
	csRunning = corev1.ContainerStatus{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	inBackOff = corev1.ContainerStatus{Name: "app", RestartCount: 1, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
	restarted = corev1.ContainerStatus{Name: "app", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
)

func TestUpgradeOwner(t *testing.T) {
	for name, tc := range map[string]struct {
		labels map[string]string
		want   string
	}{
		"a Deployment's pod":                {map[string]string{kinds.LabelInstance: "api", kinds.LabelName: "api"}, "api"},
		"a pre-flight pod":                  {map[string]string{upgrade.LabelPreflightOf: "api", upgrade.LabelPreflightTarget: "h"}, "api"},
		"pre-flight wins over the instance": {map[string]string{upgrade.LabelPreflightOf: "api", kinds.LabelInstance: "other"}, "api"},
		"neither":                           {map[string]string{kinds.LabelManagedBy: kinds.ManagedBy}, ""},
		"no labels":                         {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := upgradeOwner(tc.labels); got != tc.want {
				t.Errorf("upgradeOwner(%v) = %q, want %q", tc.labels, got, tc.want)
			}
		})
	}
}

func TestPodHealthMoved(t *testing.T) {
	ready := podWith(nil, csRunning)
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	failed := podWith(nil)
	failed.Status.Phase = corev1.PodFailed
	for name, tc := range map[string]struct {
		old, new *corev1.Pod
		want     bool
	}{
		"running → CrashLoopBackOff":        {podWith(nil, csRunning), podWith(nil, inBackOff), true},
		"CrashLoopBackOff → running again":  {podWith(nil, inBackOff), podWith(nil, restarted), true},
		"running → running (a label moved)": {podWith(nil, csRunning), podWith(map[string]string{"x": "y"}, csRunning), false},
		"booting → Ready (pre-flight)":      {podWith(nil, csRunning), ready, true},
		"booting → Failed (pre-flight)":     {podWith(nil), failed, true},
		"restart count below the threshold": {podWith(nil, csRunning), podWith(nil, restarted), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := podHealthMoved.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("update passes = %v, want %v", got, tc.want)
			}
		})
	}
	if podHealthMoved.Create(event.CreateEvent{Object: podWith(nil)}) {
		t.Error("a booting pod's creation passes")
	}
	if !podHealthMoved.Create(event.CreateEvent{Object: podWith(nil, inBackOff)}) {
		t.Error("a crash-looping pod's creation (a cache filled after a restart) does not pass")
	}
	if podHealthMoved.Delete(event.DeleteEvent{Object: podWith(nil, inBackOff)}) {
		t.Error("a deletion passes")
	}
}

// TestUpgradePodOnlyWhileInFlight: a pod event reaches only a CR of this process whose
// upgrade its pods decide; any other costs no reconcile.
func TestUpgradePodOnlyWhileInFlight(t *testing.T) {
	r := &KindReconciler{}
	cr := &metav1.ObjectMeta{Namespace: "ns", Name: "api", UID: types.UID("u1")}
	pod := podWith(map[string]string{kinds.LabelInstance: "api"}, inBackOff)
	if got := r.upgradePod(context.Background(), pod); len(got) != 0 {
		t.Errorf("a CR never reconciled here: %v", got)
	}
	m := r.memory.of(cr)
	if got := r.upgradePod(context.Background(), pod); len(got) != 0 {
		t.Errorf("a CR with nothing in flight: %v", got)
	}
	m.upgrading.Store(true)
	got := r.upgradePod(context.Background(), pod)
	if len(got) != 1 || got[0].NamespacedName != (types.NamespacedName{Namespace: "ns", Name: "api"}) {
		t.Errorf("a CR Rolling: %v, want ns/api", got)
	}
	other := podWith(map[string]string{kinds.LabelInstance: "web"}, inBackOff)
	if got := r.upgradePod(context.Background(), other); len(got) != 0 {
		t.Errorf("another CR's pod: %v", got)
	}
	for _, p := range []upgrade.Phase{upgrade.Preflighting, upgrade.Rolling} {
		if !watchesPods(p) {
			t.Errorf("%s is not decided by its pods", p)
		}
	}
	for _, p := range []upgrade.Phase{upgrade.Stable, upgrade.RollingBack, upgrade.Failed} {
		if watchesPods(p) {
			t.Errorf("%s wakes on pods", p)
		}
	}
}
