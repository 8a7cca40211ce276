package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The defaults the Go operator's CRDs applied at admission. The legacy schemas served now
// carry none, so the conversions apply them instead.
const (
	defaultTag               = "latest"
	defaultPullPolicy        = corev1.PullIfNotPresent
	defaultIngressClass      = "ingress"
	defaultClusterIssuer     = "letsencrypt-prod"
	defaultSessionDuration   = "24h"
	defaultKMSHost           = "https://kms.hanzo.ai/api"
	defaultResyncInterval    = 60
	defaultProbePath         = "/health"
	defaultProbeDelay        = 5
	defaultProbePeriod       = 10
	defaultMinReplicas       = 1
	defaultMaxReplicas       = 10
	defaultTargetCPU         = 80
	defaultMetricsPort       = "metrics"
	defaultMetricsPath       = "/metrics"
	defaultMetricsInterval   = "30s"
	defaultStrategy          = "RollingUpdate"
	defaultRetentionDays     = 30
	defaultRetentionPolicy   = "Retain"
	defaultStorageClass      = "do-block-storage"
	defaultCoreDNSImage      = "ghcr.io/hanzoai/dns:latest"
	defaultCoreDNSReplicas   = 2
	defaultCoreDNSAPIPort    = 8443
	defaultCoreDNSPort       = 53
	defaultDNSSyncInterval   = "30s"
	defaultServiceReplicas   = 1
	defaultDatastoreReplicas = 1
)

// ToService converts a HanzoService to the v1 Service the builders read, applying the Go
// operator's defaults. Metadata and status are copied; TypeMeta is left empty because the
// group is the caller's. The input is not modified.
func ToService(in *HanzoService) *v1.Service {
	s := in.Spec.DeepCopy()
	out := &v1.Service{ObjectMeta: *in.ObjectMeta.DeepCopy(), Status: *in.Status.DeepCopy()}
	img := s.Image
	defaultImage(&img)
	out.Spec = v1.ServiceSpec{
		Image:              &img,
		Replicas:           orDefault(s.Replicas, defaultServiceReplicas),
		Ports:              defaultPorts(s.Ports),
		Env:                s.Env,
		EnvFrom:            s.EnvFrom,
		Volumes:            s.Volumes,
		VolumeMounts:       s.VolumeMounts,
		Resources:          s.Resources,
		LivenessProbe:      probe(s.LivenessProbe, s.Probes.liveness()),
		ReadinessProbe:     probe(s.ReadinessProbe, s.Probes.readiness()),
		Ingress:            defaultIngress(s.Ingress),
		Autoscaling:        autoscaling(s.Autoscaling),
		PDB:                s.PDB,
		NetworkPolicy:      defaultNetworkPolicy(s.NetworkPolicy),
		ServiceMonitor:     defaultServiceMonitor(s.ServiceMonitor),
		KMSSecrets:         defaultKMSSecrets(s.KMSSecrets),
		Sidecars:           s.Sidecars,
		InitContainers:     s.InitContainers,
		ImagePullSecrets:   s.ImagePullSecrets,
		ServiceAccountName: s.ServiceAccountName,
		Strategy:           s.Strategy,
		PartOf:             s.PartOf,
		Component:          s.Component,
		Labels:             s.Labels,
		Annotations:        s.Annotations,
		Command:            s.Command,
		Args:               s.Args,
		UpgradePolicy:      s.UpgradePolicy,
	}
	if out.Spec.Strategy == "" {
		out.Spec.Strategy = defaultStrategy
	}
	return out
}

// ToDatastore converts a HanzoDatastore to a v1 Datastore whose spec.type carries the engine,
// applying the Go operator's defaults. The input is not modified.
func ToDatastore(in *HanzoDatastore) *v1.Datastore {
	s := in.Spec.DeepCopy()
	out := &v1.Datastore{ObjectMeta: *in.ObjectMeta.DeepCopy(), Status: *in.Status.DeepCopy()}
	if s.Image != nil {
		defaultImage(s.Image)
	}
	storage := s.Storage
	if storage.StorageClassName == "" {
		storage.StorageClassName = defaultStorageClass
	}
	if storage.RetentionPolicy == "" {
		storage.RetentionPolicy = defaultRetentionPolicy
	}
	backup := s.Backup
	if backup != nil && backup.RetentionDays == nil {
		backup.RetentionDays = ptr.To[int32](defaultRetentionDays)
	}
	out.Spec = v1.DatastoreSpec{
		Type: s.Type,
		DBSpec: v1.DBSpec{
			Image:             s.Image,
			Replicas:          orDefault(s.Replicas, defaultDatastoreReplicas),
			Storage:           storage,
			Resources:         s.Resources,
			Env:               s.Env,
			EnvFrom:           s.EnvFrom,
			Volumes:           s.Volumes,
			VolumeMounts:      s.VolumeMounts,
			Command:           s.Command,
			Args:              s.Args,
			Sidecars:          s.Sidecars,
			CredentialsSecret: s.CredentialsSecret,
			KMSSecrets:        defaultKMSSecrets(s.KMSSecrets),
			Backup:            backup,
			ServiceAliases:    s.ServiceAliases,
			Ports:             defaultPorts(s.Ports),
			ImagePullSecrets:  s.ImagePullSecrets,
			NetworkPolicy:     defaultNetworkPolicy(s.NetworkPolicy),
			ServiceMonitor:    defaultServiceMonitor(s.ServiceMonitor),
			PartOf:            s.PartOf,
		},
	}
	return out
}

