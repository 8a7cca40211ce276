package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

var meta = metav1.ObjectMeta{Name: "iam", Namespace: "hanzo", Labels: map[string]string{"a": "b"}}

func defaultedImage(repo string) *v1.ImageSpec {
	return &v1.ImageSpec{Repository: repo, Tag: "latest", PullPolicy: corev1.PullIfNotPresent}
}

func TestToService(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     v1alpha1.HanzoServiceSpec
		want   v1.ServiceSpec
	}{
		"minimal": {
			reason: "the Go CRD defaulted tag, pullPolicy, replicas and strategy",
			in:     v1alpha1.HanzoServiceSpec{Image: v1.ImageSpec{Repository: "r"}},
			want:   v1.ServiceSpec{Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate"},
		},
		"explicit values win": {
			reason: "a set value is never replaced by a default",
			in: v1alpha1.HanzoServiceSpec{
				Image:    v1.ImageSpec{Repository: "r", Tag: "v1", PullPolicy: corev1.PullAlways},
				Replicas: ptr.To[int32](0), Strategy: "Recreate",
				Ports: []v1.ServicePort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolUDP}},
			},
			want: v1.ServiceSpec{
				Image:    &v1.ImageSpec{Repository: "r", Tag: "v1", PullPolicy: corev1.PullAlways},
				Replicas: ptr.To[int32](0), Strategy: "Recreate",
				Ports: []v1.ServicePort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolUDP}},
			},
		},
		"kms secrets": {
			reason: "hostAPI moves to hostApi; host and resync interval get the Go defaults",
			in: v1alpha1.HanzoServiceSpec{Image: v1.ImageSpec{Repository: "r"}, KMSSecrets: []v1.KMSSecretRef{
				{LegacyHostAPI: "https://kms.example/api", SecretsPath: "/iam", ManagedSecretName: "iam-secrets", ResyncInterval: ptr.To[int32](30)},
				{SecretsPath: "/x", ManagedSecretName: "x"},
			}},
			want: v1.ServiceSpec{Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate", KMSSecrets: []v1.KMSSecretRef{
				{HostAPI: "https://kms.example/api", SecretsPath: "/iam", ManagedSecretName: "iam-secrets", ResyncInterval: ptr.To[int32](30)},
				{HostAPI: "https://kms.hanzo.ai/api", SecretsPath: "/x", ManagedSecretName: "x", ResyncInterval: ptr.To[int32](60)},
			}},
		},
		"sample autoscaling and probes": {
			reason: "the Go sample's targetCPUUtilizationPercentage and probes.*.httpGet are honoured",
			in: v1alpha1.HanzoServiceSpec{
				Image:       v1.ImageSpec{Repository: "r"},
				Autoscaling: &v1alpha1.AutoscalingSpec{AutoscalingSpec: v1.AutoscalingSpec{Enabled: true, MaxReplicas: ptr.To[int32](4)}, TargetCPUUtilizationPercentage: ptr.To[int32](70)},
				Probes: &v1alpha1.Probes{
					Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, InitialDelaySeconds: 5, PeriodSeconds: 10},
					Liveness:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				},
				LivenessProbe: &v1.ProbeSpec{Port: 9000},
			},
			want: v1.ServiceSpec{
				Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate",
				Autoscaling:    &v1.AutoscalingSpec{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4), TargetCPUUtilization: ptr.To[int32](70)},
				ReadinessProbe: &v1.ProbeSpec{Path: "/healthz", Port: 8080, InitialDelaySeconds: 5, PeriodSeconds: 10},
				LivenessProbe:  &v1.ProbeSpec{Path: "/health", Port: 9000, InitialDelaySeconds: 5, PeriodSeconds: 10},
			},
		},
		"probe port out of range": {
			reason: "a string port past 65535 is no port: unset, not wrapped into int32 (2^32+8000 was port 8000)",
			in: v1alpha1.HanzoServiceSpec{
				Image: v1.ImageSpec{Repository: "r"},
				Probes: &v1alpha1.Probes{
					Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("4294975296")}}},
					Liveness:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("65536")}}},
				},
			},
			want: v1.ServiceSpec{
				Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate",
				ReadinessProbe: &v1.ProbeSpec{Path: "/healthz", Port: 0, InitialDelaySeconds: 5, PeriodSeconds: 10},
				LivenessProbe:  &v1.ProbeSpec{TCPSocket: &v1.TCPSocketAction{Port: 0}, InitialDelaySeconds: 5, PeriodSeconds: 10},
			},
		},
		"autoscaling spellings": {
			reason: "targetCpuUtilization wins over targetCPUUtilization, which wins over the percentage",
			in: v1alpha1.HanzoServiceSpec{Image: v1.ImageSpec{Repository: "r"}, Autoscaling: &v1alpha1.AutoscalingSpec{
				AutoscalingSpec:                v1.AutoscalingSpec{LegacyTargetCPUUtilization: ptr.To[int32](60)},
				TargetCPUUtilizationPercentage: ptr.To[int32](70),
			}},
			want: v1.ServiceSpec{Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate",
				Autoscaling: &v1.AutoscalingSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](10), TargetCPUUtilization: ptr.To[int32](60)}},
		},
		"ingress, network policy, monitor": {
			reason: "nested defaults apply only when the parent is present",
			in: v1alpha1.HanzoServiceSpec{
				Image:          v1.ImageSpec{Repository: "r"},
				Ingress:        &v1.IngressSpec{Enabled: true, Hosts: []string{"a.example"}, ZeroTrustPolicy: &v1.ZeroTrustPolicy{}},
				NetworkPolicy:  &v1.NetworkPolicySpec{AllowIngress: true},
				ServiceMonitor: &v1.ServiceMonitorSpec{Enabled: true},
			},
			want: v1.ServiceSpec{
				Image: defaultedImage("r"), Replicas: ptr.To[int32](1), Strategy: "RollingUpdate",
				Ingress: &v1.IngressSpec{Enabled: true, Hosts: []string{"a.example"}, IngressClassName: "ingress", ClusterIssuer: "letsencrypt-prod",
					TLS: ptr.To(true), ZeroTrustPolicy: &v1.ZeroTrustPolicy{SessionDuration: "24h"}},
				NetworkPolicy:  &v1.NetworkPolicySpec{Enabled: ptr.To(true), AllowIngress: true, AllowIntraNamespace: ptr.To(true)},
				ServiceMonitor: &v1.ServiceMonitorSpec{Enabled: true, MetricsPort: "metrics", MetricsPath: "/metrics", Interval: "30s"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &v1alpha1.HanzoService{ObjectMeta: meta, Spec: tc.in}
			before := in.DeepCopy()
			got := v1alpha1.ToService(in)
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("%s: ToService spec (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(meta, got.ObjectMeta); diff != "" {
				t.Errorf("ToService metadata (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("ToService modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestToDatastore(t *testing.T) {
	in := &v1alpha1.HanzoDatastore{ObjectMeta: meta, Spec: v1alpha1.HanzoDatastoreSpec{
		Type:    v1.EnginePostgreSQL,
		Storage: v1.StorageSpec{Size: resource.MustParse("50Gi")},
		Backup:  &v1.BackupSpec{Enabled: true, Schedule: "0 2 * * *"},
		Image:   &v1.ImageSpec{Repository: "ghcr.io/hanzoai/sql", Tag: "18"},
	}}
	got := v1alpha1.ToDatastore(in)
	want := v1.DatastoreSpec{Type: v1.EnginePostgreSQL, DBSpec: v1.DBSpec{
		Image:    &v1.ImageSpec{Repository: "ghcr.io/hanzoai/sql", Tag: "18", PullPolicy: corev1.PullIfNotPresent},
		Replicas: ptr.To[int32](1),
		Storage:  v1.StorageSpec{Size: resource.MustParse("50Gi"), StorageClassName: "do-block-storage", RetentionPolicy: "Retain"},
		Backup:   &v1.BackupSpec{Enabled: true, Schedule: "0 2 * * *", RetentionDays: ptr.To[int32](30)},
	}}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("ToDatastore spec (-want +got):\n%s", diff)
	}
	if got.Engine() != v1.EnginePostgreSQL {
		t.Errorf("Engine() = %s, want postgresql", got.Engine())
	}
	if in.Spec.Backup.RetentionDays != nil {
		t.Error("ToDatastore modified its input")
	}
}

func TestToDNS(t *testing.T) {
	cases := map[string]struct {
		in, want v1.DNSSpec
	}{
		"empty": {},
		"coredns and database": {
			in: v1.DNSSpec{CoreDNS: &v1.CoreDNSSpec{}, Database: &v1.DNSDatabaseSpec{Enabled: true}},
			want: v1.DNSSpec{
				CoreDNS:  &v1.CoreDNSSpec{Image: "ghcr.io/hanzoai/dns:latest", Replicas: ptr.To[int32](2), APIPort: 8443, DNSPort: 53},
				Database: &v1.DNSDatabaseSpec{Enabled: true, SyncInterval: "30s"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := v1alpha1.ToDNS(&v1alpha1.HanzoDNS{Spec: tc.in})
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("ToDNS spec (-want +got):\n%s", diff)
			}
		})
	}
}
