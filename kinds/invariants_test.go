package kinds_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

var hanzoCtx = kinds.Context{APIGroup: kinds.DefaultAPIGroup}

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}
}

// build runs the Registry entry ref on cr.
func mustBuild(t *testing.T, ref kinds.Ref, cr kinds.Object) []*unstructured.Unstructured {
	t.Helper()
	e, ok := kinds.Builtin()[ref]
	if !ok {
		t.Fatalf("no entry %s", ref)
	}
	objs, err := e.Build(cr, hanzoCtx)
	if err != nil {
		t.Fatalf("build %s: %v", ref, err)
	}
	return objs
}

func canonRef(kind string) kinds.Ref {
	return kinds.Ref{Placement: kinds.PlacementCanonical, Kind: kind}
}

// find returns the first object of kind, failing when there is none.
func findKind(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s among %d objects", kind, len(objs))
	return nil
}

// podSpec decodes the pod template of a Deployment or StatefulSet.
func podSpec(t *testing.T, workload *unstructured.Unstructured) corev1.PodSpec {
	t.Helper()
	m, ok, err := unstructured.NestedMap(workload.Object, "spec", "template", "spec")
	if err != nil || !ok {
		t.Fatalf("%s has no pod spec: %v", workload.GetKind(), err)
	}
	var ps corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func imageOf(repo, tag string) *v1.ImageSpec { return &v1.ImageSpec{Repository: repo, Tag: tag} }

// The values every workload case carries: volume sources of three kinds and an env var from
// a secret, so a source-less volume or a dropped valueFrom shows.
var (
	wantEnv     = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}
	wantEnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
	wantVolumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
	}
	wantMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "pvc", MountPath: "/pvc"}, {Name: "sec", MountPath: "/sec", ReadOnly: true}}
)

func serviceSpecWithPod() v1.ServiceSpec {
	return v1.ServiceSpec{
		Image: imageOf("r", "t"), Env: wantEnv, EnvFrom: wantEnvFrom, Volumes: wantVolumes, VolumeMounts: wantMounts,
		Sidecars: []corev1.Container{{Name: "side", Image: "side:1"}},
	}
}

func dbSpecWithPod() v1.DBSpec {
	return v1.DBSpec{
		Storage: v1.StorageSpec{Size: resource.MustParse("1Gi")}, Env: wantEnv, EnvFrom: wantEnvFrom,
		Volumes: wantVolumes, VolumeMounts: wantMounts, Sidecars: []corev1.Container{{Name: "side", Image: "side:1"}},
	}
}