// ToDNS converts a HanzoDNS to a v1 DNS, applying the Go operator's defaults. The input is
// not modified.
func ToDNS(in *HanzoDNS) *v1.DNS {
	out := &v1.DNS{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
	if c := out.Spec.CoreDNS; c != nil {
		if c.Image == "" {
			c.Image = defaultCoreDNSImage
		}
		c.Replicas = orDefault(c.Replicas, defaultCoreDNSReplicas)
		if c.APIPort == 0 {
			c.APIPort = defaultCoreDNSAPIPort
		}
		if c.DNSPort == 0 {
			c.DNSPort = defaultCoreDNSPort
		}
	}
	if d := out.Spec.Database; d != nil && d.SyncInterval == "" {
		d.SyncInterval = defaultDNSSyncInterval
	}
	out.Spec.Ingress = defaultIngress(out.Spec.Ingress)
	return out
}

func orDefault(p *int32, def int32) *int32 {
	if p != nil {
		return p
	}
	return ptr.To(def)
}

func defaultImage(img *v1.ImageSpec) {
	if img.Tag == "" {
		img.Tag = defaultTag
	}
	if img.PullPolicy == "" {
		img.PullPolicy = defaultPullPolicy
	}
}

func defaultPorts(ports []v1.ServicePort) []v1.ServicePort {
	for i := range ports {
		if ports[i].Protocol == "" {
			ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	return ports
}

func defaultIngress(in *v1.IngressSpec) *v1.IngressSpec {
	if in == nil {
		return nil
	}
	if in.IngressClassName == "" {
		in.IngressClassName = defaultIngressClass
	}
	if in.ClusterIssuer == "" {
		in.ClusterIssuer = defaultClusterIssuer
	}
	if in.TLS == nil {
		in.TLS = ptr.To(true)
	}
	if z := in.ZeroTrustPolicy; z != nil && z.SessionDuration == "" {
		z.SessionDuration = defaultSessionDuration
	}
	return in
}

func defaultNetworkPolicy(in *v1.NetworkPolicySpec) *v1.NetworkPolicySpec {
	if in == nil {
		return nil
	}
	if in.Enabled == nil {
		in.Enabled = ptr.To(true)
	}
	if in.AllowIntraNamespace == nil {
		in.AllowIntraNamespace = ptr.To(true)
	}
	return in
}

func defaultServiceMonitor(in *v1.ServiceMonitorSpec) *v1.ServiceMonitorSpec {
	if in == nil {
		return nil
	}
	if in.MetricsPort == "" {
		in.MetricsPort = defaultMetricsPort
	}
	if in.MetricsPath == "" {
		in.MetricsPath = defaultMetricsPath
	}
	if in.Interval == "" {
		in.Interval = defaultMetricsInterval
	}
	return in
}

// defaultKMSSecrets fills the Go defaults and moves the hostAPI spelling to hostApi, so the
// converted spec has one spelling.
func defaultKMSSecrets(refs []v1.KMSSecretRef) []v1.KMSSecretRef {
	for i := range refs {
		r := &refs[i]
		if r.HostAPI == "" {
			r.HostAPI = r.LegacyHostAPI
		}
		r.LegacyHostAPI = ""
		if r.HostAPI == "" {
			r.HostAPI = defaultKMSHost
		}
		r.ResyncInterval = orDefault(r.ResyncInterval, defaultResyncInterval)
	}
	return refs
}

// autoscaling resolves the three spellings of the CPU target into targetCpuUtilization.
func autoscaling(in *AutoscalingSpec) *v1.AutoscalingSpec {
	if in == nil {
		return nil
	}
	out := in.AutoscalingSpec
	cpu := out.TargetCPU()
	if cpu == nil {
		cpu = in.TargetCPUUtilizationPercentage
	}
	out.TargetCPUUtilization = orDefault(cpu, defaultTargetCPU)
	out.LegacyTargetCPUUtilization = nil
	out.MinReplicas = orDefault(out.MinReplicas, defaultMinReplicas)
	out.MaxReplicas = orDefault(out.MaxReplicas, defaultMaxReplicas)
	return &out
}

// probe returns the declared probe with the Go defaults, else the probe converted from the
// sample's Kubernetes-shaped form, else nil.
func probe(p *v1.ProbeSpec, k *corev1.Probe) *v1.ProbeSpec {
	if p == nil && k != nil {
		p = fromCoreProbe(k)
	}
	if p == nil {
		return nil
	}
	if p.Path == "" && p.Exec == nil && p.TCPSocket == nil {
		p.Path = defaultProbePath
	}
	if p.InitialDelaySeconds == 0 {
		p.InitialDelaySeconds = defaultProbeDelay
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = defaultProbePeriod
	}
	return p
}

// portNumber is a probe's port as a number: a named port, or a number outside 0-65535 (a
// string port may hold any), is 0, unset; never an int32 wrapped around.
func portNumber(p intstr.IntOrString) int32 {
	n := p.IntValue()
	if n < 0 || n > 65535 {
		return 0
	}
	return int32(n)
}

func fromCoreProbe(k *corev1.Probe) *v1.ProbeSpec {
	p := &v1.ProbeSpec{InitialDelaySeconds: k.InitialDelaySeconds, PeriodSeconds: k.PeriodSeconds}
	switch {
	case k.Exec != nil:
		p.Exec = &v1.ExecAction{Command: k.Exec.Command}
	case k.TCPSocket != nil:
		p.TCPSocket = &v1.TCPSocketAction{Port: portNumber(k.TCPSocket.Port)}
	case k.HTTPGet != nil:
		p.Path = k.HTTPGet.Path
		p.Port = portNumber(k.HTTPGet.Port)
	default:
		return nil
	}
	return p
}

func (p *Probes) readiness() *corev1.Probe {
	if p == nil {
		return nil
	}
	return p.Readiness
}

func (p *Probes) liveness() *corev1.Probe {
	if p == nil {
		return nil
	}
	return p.Liveness
}
