package reconcile

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/upgrade"
)

// childEntries are a Deployment's managedFields as the apiserver keeps them: our apply,
// the Deployment controller's annotation and its status, a kubectl scale.
func childEntries() []metav1.ManagedFieldsEntry {
	fields := metav1.NewFieldsV1
	return []metav1.ManagedFieldsEntry{
		{Manager: kinds.ManagerKinds, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: fields(`{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{}}}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: fields(`{"f:status":{"f:availableReplicas":{},"f:conditions":{}}}`)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling/v1", Subresource: "scale",
			FieldsType: "FieldsV1", FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
	}
}

func childDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "7", ManagedFields: childEntries(),
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}},
		Spec:   appsv1.DeploymentSpec{Replicas: new(int32(2))},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	return d
}

// TestTrimChild: a child in the Owns cache loses only the managedFields of its status;
// what reads managedFields there — our fingerprint (childStale), prune's AppliedBy, the
// drifting managers and the other writers — reads the same, typed or unstructured, and the
// rest of the object is untouched.
func TestTrimChild(t *testing.T) {
	typed := childDeployment()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(childDeployment())
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range map[string]metav1.Object{"typed": typed, "unstructured": &unstructured.Unstructured{Object: raw}} {
		t.Run(name, func(t *testing.T) {
			before := deepCopy(t, obj)
			out, err := TrimChild(obj)
			if err != nil {
				t.Fatal(err)
			}
			after := out.(metav1.Object)
			var managers []string
			for _, e := range after.GetManagedFields() {
				managers = append(managers, e.Manager+"/"+e.Subresource)
			}
			if want := []string{kinds.ManagerKinds + "/", "kube-controller-manager/", "kubectl/scale"}; !cmp.Equal(managers, want) {
				t.Errorf("managedFields kept: %v, want %v", managers, want)
			}
			if a, b := apply.Fingerprint(before, kinds.ManagerKinds), apply.Fingerprint(after, kinds.ManagerKinds); a != b {
				t.Errorf("our fingerprint moved: %s, then %s", a, b)
			}
			if !apply.AppliedBy(after, kinds.ManagerKinds) {
				t.Error("AppliedBy: false after the trim")
			}
			if a, b := apply.Writers(before, kinds.ManagerKinds), apply.Writers(after, kinds.ManagerKinds); !cmp.Equal(a, b) {
				t.Errorf("Writers: %v, then %v", a, b)
			}
			// the apply took spec.replicas back from kubectl scale: the same attribution
			reverted := deepCopy(t, before)
			reverted.SetResourceVersion("8")
			reverted.SetManagedFields(childEntries()[:3])
			if _, a := apply.Classify(before, reverted, kinds.ManagerKinds); !cmp.Equal(a, []string{"kubectl"}) {
				t.Fatalf("untrimmed attribution: %v", a)
			}
			if _, b := apply.Classify(after, reverted, kinds.ManagerKinds); !cmp.Equal(b, []string{"kubectl"}) {
				t.Errorf("attribution from the trimmed copy: %v, want [kubectl]", b)
			}
			// nothing but the status entry went
			bj, aj := jsonWithout(t, before), jsonWithout(t, after)
			if diff := cmp.Diff(bj, aj); diff != "" {
				t.Errorf("the trim changed more than managedFields (-before +after):\n%s", diff)
			}
		})
	}
}

// TestTrimPod: a cached pod keeps what the Kind controllers and the upgrade machine read
// of it (the same stuck-pod message and restarts, crash loop, boot outcome, upgrade owner)
// and drops the rest.
func TestTrimPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "p1", ResourceVersion: "3",
			Labels:          map[string]string{kinds.LabelInstance: "web", kinds.LabelManagedBy: "x"},
			Annotations:     map[string]string{"kwok.x-k8s.io/node": "fake"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d", UID: "rs"}},
			ManagedFields:   childEntries()},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "img:v2", Env: []corev1.EnvVar{{Name: "MODE", Value: "x"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run"}}}},
			Volumes:  []corev1.Volume{{Name: "kube-api-access"}},
			NodeName: "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Image: "img:v2", ImageID: "sha256:x", ContainerID: "c1", RestartCount: 5,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
				VolumeMounts:         []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run"}}}}},
	}
	out, err := TrimPod(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*corev1.Pod)
	if got, want := drive.PodProblem([]corev1.Pod{*trimmed}), drive.PodProblem([]corev1.Pod{*pod}); got != want || want.Message == "" {
		t.Errorf("PodProblem: %+v, want %+v", got, want)
	}
	if !upgrade.PodCrashLooping(trimmed) || !upgrade.AnyCrashLooping([]corev1.Pod{*trimmed}, "img:v2") {
		t.Error("the trimmed pod no longer crash-loops")
	}
	gb, gm := upgrade.BootOutcome(trimmed)
	wb, wm := upgrade.BootOutcome(pod)
	if gb != wb || gm != wm {
		t.Errorf("BootOutcome: %v %q, want %v %q", gb, gm, wb, wm)
	}
	if upgradeOwner(trimmed.Labels) != "web" || !cmp.Equal(trimmed.OwnerReferences, pod.OwnerReferences) || trimmed.UID != pod.UID {
		t.Errorf("identity lost: %+v", trimmed.ObjectMeta)
	}
	if trimmed.ManagedFields != nil || trimmed.Annotations != nil || trimmed.Spec.Volumes != nil || trimmed.Spec.Containers[0].Env != nil ||
		trimmed.Status.ContainerStatuses[0].VolumeMounts != nil || trimmed.Status.PodIP != "" {
		t.Errorf("the trim kept what nothing reads: %+v", trimmed)
	}
	if tomb, _ := TrimPod("tombstone"); tomb != "tombstone" {
		t.Errorf("a tombstone came back as %v", tomb)
	}
}

func deepCopy(t *testing.T, o metav1.Object) metav1.Object {
	t.Helper()
	switch v := o.(type) {
	case *appsv1.Deployment:
		return v.DeepCopy()
	case *unstructured.Unstructured:
		return v.DeepCopy()
	}
	t.Fatalf("deepCopy: %T", o)
	return nil
}

// jsonWithout is o as JSON without its managedFields.
func jsonWithout(t *testing.T, o metav1.Object) map[string]any {
	t.Helper()
	c := deepCopy(t, o)
	c.SetManagedFields(nil)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