// TestPodFieldsReachTheMainContainer is invariant 1: env, envFrom, volumeMounts reach
// container 0 and volumes (with their sources) reach the pod, for every workload path.
func TestPodFieldsReachTheMainContainer(t *testing.T) {
	appDB := v1.AppSpec{Role: "kv", ServiceSpec: serviceSpecWithPod(), Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")}}
	cases := map[string]struct {
		reason   string
		ref      kinds.Ref
		cr       kinds.Object
		workload string
		envExtra int // HANZO_VERSION
	}{
		"Service":      {"the canonical Service", canonRef("Service"), &v1.Service{ObjectMeta: objMeta("svc"), Spec: serviceSpecWithPod()}, "Deployment", 1},
		"IAM facade":   {"a Service-shaped facade", canonRef("IAM"), &v1.IAM{ObjectMeta: objMeta("iam"), Spec: serviceSpecWithPod()}, "Deployment", 1},
		"App service":  {"the App service profile", canonRef("App"), &v1.App{ObjectMeta: objMeta("app"), Spec: v1.AppSpec{ServiceSpec: serviceSpecWithPod()}}, "Deployment", 1},
		"App kv":       {"the App datastore projection", canonRef("App"), &v1.App{ObjectMeta: objMeta("appkv"), Spec: appDB}, "StatefulSet", 0},
		"SQL":          {"a datastore facade", canonRef("SQL"), &v1.SQL{ObjectMeta: objMeta("sql"), Spec: v1.DatastoreSpec{DBSpec: dbSpecWithPod()}}, "StatefulSet", 0},
		"Datastore":    {"the Datastore Kind", canonRef("Datastore"), &v1.Datastore{ObjectMeta: objMeta("ds"), Spec: v1.DatastoreSpec{DBSpec: dbSpecWithPod()}}, "StatefulSet", 0},
		"HanzoService": {"a legacy CR through its conversion", kinds.Ref{Placement: kinds.PlacementV1alpha1, Kind: "HanzoService"}, hanzoService(), "Deployment", 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ps := podSpec(t, findKind(t, mustBuild(t, c.ref, c.cr), c.workload))
			main := ps.Containers[0]
			if main.Name != c.cr.GetName() {
				t.Errorf("%s: container 0 is %q, want the main container %q", c.reason, main.Name, c.cr.GetName())
			}
			if diff := cmp.Diff(wantEnv, main.Env[:len(main.Env)-c.envExtra]); diff != "" {
				t.Errorf("%s: env (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff(wantEnvFrom, main.EnvFrom); diff != "" {
				t.Errorf("%s: envFrom (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff(wantMounts, main.VolumeMounts); diff != "" {
				t.Errorf("%s: volumeMounts (-want +got):\n%s", c.reason, diff)
			}
			if diff := cmp.Diff(wantVolumes, ps.Volumes); diff != "" {
				t.Errorf("%s: volumes (-want +got):\n%s", c.reason, diff)
			}
			if len(ps.Containers) < 2 || ps.Containers[1].Name != "side" {
				t.Errorf("%s: the sidecar does not follow the main container", c.reason)
			}
		})
	}
}

func hanzoService() *v1alpha1.HanzoService {
	s := serviceSpecWithPod()
	return &v1alpha1.HanzoService{ObjectMeta: objMeta("legacy"), Spec: v1alpha1.HanzoServiceSpec{
		Image: *s.Image, Env: s.Env, EnvFrom: s.EnvFrom, Volumes: s.Volumes, VolumeMounts: s.VolumeMounts, Sidecars: s.Sidecars,
	}}
}

// TestFacadeCannotChangeItsEngine is invariant 4: the Kind (or App role) fixes the engine,
// whatever spec.type says.
func TestFacadeCannotChangeItsEngine(t *testing.T) {
	db := func(typ v1.Engine) v1.DatastoreSpec {
		return v1.DatastoreSpec{Type: typ, DBSpec: v1.DBSpec{Storage: v1.StorageSpec{Size: resource.MustParse("1Gi")}}}
	}
	cases := map[string]struct {
		ref       kinds.Ref
		cr        kinds.Object
		component string
		image     string
		port      int64
	}{
		"SQL says valkey":      {canonRef("SQL"), &v1.SQL{ObjectMeta: objMeta("a"), Spec: db(v1.EngineValkey)}, "postgresql", "ghcr.io/hanzoai/sql:16", 5432},
		"KV says postgresql":   {canonRef("KV"), &v1.KV{ObjectMeta: objMeta("b"), Spec: db(v1.EnginePostgreSQL)}, "valkey", "ghcr.io/hanzoai/kv:8", 6379},
		"DocDB says s3":        {canonRef("DocDB"), &v1.DocDB{ObjectMeta: objMeta("c"), Spec: db(v1.EngineS3)}, "docdb", "ghcr.io/hanzoai/docdb:latest", 27017},
		"S3 says docdb":        {canonRef("S3"), &v1.S3{ObjectMeta: objMeta("d"), Spec: db(v1.EngineDocDB)}, "s3", "ghcr.io/hanzoai/s3:latest", 9000},
		"App kv says sql":      {canonRef("App"), &v1.App{ObjectMeta: objMeta("e"), Spec: v1.AppSpec{Role: "kv", Type: "postgresql", Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")}}}, "valkey", "ghcr.io/hanzoai/kv:8", 6379},
		"App sql says valkey":  {canonRef("App"), &v1.App{ObjectMeta: objMeta("f"), Spec: v1.AppSpec{Role: "sql", Type: "valkey", Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")}}}, "postgresql", "ghcr.io/hanzoai/sql:16", 5432},
		"Datastore type minio": {canonRef("Datastore"), &v1.Datastore{ObjectMeta: objMeta("g"), Spec: db(v1.EngineMinio)}, "s3", "ghcr.io/hanzoai/s3:latest", 9000},
		"Datastore untyped":    {canonRef("Datastore"), &v1.Datastore{ObjectMeta: objMeta("h"), Spec: db("")}, "datastore", "ghcr.io/hanzoai/datastore:latest", 8080},
		"ManagedDatabase":      {canonRef("ManagedDatabase"), &v1.ManagedDatabase{ObjectMeta: objMeta("i"), Spec: v1.ManagedDatabaseSpec{Engine: v1.EngineValkey, DBSpec: db("").DBSpec}}, "valkey", "ghcr.io/hanzoai/kv:8", 6379},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sts := findKind(t, mustBuild(t, c.ref, c.cr), "StatefulSet")
			if got := sts.GetLabels()[kinds.LabelComponent]; got != c.component {
				t.Errorf("component %q, want %q", got, c.component)
			}
			ps := podSpec(t, sts)
			if ps.Containers[0].Image != c.image {
				t.Errorf("image %q, want %q", ps.Containers[0].Image, c.image)
			}
			if got := int64(ps.Containers[0].Ports[0].ContainerPort); got != c.port {
				t.Errorf("port %d, want %d", got, c.port)
			}
		})
	}
}

// selectors returns every label selector of an object, by path.
func selectors(o *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	get := func(path ...string) {
		if m, ok, _ := unstructured.NestedMap(o.Object, path...); ok {
			out[strings.Join(path, ".")] = m
		}
	}
	switch o.GetKind() {
	case "Deployment", "StatefulSet":
		get("spec", "selector", "matchLabels")
		if tsc, ok, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "topologySpreadConstraints"); ok {
			for _, c := range tsc {
				if m, ok, _ := unstructured.NestedMap(c.(map[string]any), "labelSelector", "matchLabels"); ok {
					out["topologySpreadConstraints"] = m
				}
			}
		}
		if terms, ok, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution"); ok {
			for _, term := range terms {
				if m, ok, _ := unstructured.NestedMap(term.(map[string]any), "podAffinityTerm", "labelSelector", "matchLabels"); ok {
					out["podAffinity"] = m
				}
			}
		}
	case "Service":
		get("spec", "selector")
	case "PodDisruptionBudget":
		get("spec", "selector", "matchLabels")
	case "NetworkPolicy":
		get("spec", "podSelector", "matchLabels")
	}
	return out
}

// TestSelectorsNeverCarryDescriptiveLabels is invariant 2, over every golden case: each
// selector is exactly name and instance, both the CR name. The one Kind with two workloads,
// NodeFleet, selects each group by the group's name (<cr>-archive, <cr>-state-sync), so that
// neither StatefulSet nor Service ever selects the other group's pods.
func TestSelectorsNeverCarryDescriptiveLabels(t *testing.T) {
	reg := kinds.Builtin()
	n := 0
	for _, c := range goldenCases(t) {
		objs, err := reg.Build(c.Obj, c.ctx())
		if err != nil {
			continue
		}
		for _, o := range objs {
			name := c.Obj.GetName()
			if c.Obj.GetKind() == "NodeFleet" {
				name = strings.TrimSuffix(o.GetName(), "-headless")
				if name != c.Obj.GetName()+"-archive" && name != c.Obj.GetName()+"-state-sync" {
					t.Errorf("%s: %s %s is in no NodeFleet group", c.Name, o.GetKind(), o.GetName())
				}
			}
			want := map[string]any{kinds.LabelName: name, kinds.LabelInstance: name}
			if c.Obj.GroupVersionKind().Group == luxnetwork.Group {
				if c.Obj.GetKind() != "LuxNetwork" {
					// the luxfi apps keep that operator's selectors (immutable on a taken-over
					// Deployment or StatefulSet): their goldens and TestLuxFleetBecomesReady
					// hold them
					continue
				}
				// a taken-over luxfi network keeps that operator's immutable selector
				want = map[string]any{}
				for k, v := range luxnetwork.Labels(name) {
					want[k] = v
				}
			}
			if c.Obj.GetKind() == "HanzoDNS" {
				// the Go operator's HanzoDNS selects name, instance and component dns
				want[kinds.LabelComponent] = "dns"
			}
			for path, sel := range selectors(o) {
				n++
				if diff := cmp.Diff(want, sel); diff != "" {
					t.Errorf("%s: %s %s %s (-want +got):\n%s", c.Name, o.GetKind(), o.GetName(), path, diff)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d selectors checked", n)
	}
}

// TestStandardLabels is invariant 3: selector ∪ managed-by ∪ component/part-of/version
// (sanitized) ∪ spec.labels, on the workload, its pod template and every child.
func TestStandardLabels(t *testing.T) {
	cases := map[string]struct {
		tag, want string
	}{
		"plain":         {"v1.2.3", "v1.2.3"},
		"digest":        {"v1.2.3@sha256:0123", "v1.2.3"},
		"slash":         {"feature/x", "feature-x"},
		"trimmed":       {"-rc.1_", "rc.1"},
		"too long":      {strings.Repeat("a", 70), strings.Repeat("a", 63)},
		"only a digest": {"@sha256:0123", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cr := &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{
				Image: imageOf("r", c.tag), Component: "api", PartOf: "shop", Labels: map[string]string{"team": "x", kinds.LabelPartOf: "override"},
				Ports: []v1.ServicePort{{Name: "http", ContainerPort: 80}},
			}}
			want := map[string]string{
				kinds.LabelName: "web", kinds.LabelInstance: "web", kinds.LabelManagedBy: kinds.ManagedBy,
				kinds.LabelComponent: "api", kinds.LabelPartOf: "override", "team": "x",
			}
			if c.want != "" {
				want[kinds.LabelVersion] = c.want
			}
			for _, o := range mustBuild(t, canonRef("Service"), cr) {
				if diff := cmp.Diff(want, o.GetLabels()); diff != "" {
					t.Errorf("%s labels (-want +got):\n%s", o.GetKind(), diff)
				}
				if o.GetKind() == "Deployment" {
					pl, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
					if diff := cmp.Diff(want, pl); diff != "" {
						t.Errorf("pod labels (-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}

// TestReplicasOmittedWhenAutoscaling is invariant 5: the HPA owns replicas.
func TestReplicasOmittedWhenAutoscaling(t *testing.T) {
	cases := map[string]struct {
		autoscaling *v1.AutoscalingSpec
		replicas    *int32
		want        any // nil: absent
		hpa         bool
	}{
		"no autoscaling, unset":   {nil, nil, int64(1), false},
		"no autoscaling, 3":       {nil, ptr.To[int32](3), int64(3), false},
		"autoscaling disabled":    {&v1.AutoscalingSpec{Enabled: false}, ptr.To[int32](2), int64(2), false},
		"autoscaling enabled":     {&v1.AutoscalingSpec{Enabled: true}, nil, nil, true},
		"autoscaling, replicas":   {&v1.AutoscalingSpec{Enabled: true, MinReplicas: ptr.To[int32](2)}, ptr.To[int32](4), nil, true},
		"legacy CPU spelling too": {&v1.AutoscalingSpec{Enabled: true, LegacyTargetCPUUtilization: ptr.To[int32](60)}, nil, nil, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			objs := mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Replicas: c.replicas, Autoscaling: c.autoscaling}})
			got, found, _ := unstructured.NestedFieldNoCopy(findKind(t, objs, "Deployment").Object, "spec", "replicas")
			if !found {
				got = nil
			}
			if got != c.want {
				t.Errorf("replicas = %v, want %v", got, c.want)
			}
			hasHPA := slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "HorizontalPodAutoscaler" })
			if hasHPA != c.hpa {
				t.Errorf("HPA present = %v, want %v", hasHPA, c.hpa)
			}
			if c.autoscaling != nil && c.autoscaling.LegacyTargetCPUUtilization != nil {
				m, _, _ := unstructured.NestedSlice(findKind(t, objs, "HorizontalPodAutoscaler").Object, "spec", "metrics")
				if len(m) != 1 {
					t.Errorf("legacy targetCPUUtilization did not become a metric: %v", m)
				}
			}
		})
	}
}

// TestRolloutDefaults is invariant 6.
func TestRolloutDefaults(t *testing.T) {
	for _, strategy := range []string{"", "RollingUpdate", "Recreate"} {
		t.Run("strategy="+strategy, func(t *testing.T) {
			d := findKind(t, mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Strategy: strategy,
				Sidecars: []corev1.Container{{Name: "s", Image: "s"}, {Name: "own", Image: "o", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}}}},
			}}), "Deployment")
			st, _, _ := unstructured.NestedMap(d.Object, "spec", "strategy")
			want := map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)}}
			if strategy == "Recreate" {
				want = map[string]any{"type": "Recreate"}
			}
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
			if v, _, _ := unstructured.NestedInt64(d.Object, "spec", "minReadySeconds"); v != 10 {
				t.Errorf("minReadySeconds %d", v)
			}
			ps := podSpec(t, d)
			if ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds != 30 {
				t.Errorf("terminationGracePeriodSeconds %v", ps.TerminationGracePeriodSeconds)
			}
			for _, c := range ps.Containers {
				want := []string{"/bin/sh", "-c", "sleep 5"}
				if c.Name == "own" {
					want = []string{"drain"}
				}
				if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || !slices.Equal(c.Lifecycle.PreStop.Exec.Command, want) {
					t.Errorf("container %s preStop %+v, want %v", c.Name, c.Lifecycle, want)
				}
			}
		})
	}
}

