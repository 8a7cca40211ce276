package drive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
)

func deployment(t *testing.T, image string, gen, observed int64, status appsv1.DeploymentStatus) *unstructured.Unstructured {
	t.Helper()
	labels := map[string]string{"app": "cloud"}
	one := int32(1)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-api", Namespace: "ns", Generation: gen},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "sidecar", Image: "ghcr.io/hanzo/proxy:v9.9.9"}, {Name: "cloud", Image: image}}}}},
		Status: status,
	}
	d.Status.ObservedGeneration = observed
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// available is the status the deployment controller writes once one replica of the
// template is available.
func available() appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
}

// deadlineExceeded is the status the deployment controller writes once the template has not
// progressed within progressDeadlineSeconds.
func deadlineExceeded() appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "cloud-api-1" has timed out progressing.`},
		}}
}

func TestRolloutOf(t *testing.T) {
	const repo, target = "ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud:v1.3.0"
	for _, tc := range []struct {
		name string
		dep  *unstructured.Unstructured
		want drive.Rollout
		msg  string
	}{
		{"still the old image", deployment(t, "ghcr.io/hanzo/cloud:v1.2.3", 1, 1, available()), drive.RolloutPending, "runs ghcr.io/hanzo/cloud:v1.2.3"},
		{"new image not observed", deployment(t, target, 2, 1, available()), drive.RolloutPending, "is InProgress"},
		{"new image, no replica updated yet", deployment(t, target, 2, 2, appsv1.DeploymentStatus{Replicas: 1}), drive.RolloutPending, "is InProgress"},
		{"new image available", deployment(t, target, 2, 2, available()), drive.RolloutDone, ""},
		{"new image past its progress deadline", deployment(t, target, 2, 2, deadlineExceeded()), drive.RolloutFailed, "failed: Progress deadline exceeded"},
		// the deadline of the previous template says nothing of this one
		{"old image past its progress deadline", deployment(t, "ghcr.io/hanzo/cloud:v1.2.3", 1, 1, deadlineExceeded()), drive.RolloutPending, "runs ghcr.io/hanzo/cloud:v1.2.3"},
		{"new image, deadline of the previous generation", deployment(t, target, 2, 1, deadlineExceeded()), drive.RolloutPending, "is InProgress"},
		{"digest pinned, not the target", deployment(t, "ghcr.io/hanzo/cloud@sha256:"+strings.Repeat("a", 64), 2, 2, available()), drive.RolloutPending, "runs ghcr.io/hanzo/cloud@sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := drive.RolloutOf(tc.dep, repo, target)
			if got != tc.want || !strings.Contains(msg, tc.msg) {
				t.Errorf("RolloutOf = %s, %q; want %s, containing %q", got, msg, tc.want, tc.msg)
			}
			if done, _ := drive.RolledOut(tc.dep, repo, target); done != (tc.want == drive.RolloutDone) {
				t.Errorf("RolledOut = %v, RolloutOf %s", done, got)
			}
		})
	}
}

// deploymentReads signals every Get of a Deployment: the rollout wait's reads (the loop's
// join lists, never gets, Deployments).
type deploymentReads struct {
	client.Client
	reads chan types.NamespacedName
}

func (c deploymentReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Deployment" {
		c.reads <- key
	}
	return err
}

// TestAppsRolloutWakesOnWatch: with the backstop poll an hour and the timeout an hour, the
// wait still ends — done after the test writes an available status, failed after it
// writes ProgressDeadlineExceeded — because the Deployment watch delivers the write. The
// testbed runs no deployment controller: the test writes the Deployment as the Kind
// controller and the deployment controller would. Causality, not time: the write is made
// only after the wait's first read found the rollout pending, so only a wake can read it.
func TestAppsRolloutWakesOnWatch(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	watch := &drive.DeploymentWatch{}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	deps := &unstructured.Unstructured{}
	deps.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	inf, err := informers.GetInformer(ctx, deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(watch.Handler()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache never synced")
	}

	for _, tc := range []struct {
		ns     string
		status appsv1.DeploymentStatus
		want   string
		event  string
	}{
		{"drive-wake-done", available(), "done", "cloud Driven: "},
		{"drive-wake-failed", deadlineExceeded(), "failed", "cloud DriveRolloutPending: ghcr.io/hanzo/cloud:v1.3.0: Deployment cloud-api failed: Progress deadline exceeded"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			appFixture(t, c, tc.ns, "")
			p := newPlatform(t)
			p.set(tc.ns, "v1.3.0", "v1.2.3")
			rec := &recorder{}
			reads := make(chan types.NamespacedName, 16)
			a := &drive.Apps{Platform: p.client(t), Client: deploymentReads{Client: c, reads: reads}, Cluster: "test-cluster",
				Mode: drive.ModeOn, Allow: drive.AllowList{"*"}, RolloutTimeout: time.Hour, RolloutPoll: time.Hour, Watch: watch,
				GitOpsManager: "universe-operator-gitops", Recorder: rec, Log: testr.New(t)}
			type result struct {
				out []drive.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() { out, err := a.Tick(ctx); done <- result{out, err} }()

			key := types.NamespacedName{Namespace: tc.ns, Name: "cloud-api"}
			if got := <-reads; got != key { // the wait's first read: subscribed, and pending (the old image)
				t.Fatalf("first read of %s, want %s", got, key)
			}
			// the Kind controller rolls the template; the deployment controller reports on it
			var d appsv1.Deployment
			if err := c.Get(ctx, key, &d); err != nil {
				t.Fatal(err)
			}
			d.Spec.Template.Spec.Containers[1].Image = "ghcr.io/hanzo/cloud:v1.3.0"
			if err := c.Update(ctx, &d); err != nil {
				t.Fatal(err)
			}
			d.Status = tc.status
			d.Status.ObservedGeneration = d.Generation
			if err := c.Status().Update(ctx, &d); err != nil {
				t.Fatal(err)
			}
			var r result
			failsafe := time.After(2 * time.Minute) // not an assertion on time: without the wake this waits the hour
		wait:
			for {
				select {
				case r = <-done:
					break wait
				case <-reads: // the wake's reads
				case <-failsafe:
					t.Fatal("the wait never ended after the status write")
				}
			}
			if r.err != nil || len(r.out) != 1 || r.out[0].Wrote != "cr" || r.out[0].Rollout != tc.want {
				t.Fatalf("Tick = %+v, %v; want the CR written and rollout %s", r.out, r.err, tc.want)
			}
			if !strings.Contains(rec.reasons(), tc.event) {
				t.Errorf("events:\n%s\nwant %q", rec.reasons(), tc.event)
			}
			if n := watch.Waiting(key); n != 0 {
				t.Errorf("%d waits still subscribed to %s", n, key)
			}
		})
	}
}
