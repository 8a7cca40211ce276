package k8s_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/e2e/testbed"
)

// exerciseEveryOp calls every op of the contract at least once against objects that exist
// (each workload kind, a CronJob, a claim), so TestRBACTable sees every grant each op uses.
// Refusals by the cluster are fine here: the request was made, and the proxy saw it.
func exerciseEveryOp(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	const ns = "every"
	ensureNS(t, ns)
	t.Cleanup(func() { uncordon(t) })
	labels := map[string]string{"app": "ss"}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	dsLabels := map[string]string{"app": "ds"}
	dsTmpl := *tmpl.DeepCopy()
	dsTmpl.Labels = dsLabels
	objs := []client.Object{
		deployment(ns, "dep", 1),
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ss"}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ds"}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels}, Template: dsTmpl}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job", Image: "example.com/job:v1"}}}}}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pending"}, Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("no-such-class"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"}, Spec: *tmpl.Spec.DeepCopy()},
	}
	objs[len(objs)-1].(*corev1.Pod).Spec.NodeName = testbed.NodeName
	// a bare Pod is admitted only once kube-controller-manager has made the
	// namespace's default ServiceAccount (a fresh namespace can lack it)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return env.tc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}) == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount: %v", ns, err)
	}
	for _, o := range objs {
		if err := env.tc.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	readyPods(t, ns, "app=ds", 1)
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}, "data": map[string]any{"k": "v"}}
	}
	cmRef := ops.ResourceRef{Cluster: whole, Namespace: ns, APIVersion: "v1", Kind: "ConfigMap"}
	w := func(kind, name string) ops.WorkloadRef {
		return ops.WorkloadRef{Cluster: whole, Namespace: ns, Kind: kind, Name: name}
	}
	var trig ops.JobsTriggerReply
	var watch ops.ResourcesWatchReply
	steps := []struct {
		op       string
		req, rep any
	}{
		{"clusters.list", ops.ClustersListRequest{}, nil},
		{"clusters.get", ops.ClustersGetRequest{Cluster: whole}, nil},
		{"clusters.status", ops.ClustersStatusRequest{Cluster: whole}, nil},
		{"nodes.list", ops.NodesListRequest{Cluster: whole}, nil},
		{"nodes.volumeStats", ops.NodesVolumeStatsRequest{Cluster: whole}, nil},
		{"namespaces.list", ops.NamespacesListRequest{Cluster: whole}, nil},
		{"namespaces.list", ops.NamespacesListRequest{Cluster: bounded}, nil},
		{"namespaces.get", ops.NamespacesGetRequest{Cluster: whole, Namespace: ns}, nil},
		{"namespaces.create", ops.NamespacesCreateRequest{Cluster: whole, Namespace: "every-made"}, nil},
		{"namespaces.delete", ops.NamespacesDeleteRequest{Cluster: whole, Namespace: "every-made", Confirm: "every-made"}, nil},
		{"pods.list", ops.PodsListRequest{Cluster: whole, Namespace: ns}, nil},
		{"pods.logs", ops.PodsLogsRequest{Cluster: whole, Namespace: ns, Pod: "bare"}, nil},
		{"volumes.listClaims", ops.VolumesListClaimsRequest{Cluster: whole, Namespace: ns}, nil},
		{"volumes.expandClaim", ops.VolumesExpandClaimRequest{Cluster: whole, Namespace: ns, Claim: "pending", SizeGiB: 2}, nil},
		{"volumes.listVolumes", ops.VolumesListVolumesRequest{Cluster: whole}, nil},
		{"volumes.listClasses", ops.VolumesListClassesRequest{Cluster: whole}, nil},
		{"workloads.list", ops.WorkloadsListRequest{Cluster: whole, Namespace: ns}, nil},
		{"workloads.get", ops.WorkloadsGetRequest{WorkloadRef: w("Deployment", "dep")}, nil},
		{"workloads.get", ops.WorkloadsGetRequest{WorkloadRef: w("StatefulSet", "ss")}, nil},
		{"workloads.get", ops.WorkloadsGetRequest{WorkloadRef: w("DaemonSet", "ds")}, nil},
		{"workloads.scale", ops.WorkloadsScaleRequest{WorkloadRef: w("Deployment", "dep"), Replicas: 2}, nil},
		{"workloads.scale", ops.WorkloadsScaleRequest{WorkloadRef: w("StatefulSet", "ss"), Replicas: 0}, nil},
		{"workloads.restart", ops.WorkloadsRestartRequest{WorkloadRef: w("Deployment", "dep")}, nil},
		{"workloads.restart", ops.WorkloadsRestartRequest{WorkloadRef: w("StatefulSet", "ss")}, nil},
		{"workloads.restart", ops.WorkloadsRestartRequest{WorkloadRef: w("DaemonSet", "ds")}, nil},
		{"workloads.pause", ops.WorkloadsPauseRequest{WorkloadRef: w("Deployment", "dep")}, nil},
		{"workloads.resume", ops.WorkloadsResumeRequest{WorkloadRef: w("Deployment", "dep")}, nil},
		{"workloads.history", ops.WorkloadsHistoryRequest{WorkloadRef: w("Deployment", "dep")}, nil},
		{"workloads.history", ops.WorkloadsHistoryRequest{WorkloadRef: w("StatefulSet", "ss")}, nil},
		{"workloads.history", ops.WorkloadsHistoryRequest{WorkloadRef: w("DaemonSet", "ds")}, nil},
		{"jobs.list", ops.JobsListRequest{Cluster: whole, Namespace: ns}, nil},
		{"jobs.trigger", ops.JobsTriggerRequest{Cluster: whole, Namespace: ns, CronJob: "nightly"}, &trig},
		{"resources.list", ops.ResourcesListRequest{ResourceRef: cmRef}, nil},
		{"resources.apply", ops.ResourcesApplyRequest{ResourceRef: cmRef, Object: cm("every-cm")}, nil},
		{"resources.apply", ops.ResourcesApplyRequest{ResourceRef: cmRef, Object: cm("every-cm")}, nil},
		{"resources.get", ops.ResourcesGetRequest{ResourceRef: cmRef, Name: "every-cm"}, nil},
		{"resources.watch", ops.ResourcesWatchRequest{ResourceRef: cmRef}, &watch},
		{"resources.delete", ops.ResourcesDeleteRequest{ResourceRef: cmRef, Name: "every-cm"}, nil},
		{"access.review", ops.AccessReviewRequest{Cluster: whole, Namespace: ns, Verb: "get", Resource: "pods"}, nil},
		{"metrics.pods", ops.MetricsPodsRequest{Cluster: whole, Namespace: ns}, nil},
		{"nodes.cordon", ops.NodesCordonRequest{Cluster: whole, Node: testbed.NodeName}, nil},
		{"nodes.cordon", ops.NodesCordonRequest{Cluster: whole, Node: testbed.NodeName, Uncordon: true}, nil},
	}
	called := map[string]bool{}
	for _, s := range steps {
		if e := call(t, alice, s.op, s.req, s.rep); e != nil {
			t.Logf("%s: %v", s.op, e)
		}
		called[s.op] = true
	}
	if trig.Job != "" {
		if e := call(t, alice, "jobs.delete", ops.JobsDeleteRequest{Cluster: whole, Namespace: ns, Job: trig.Job}, nil); e != nil {
			t.Errorf("jobs.delete: %v", e)
		}
	} else {
		t.Errorf("jobs.trigger made no Job")
	}
	called["jobs.delete"] = true
	if watch.Cursor != "" {
		if e := call(t, alice, "resources.watch", ops.ResourcesWatchRequest{ResourceRef: cmRef, Cursor: watch.Cursor, WaitSeconds: 1}, nil); e != nil {
			t.Errorf("resources.watch: %v", e)
		}
	}
	for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet"} {
		name := map[string]string{"Deployment": "dep", "StatefulSet": "ss", "DaemonSet": "ds"}[kind]
		if e := call(t, alice, "workloads.delete", ops.WorkloadsDeleteRequest{WorkloadRef: w(kind, name), Confirm: name}, nil); e != nil {
			t.Errorf("workloads.delete %s: %v", kind, e)
		}
	}
	called["workloads.delete"] = true
	// clusters.register ran in setup; deregister of a name the org never registered
	wantCode(t, "deregister an unknown cluster", call(t, alice, "clusters.deregister", ops.ClustersDeregisterRequest{Cluster: "never-registered"}, nil), k8s.CodeNotFound)
	called["clusters.deregister"], called["clusters.register"] = true, true
	for _, op := range ops.All {
		if !called[op.Name] {
			t.Errorf("exerciseEveryOp does not call %s", op.Name)
		}
	}
}