// TestProbes is invariant 7: a default TCP readiness probe with ports and no declared probe;
// a declared probe honored with exactly one handler.
func TestProbes(t *testing.T) {
	ports := []v1.ServicePort{{Name: "http", ContainerPort: 8080}}
	cases := map[string]struct {
		ports []v1.ServicePort
		probe *v1.ProbeSpec
		want  *corev1.Probe
	}{
		"default tcp": {ports, nil, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrStr(8080)}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 6, SuccessThreshold: 1}},
		"no ports, no probe": {nil, nil, nil},
		"exec wins": {ports, &v1.ProbeSpec{Exec: &v1.ExecAction{Command: []string{"ok"}}, TCPSocket: &v1.TCPSocketAction{Port: 1}, Port: 2, Path: "/x"},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"ok"}}}, InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 6}},
		"tcp over http": {ports, &v1.ProbeSpec{TCPSocket: &v1.TCPSocketAction{Port: 1}, Port: 2},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrStr(1)}}, InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 6}},
		"http path default": {ports, &v1.ProbeSpec{Port: 2, InitialDelaySeconds: 1, PeriodSeconds: 2},
			&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intOrStr(2)}}, InitialDelaySeconds: 1, PeriodSeconds: 2, TimeoutSeconds: 3, FailureThreshold: 6}},
		"declared but unusable": {ports, &v1.ProbeSpec{Path: "/x"}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := findKind(t, mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Ports: c.ports, ReadinessProbe: c.probe}}), "Deployment")
			if diff := cmp.Diff(c.want, podSpec(t, d).Containers[0].ReadinessProbe); diff != "" {
				t.Errorf("readiness (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodSecurity is invariant 8.
func TestPodSecurity(t *testing.T) {
	onRoot, always := corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways
	cases := map[string]struct {
		sc      *corev1.PodSecurityContext
		fsGroup *int64
		want    *corev1.PodSecurityContext
	}{
		"neither":               {nil, nil, nil},
		"legacy fsGroup":        {nil, ptr.To[int64](1000), &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000), FSGroupChangePolicy: &onRoot}},
		"structured wins":       {&corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}, ptr.To[int64](1000), &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), FSGroupChangePolicy: &onRoot}},
		"legacy fills the gap":  {&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, ptr.To[int64](1000), &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](1000), FSGroupChangePolicy: &onRoot}},
		"explicit Always kept":  {&corev1.PodSecurityContext{FSGroup: ptr.To[int64](1), FSGroupChangePolicy: &always}, nil, &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1), FSGroupChangePolicy: &always}},
		"no fsGroup, no policy": {&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](5)}, nil, &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](5)}},
	}
	csc := &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			spec := v1.ServiceSpec{Image: imageOf("r", ""), SecurityContext: c.sc, FSGroup: c.fsGroup, ContainerSecurityContext: csc,
				Sidecars: []corev1.Container{{Name: "s", Image: "s"}}, Persistence: &v1.PersistenceSpec{Enabled: true, DataDir: "/d", DBPath: "x.db", Bucket: "b"}}
			svc := podSpec(t, findKind(t, mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: spec}), "Deployment"))
			db := v1.DBSpec{Storage: v1.StorageSpec{Size: resource.MustParse("1Gi")}, SecurityContext: c.sc, FSGroup: c.fsGroup, ContainerSecurityContext: csc, Sidecars: spec.Sidecars}
			sts := podSpec(t, findKind(t, mustBuild(t, canonRef("KV"), &v1.KV{ObjectMeta: objMeta("kv"), Spec: v1.DatastoreSpec{DBSpec: db}}), "StatefulSet"))
			for path, ps := range map[string]corev1.PodSpec{"Deployment": svc, "StatefulSet": sts} {
				if diff := cmp.Diff(c.want, ps.SecurityContext); diff != "" {
					t.Errorf("%s pod securityContext (-want +got):\n%s", path, diff)
				}
				if diff := cmp.Diff(csc, ps.Containers[0].SecurityContext); diff != "" {
					t.Errorf("%s main container securityContext (-want +got):\n%s", path, diff)
				}
				for _, side := range append(ps.Containers[1:], ps.InitContainers...) {
					if side.SecurityContext != nil {
						t.Errorf("%s: %s got a security context; it belongs to the main container only", path, side.Name)
					}
				}
				if ps.EnableServiceLinks != nil {
					t.Errorf("%s: enableServiceLinks set though the spec omits it", path)
				}
			}
		})
	}
}

// TestSurgeColocation is invariant 9: opt-in, RollingUpdate, a mounted PVC.
func TestSurgeColocation(t *testing.T) {
	pvc := []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}}}
	empty := []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	cases := map[string]struct {
		surge    bool
		strategy string
		volumes  []corev1.Volume
		want     bool
	}{
		"opted in with a PVC": {true, "", pvc, true},
		"not opted in":        {false, "", pvc, false},
		"Recreate":            {true, "Recreate", pvc, false},
		"no PVC":              {true, "RollingUpdate", empty, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := findKind(t, mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), SurgeColocation: c.surge, Strategy: c.strategy, Volumes: c.volumes}}), "Deployment")
			if got := podSpec(t, d).Affinity != nil; got != c.want {
				t.Errorf("affinity present = %v, want %v", got, c.want)
			}
		})
	}
}

// hostileValues values that must survive marshalling untouched.
var hostileValues = []string{"chat: prod", "#", "# not a comment", `"quoted"`, "multi\nline", "{braces}", "- dash", "yes", "null", "${NOT_EXPANDED}", "tab\there", "ünïcode"}

// TestHostileValuesSurviveReplicateConfig: the replicate.yml document is marshalled from
// structs, so YAML-significant characters come back exactly.
func TestHostileValuesSurviveReplicateConfig(t *testing.T) {
	for _, v := range hostileValues {
		t.Run(v, func(t *testing.T) {
			cr := &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Persistence: &v1.PersistenceSpec{
				Enabled: true, DataDir: "/data", DBPath: v, Bucket: v, S3Path: v, S3Region: v, S3Endpoint: v,
			}}}
			cm := findKind(t, mustBuild(t, canonRef("Service"), cr), "ConfigMap")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "replicate.yml")
			if !strings.HasPrefix(data, "# hanzoai/replicate -- SQLite WAL -> S3 (SeaweedFS).\n") {
				t.Errorf("no header line:\n%s", data)
			}
			var doc struct {
				DBs []struct {
					Path     string `json:"path"`
					Replicas []map[string]any
				} `json:"dbs"`
			}
			if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
				t.Fatalf("replicate.yml does not parse: %v\n%s", err, data)
			}
			if len(doc.DBs) != 1 || len(doc.DBs[0].Replicas) != 1 {
				t.Fatalf("shape: %+v", doc)
			}
			r := doc.DBs[0].Replicas[0]
			for _, k := range []string{"bucket", "path", "region", "endpoint"} {
				if r[k] != v {
					t.Errorf("%s = %q, want %q", k, r[k], v)
				}
			}
			if r["force-path-style"] != true || r["access-key-id"] != "${S3_ACCESS_KEY_ID}" {
				t.Errorf("replica %v", r)
			}
			if _, ok := r["age"]; ok {
				t.Errorf("an age block without ageSecret")
			}
		})
	}
}

// TestHostileValuesSurviveGatewayConfig: krakend.json is marshalled from structs.
func TestHostileValuesSurviveGatewayConfig(t *testing.T) {
	for _, v := range hostileValues {
		t.Run(v, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"name": v, "maxRate": 5, "every": v})
			cr := &v1.Gateway{ObjectMeta: objMeta("gw"), Spec: v1.GatewaySpec{Routes: []v1.GatewayRoute{{
				Prefix: "/" + v, Backend: v, Methods: []string{v}, RateLimit: &apiextJSON{Raw: raw},
			}}}}
			cm := findKind(t, mustBuild(t, canonRef("Gateway"), cr), "ConfigMap")
			data, _, _ := unstructured.NestedString(cm.Object, "data", "krakend.json")
			var doc struct {
				Name      string `json:"name"`
				Endpoints []struct {
					Endpoint    string                    `json:"endpoint"`
					Method      string                    `json:"method"`
					Backend     []struct{ Host []string } `json:"backend"`
					ExtraConfig map[string]map[string]any `json:"extra_config"`
				} `json:"endpoints"`
			}
			if err := json.Unmarshal([]byte(data), &doc); err != nil {
				t.Fatalf("krakend.json does not parse: %v\n%s", err, data)
			}
			ep := doc.Endpoints[0]
			if ep.Endpoint != "/"+v || ep.Method != v || ep.Backend[0].Host[0] != "http://"+v {
				t.Errorf("endpoint %+v", ep)
			}
			if got := ep.ExtraConfig["qos/ratelimit/router"]["every"]; got != v {
				t.Errorf("every = %q, want %q", got, v)
			}
		})
	}
}

// TestEnvValuesSurvive: hostileValues values in env and SPA config reach the pod unchanged.
func TestEnvValuesSurvive(t *testing.T) {
	cfg := map[string]string{}
	for i, v := range hostileValues {
		cfg["K"+string(rune('A'+i))] = v
	}
	d := findKind(t, mustBuild(t, canonRef("SPA"), &v1.SPA{ObjectMeta: objMeta("spa"), Spec: v1.SPASpec{Runtime: *imageOf("r", "1"), Config: cfg}}), "Deployment")
	got := map[string]string{}
	for _, e := range podSpec(t, d).Containers[0].Env {
		got[e.Name] = e.Value
	}
	delete(got, "HANZO_VERSION")
	if diff := cmp.Diff(cfg, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// TestAppRoles: every role of the CRD enum dispatches without Unknown; an unknown role
// materializes nothing and is Degraded/UnknownRole; delegated and no-op roles are Pending.
func TestAppRoles(t *testing.T) {
	crds, err := kinds.CRDs(kinds.DefaultAPIGroup)
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "App" {
			for _, e := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["role"].Enum {
				var s string
				if err := json.Unmarshal(e.Raw, &s); err != nil {
					t.Fatal(err)
				}
				enum = append(enum, s)
			}
		}
	}
	sort.Strings(enum)
	roles := kinds.AppRoles()
	sort.Strings(roles)
	if diff := cmp.Diff(enum, roles); diff != "" {
		t.Errorf("CRD role enum vs the role table (-enum +table):\n%s", diff)
	}
	storage := &v1.StorageSpec{Size: resource.MustParse("1Gi")}
	domains := []v1.IngressDomain{{Domain: "a.b", Routes: []v1.IngressRoute{{Path: "/", ServiceName: "s", ServicePort: 80}}}}
	for _, role := range append(roles, "Service", "SQL", "mystery", " kv") {
		t.Run("role="+role, func(t *testing.T) {
			cr := &v1.App{ObjectMeta: objMeta("app"), Spec: v1.AppSpec{Role: role, ServiceSpec: v1.ServiceSpec{Image: imageOf("r", "1")}, Storage: storage, Domains: domains}}
			objs, err := kinds.Builtin()[canonRef("App")].Build(cr, hanzoCtx)
			h, halted := kinds.AsHalt(err)
			if err != nil && !halted {
				t.Fatalf("build: %v", err)
			}
			if halted && len(objs) > 0 {
				t.Errorf("a halted build returned %d objects", len(objs))
			}
			if !slices.Contains(roles, role) {
				if !halted || h.Reason != kinds.ReasonUnknownRole || h.Phase != v1.PhaseDegraded {
					t.Errorf("unknown role: halt %+v, want Degraded/UnknownRole", h)
				}
				return
			}
			if halted && h.Reason == kinds.ReasonUnknownRole {
				t.Errorf("enum role %q reported unknown", role)
			}
			for _, o := range objs {
				if ref := o.GetOwnerReferences(); len(ref) != 1 || ref[0].Kind != "App" {
					t.Errorf("%s %s owner %v, want the App", o.GetKind(), o.GetName(), ref)
				}
			}
			switch role {
			case "chain", "validator":
				if !halted || h.Reason != kinds.ReasonNoOp || h.Phase != v1.PhasePending {
					t.Errorf("halt %+v, want Pending/NoOp", h)
				}
			case "managedDatabase", "base", "gateway", "dns", "mpc", "network", "nodeFleet", "luxRuntime", "agentDeployment", "node":
				if !halted || h.Reason != kinds.ReasonDelegated || h.Phase != v1.PhasePending {
					t.Errorf("halt %+v, want Pending/Delegated", h)
				}
			default:
				if halted || len(objs) == 0 {
					t.Errorf("role %s materialized nothing (%v)", role, err)
				}
			}
		})
	}
}

// TestOwnerReferences is the owner rule, over every golden case and two universes: one
// controller reference to the CR as served, and KMSSecrets at kms.<group>.
func TestOwnerReferences(t *testing.T) {
	reg := kinds.Builtin()
	for _, group := range []string{"hanzo.ai", "lux.cloud"} {
		for _, c := range goldenCases(t) {
			u := c.Obj.DeepCopy()
			gvk := u.GroupVersionKind()
			switch gvk.Group {
			case kinds.DefaultAPIGroup:
				gvk.Group = group
			case "kms." + kinds.DefaultAPIGroup:
				gvk.Group = "kms." + group
			}
			u.SetGroupVersionKind(gvk)
			objs, err := reg.Build(u, kinds.Context{APIGroup: group})
			if err != nil {
				continue
			}
			want := []metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: u.GetName(), UID: u.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			for _, o := range objs {
				if diff := cmp.Diff(want, o.GetOwnerReferences()); diff != "" {
					t.Errorf("%s in %s: %s %s owner (-want +got):\n%s", c.Name, group, o.GetKind(), o.GetName(), diff)
				}
				if o.GetNamespace() != u.GetNamespace() {
					t.Errorf("%s: %s %s in namespace %q, want %q", c.Name, o.GetKind(), o.GetName(), o.GetNamespace(), u.GetNamespace())
				}
				if o.GetKind() == "KMSSecret" && o.GetAPIVersion() != "kms."+group+"/v1" && (gvk.Group != luxnetwork.Group || o.GetAPIVersion() != "secrets.lux.network/v1alpha1") {
					t.Errorf("%s: KMSSecret at %s", c.Name, o.GetAPIVersion())
				}
			}
		}
	}
}

// TestBuildersArePure: the same CR builds the same bytes twice and is not modified.
func TestBuildersArePure(t *testing.T) {
	reg := kinds.Builtin()
	for _, c := range goldenCases(t) {
		before := c.Obj.DeepCopy()
		a, errA := renderBuild(reg.Build(c.Obj, c.ctx()))
		b, errB := renderBuild(reg.Build(c.Obj, c.ctx()))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", c.Name, errA, errB)
		}
		if string(a) != string(b) {
			t.Errorf("%s: two builds differ", c.Name)
		}
		if diff := cmp.Diff(before.Object, c.Obj.Object); diff != "" {
			t.Errorf("%s: the build modified the CR:\n%s", c.Name, diff)
		}
	}
	// Typed CRs too: a build never writes through to the spec.
	cr := &v1.Service{ObjectMeta: objMeta("web"), Spec: serviceSpecWithPod()}
	cr.Spec.Persistence = &v1.PersistenceSpec{Enabled: true, DataDir: "/d", DBPath: "x", Bucket: "b"}
	before := cr.DeepCopy()
	mustBuild(t, canonRef("Service"), cr)
	if diff := cmp.Diff(before, cr); diff != "" {
		t.Errorf("the build modified the typed CR:\n%s", diff)
	}
}

// TestRegistry: every Kind the scheme serves has exactly one entry, reachable by its GVK.
func TestRegistry(t *testing.T) {
	reg := kinds.Builtin()
	s := runtime.NewScheme()
	for _, group := range universes {
		if err := kinds.AddToScheme(s, group); err != nil {
			t.Fatal(err)
		}
		served := 0
		for gvk := range s.AllKnownTypes() {
			if strings.HasSuffix(gvk.Kind, "List") || gvk.Group != group && gvk.Group != "kms."+group && gvk.Group != v1.ChainGroup &&
				gvk.Group != luxnetwork.Group && gvk.Group != luxnetwork.SecretsGroup {
				continue
			}
			if gvk.Version != "v1" && gvk.Version != "v1alpha1" {
				continue
			}
			if slices.Contains([]string{"WatchEvent", "Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"}, gvk.Kind) ||
				strings.HasSuffix(gvk.Kind, "Options") || gvk.Kind == "InternalEvent" {
				continue
			}
			served++
			e, ok := reg.Lookup(gvk, group)
			if !ok {
				t.Errorf("%s: no Registry entry", gvk)
				continue
			}
			obj := e.New()
			want, err := s.New(gvk)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := typeName(obj), typeName(want); got != want {
				t.Errorf("%s: entry New() is %s, the scheme has %s", gvk, got, want)
			}
		}
		if served != len(reg) {
			t.Errorf("%s: the scheme serves %d Kinds, the Registry has %d entries", group, served, len(reg))
		}
	}
	for ref, e := range reg {
		for _, gvk := range e.OwnedGVKs("zoo.cloud") {
			if strings.Contains(gvk.Group, kinds.PlaceholderGroup) {
				t.Errorf("%s owns %s: placeholder not resolved", ref, gvk)
			}
			if gvk.Kind == "KMSSecret" && gvk.Group != "kms.zoo.cloud" && (ref.Placement != kinds.PlacementLuxNetwork || gvk.Group != luxnetwork.SecretsGroup) {
				t.Errorf("%s owns KMSSecret at %s", ref, gvk.Group)
			}
		}
	}
}

func typeName(o runtime.Object) string { return strings.TrimPrefix(fmtType(o), "*") }

// TestRegistryErrors: bad input is an error, never a panic or a guess.
func TestRegistryErrors(t *testing.T) {
	reg := kinds.Builtin()
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "Service", "metadata": map[string]any{"name": "x"}}}
	cases := map[string]struct {
		obj   *unstructured.Unstructured
		ctx   kinds.Context
		wants string
	}{
		"empty group":      {svc, kinds.Context{}, "invalid API group"},
		"unserved kind":    {&unstructured.Unstructured{Object: map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "Pod"}}, hanzoCtx, "no builder serves"},
		"group mismatch":   {svc, kinds.Context{APIGroup: "lux.cloud"}, "no builder serves"},
		"undecodable spec": {&unstructured.Unstructured{Object: map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "Service", "spec": map[string]any{"replicas": "many"}}}, hanzoCtx, "decode Service"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := reg.Build(c.obj, c.ctx)
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Errorf("err = %v, want it to contain %q", err, c.wants)
			}
		})
	}
	if _, err := reg[canonRef("Service")].Build(&v1.IAM{ObjectMeta: objMeta("x")}, hanzoCtx); err == nil {
		t.Errorf("a Service entry built an IAM")
	}
}

// TestBuildOrderIsStable: children come in a fixed order (workload first) and maps are sorted
// when marshalled, so renders diff cleanly.
func TestBuildOrderIsStable(t *testing.T) {
	cr := &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{
		Image: imageOf("r", "1"), Ports: []v1.ServicePort{{Name: "http", ContainerPort: 80}},
		Ingress: &v1.IngressSpec{Enabled: true, Hosts: []string{"a.b"}}, Autoscaling: &v1.AutoscalingSpec{Enabled: true},
		PDB: &v1.PodDisruptionBudgetSpec{Enabled: true}, NetworkPolicy: &v1.NetworkPolicySpec{},
		KMSSecrets:  []v1.KMSSecretRef{{SecretsPath: "/a", ManagedSecretName: "a"}, {SecretsPath: "/b", LegacySecretName: "b"}, {SecretsPath: "/c", ManagedSecretName: "a"}},
		Persistence: &v1.PersistenceSpec{Enabled: true, DataDir: "/d", DirMode: true, Bucket: "b"},
	}}
	var got []string
	for _, o := range mustBuild(t, canonRef("Service"), cr) {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"Deployment/web", "Service/web", "Ingress/web", "HorizontalPodAutoscaler/web", "PodDisruptionBudget/web",
		"NetworkPolicy/web", "KMSSecret/a", "KMSSecret/b", "ConfigMap/web-replicate-config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func intOrStr(i int32) intstr.IntOrString { return intstr.FromInt32(i) }

type apiextJSON = apiextensionsv1.JSON

func fmtType(o runtime.Object) string { return fmt.Sprintf("%T", o) }

// TestIngressConventions is invariant 12 (and 13's label), over every golden case: the class
// is the kubernetes.io/ingress.class annotation and never spec.ingressClassName; every TLS
// secret is <ingress>-tls; every Ingress carries managed-by, which the Ingress Kind's prune
// selects on.
func TestIngressConventions(t *testing.T) {
	reg := kinds.Builtin()
	n := 0
	for _, c := range goldenCases(t) {
		objs, err := reg.Build(c.Obj, c.ctx())
		if err != nil {
			continue
		}
		for _, o := range objs {
			if o.GetKind() != "Ingress" {
				continue
			}
			n++
			if o.GetAnnotations()["kubernetes.io/ingress.class"] == "" {
				t.Errorf("%s: Ingress %s has no class annotation", c.Name, o.GetName())
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "ingressClassName"); found {
				t.Errorf("%s: Ingress %s sets spec.ingressClassName", c.Name, o.GetName())
			}
			if c.Obj.GroupVersionKind().Group == luxnetwork.Group {
				// a luxfi app's Ingress: that operator's managed-by, the TLS secret its CR names
				if o.GetLabels()[kinds.LabelManagedBy] != luxnetwork.ManagedBy {
					t.Errorf("%s: Ingress %s lacks the luxfi managed-by", c.Name, o.GetName())
				}
				continue
			}
			if o.GetLabels()[kinds.LabelManagedBy] != kinds.ManagedBy {
				t.Errorf("%s: Ingress %s lacks managed-by", c.Name, o.GetName())
			}
			tls, _, _ := unstructured.NestedSlice(o.Object, "spec", "tls")
			for _, e := range tls {
				if name := e.(map[string]any)["secretName"]; name != o.GetName()+"-tls" {
					t.Errorf("%s: Ingress %s TLS secret %v", c.Name, o.GetName(), name)
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d Ingresses checked", n)
	}
}

// TestServiceIngressPaths: `/` is routed only when there are no pathRules; no hosts, no
// Ingress (an Ingress without rules would be invalid and expose nothing).
func TestServiceIngressPaths(t *testing.T) {
	ports := []v1.ServicePort{{Name: "http", ContainerPort: 8080, ServicePort: ptr.To[int32](80)}}
	cases := map[string]struct {
		ing   *v1.IngressSpec
		paths []string // nil: no Ingress
	}{
		"implicit root":         {&v1.IngressSpec{Enabled: true, Hosts: []string{"a.b"}}, []string{"/ -> web:80"}},
		"path rules only":       {&v1.IngressSpec{Enabled: true, Hosts: []string{"a.b"}, PathRules: []v1.PathRule{{Path: "/x", PathType: "Prefix", Port: 9}}}, []string{"/x -> web:9"}},
		"disabled":              {&v1.IngressSpec{Hosts: []string{"a.b"}}, nil},
		"no hosts":              {&v1.IngressSpec{Enabled: true}, nil},
		"class from annotation": {&v1.IngressSpec{Enabled: true, Hosts: []string{"a.b"}, Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx"}}, []string{"/ -> web:80"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			objs := mustBuild(t, canonRef("Service"), &v1.Service{ObjectMeta: objMeta("web"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Ports: ports, Ingress: c.ing}})
			var got []string
			for _, o := range objs {
				if o.GetKind() != "Ingress" {
					continue
				}
				got = []string{}
				rules, _, _ := unstructured.NestedSlice(o.Object, "spec", "rules")
				paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
				for _, p := range paths {
					pm := p.(map[string]any)
					svc, _, _ := unstructured.NestedString(pm, "backend", "service", "name")
					port, _, _ := unstructured.NestedInt64(pm, "backend", "service", "port", "number")
					got = append(got, fmt.Sprintf("%s -> %s:%d", pm["path"], svc, port))
				}
				if name == "class from annotation" && o.GetAnnotations()["kubernetes.io/ingress.class"] != "nginx" {
					t.Errorf("the existing class annotation was overwritten: %v", o.GetAnnotations())
				}
			}
			if diff := cmp.Diff(c.paths, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoEmptyConfigMap is invariant 16's first half, over every golden case.
func TestNoEmptyConfigMap(t *testing.T) {
	reg := kinds.Builtin()
	for _, c := range goldenCases(t) {
		objs, err := reg.Build(c.Obj, c.ctx())
		if err != nil {
			continue
		}
		for _, o := range objs {
			if o.GetKind() != "ConfigMap" {
				continue
			}
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			if len(data) == 0 {
				t.Errorf("%s: ConfigMap %s is empty", c.Name, o.GetName())
			}
			for k, v := range data {
				if strings.TrimSpace(v) == "" {
					t.Errorf("%s: ConfigMap %s key %s is empty", c.Name, o.GetName(), k)
				}
			}
		}
	}
}

// TestImagelessNeverBlanksALiveImage is invariant 16's second half: a Service-shaped CR or a
// service-profile App without image.repository materializes nothing and says why.
func TestImagelessNeverBlanksALiveImage(t *testing.T) {
	cases := map[string]struct {
		ref kinds.Ref
		cr  kinds.Object
	}{
		"Service, no image":     {canonRef("Service"), &v1.Service{ObjectMeta: objMeta("a"), Spec: v1.ServiceSpec{Replicas: ptr.To[int32](2)}}},
		"Service, empty repo":   {canonRef("Service"), &v1.Service{ObjectMeta: objMeta("b"), Spec: v1.ServiceSpec{Image: &v1.ImageSpec{Tag: "v1"}}}},
		"App, no image":         {canonRef("App"), &v1.App{ObjectMeta: objMeta("c"), Spec: v1.AppSpec{Role: "service"}}},
		"App, tag but no image": {canonRef("App"), &v1.App{ObjectMeta: objMeta("d"), Spec: v1.AppSpec{Tag: "v2"}}},
		"LLM facade":            {canonRef("LLM"), &v1.LLM{ObjectMeta: objMeta("e")}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := kinds.Builtin()[c.ref].Build(c.cr, hanzoCtx)
			h, ok := kinds.AsHalt(err)
			if !ok || h.Reason != kinds.ReasonInvalidSpec || h.Phase != v1.PhaseDegraded || len(objs) != 0 {
				t.Errorf("got %d objects, err %v; want no objects and Degraded/InvalidSpec", len(objs), err)
			}
		})
	}
}

// TestInvalidSpecs: a spec that cannot be materialized as written is Degraded/InvalidSpec
// with no objects, never a guess.
func TestInvalidSpecs(t *testing.T) {
	persist := func(p v1.PersistenceSpec) *v1.Service {
		p.Enabled = true
		return &v1.Service{ObjectMeta: objMeta("p"), Spec: v1.ServiceSpec{Image: imageOf("r", ""), Persistence: &p}}
	}
	localhost := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
	raw, _ := json.Marshal("missing")
	cases := map[string]struct {
		ref  kinds.Ref
		cr   kinds.Object
		want string
	}{
		"persistence without dataDir": {canonRef("Service"), persist(v1.PersistenceSpec{Bucket: "b", DBPath: "x"}), "persistence.dataDir"},
		"persistence without bucket":  {canonRef("Service"), persist(v1.PersistenceSpec{DataDir: "/d", DBPath: "x"}), "persistence.bucket"},
		"persistence without dbPath":  {canonRef("Service"), persist(v1.PersistenceSpec{DataDir: "/d", Bucket: "b"}), "persistence.dbPath"},
		"App seccomp Localhost":       {canonRef("App"), &v1.App{ObjectMeta: objMeta("a"), Spec: v1.AppSpec{ServiceSpec: v1.ServiceSpec{Image: imageOf("r", ""), SecurityContext: localhost}}}, "localhostProfile"},
		"App kv seccomp Localhost": {canonRef("App"), &v1.App{ObjectMeta: objMeta("b"), Spec: v1.AppSpec{Role: "kv", Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")},
			ServiceSpec: v1.ServiceSpec{SecurityContext: localhost}}}, "localhostProfile"},
		"App ingress without domains": {canonRef("App"), &v1.App{ObjectMeta: objMeta("c"), Spec: v1.AppSpec{Role: "ingress"}}, "needs domains"},
		"Gateway unknown rate limit": {canonRef("Gateway"), &v1.Gateway{ObjectMeta: objMeta("g"), Spec: v1.GatewaySpec{Routes: []v1.GatewayRoute{{Prefix: "/", Backend: "b", RateLimit: &apiextJSON{Raw: raw}}}}},
			"not in rateLimits"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := kinds.Builtin()[c.ref].Build(c.cr, hanzoCtx)
			h, ok := kinds.AsHalt(err)
			if !ok || h.Reason != kinds.ReasonInvalidSpec || h.Phase != v1.PhaseDegraded || len(objs) != 0 {
				t.Fatalf("got %d objects, err %v; want Degraded/InvalidSpec", len(objs), err)
			}
			if !strings.Contains(err.Error(), "InvalidSpec: ") || !strings.Contains(h.Message, c.want) {
				t.Errorf("message %q, want it to name %q", err.Error(), c.want)
			}
		})
	}
}

// TestDNSDefaults: an empty DNS spec runs the default image, two replicas, the api and DNS
// ports, no probe, no version label and no HANZO_VERSION; an image on a registry with a port
// splits at the tag only.
func TestDNSDefaults(t *testing.T) {
	objs := mustBuild(t, canonRef("DNS"), &v1.DNS{ObjectMeta: objMeta("dns")})
	d := findKind(t, objs, "Deployment")
	ps := podSpec(t, d)
	c := ps.Containers[0]
	if c.Image != "ghcr.io/hanzoai/dns:latest" || c.ReadinessProbe != nil || c.LivenessProbe != nil || len(c.Env) != 0 {
		t.Errorf("container %+v", c)
	}
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d", r)
	}
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d/%s", p.Name, p.ContainerPort, p.Protocol))
	}
	if diff := cmp.Diff([]string{"api/8443/TCP", "dns-tcp/53/TCP", "dns-udp/53/UDP"}, ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if _, ok := d.GetLabels()[kinds.LabelVersion]; ok {
		t.Errorf("a version label on the DNS Deployment")
	}
	objs = mustBuild(t, canonRef("DNS"), &v1.DNS{ObjectMeta: objMeta("dns2"), Spec: v1.DNSSpec{CoreDNS: &v1.CoreDNSSpec{Image: "registry.local:5000/dns"}}})
	if got := podSpec(t, findKind(t, objs, "Deployment")).Containers[0].Image; got != "registry.local:5000/dns" {
		t.Errorf("image %q", got)
	}
	// digest-pinned, tag and digest, and a reference that does not parse: each runs as written
	const dg = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, image := range []string{"registry.local:5000/dns" + dg, "ghcr.io/hanzoai/dns:0.10.0" + dg, "ghcr.io/Hanzo/dns:v1"} {
		objs = mustBuild(t, canonRef("DNS"), &v1.DNS{ObjectMeta: objMeta("dns3"), Spec: v1.DNSSpec{CoreDNS: &v1.CoreDNSSpec{Image: image}}})
		d := findKind(t, objs, "Deployment")
		if got := podSpec(t, d).Containers[0].Image; got != image {
			t.Errorf("image %q, want %q", got, image)
		}
		if _, ok := d.GetLabels()[kinds.LabelVersion]; ok {
			t.Errorf("a version label on the DNS Deployment of %s", image)
		}
	}
}

func TestRefString(t *testing.T) {
	for ref, want := range map[kinds.Ref]string{
		canonRef("SQL"): "SQL",
		{Placement: kinds.PlacementHIP, Kind: "MPC"}:               "hip/MPC",
		{Placement: kinds.PlacementV1alpha1, Kind: "HanzoService"}: "v1alpha1/HanzoService",
	} {
		if got := ref.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", ref, got, want)
		}
	}
}

// TestOwnsCoversEveryChild: every child a build emits has its GVK in the entry's Owns, so the
// controller watches it and can prune it.
func TestOwnsCoversEveryChild(t *testing.T) {
	reg := kinds.Builtin()
	for _, c := range goldenCases(t) {
		e, ok := reg.Lookup(c.Obj.GroupVersionKind(), kinds.DefaultAPIGroup)
		if !ok {
			t.Fatalf("%s: no entry", c.Name)
		}
		owned := e.OwnedGVKs(kinds.DefaultAPIGroup)
		objs, _ := e.Build(mustTyped(t, e, c.Obj), hanzoCtx)
		for _, o := range objs {
			if !slices.Contains(owned, o.GroupVersionKind()) {
				t.Errorf("%s: %s emits %s, which Owns lacks", c.Name, e.Kind, o.GroupVersionKind())
			}
		}
	}
}

func mustTyped(t *testing.T, e kinds.Entry, u *unstructured.Unstructured) kinds.Object {
	t.Helper()
	obj := e.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestServiceAliasesNeverDuplicateAName: an alias equal to the Service, the headless Service
// or an earlier alias adds no second object of that name.
func TestServiceAliasesNeverDuplicateAName(t *testing.T) {
	cr := &v1.KV{ObjectMeta: objMeta("cache"), Spec: v1.DatastoreSpec{DBSpec: v1.DBSpec{
		Storage: v1.StorageSpec{Size: resource.MustParse("1Gi")}, ServiceAliases: []string{"redis", "cache", "cache-hs", "redis", "valkey"},
	}}}
	var names []string
	for _, o := range mustBuild(t, canonRef("KV"), cr) {
		if o.GetKind() == "Service" {
			names = append(names, o.GetName())
		}
	}
	if diff := cmp.Diff([]string{"cache", "cache-hs", "redis", "valkey"}, names); diff != "" {
		t.Errorf("Services (-want +got):\n%s", diff)
	}
}

func TestSupersededByApp(t *testing.T) {
	h := kinds.SupersededByApp("web")
	if h.Phase != v1.PhaseDegraded || h.Reason != "SupersededByApp" ||
		h.Message != "App/web declares this workload; this Service CR materializes nothing. Delete it." {
		t.Errorf("%+v", h)
	}
}
