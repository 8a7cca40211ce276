package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageSpec names a container image. The image reference is repository[:tag].
type ImageSpec struct {
	// Repository is required but may be empty: the Rust schema defaults it to "" for
	// LuxRuntime and NodeFleet, and App reports an empty one instead of rejecting it.
	Repository string `json:"repository"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// ServicePort is a port of the main container, exposed by the core Service at servicePort
// (containerPort when unset).
type ServicePort struct {
	// Name may be empty for a single port, as Kubernetes allows.
	Name string `json:"name"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServicePort *int32 `json:"servicePort,omitempty"`
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// ProbeSpec is a probe with exactly one handler: exec, then tcpSocket, then httpGet (path and
// port).
type ProbeSpec struct {
	// +optional
	Path string `json:"path,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Exec *ExecAction `json:"exec,omitempty"`
	// +optional
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
}

// ExecAction runs a command in the container.
type ExecAction struct {
	// +optional
	Command []string `json:"command,omitempty"`
}

// TCPSocketAction opens a TCP connection to port.
type TCPSocketAction struct {
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// IngressSpec exposes the first service port through a networking.k8s.io Ingress.
type IngressSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Hosts []string `json:"hosts,omitempty"`
	// IngressClassName is written as the kubernetes.io/ingress.class annotation.
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
	// TLS is true when unset.
	// +optional
	TLS *bool `json:"tls,omitempty"`
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// +optional
	PathRules []PathRule `json:"pathRules,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	ZeroTrustPolicy *ZeroTrustPolicy `json:"zeroTrustPolicy,omitempty"`
}

// PathRule routes one path of every host to a backend port.
type PathRule struct {
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// PathType is Exact or ImplementationSpecific; anything else means Prefix, as the Rust
	// operator read it, so the field is not a closed set.
	PathType string `json:"pathType"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
}

// ZeroTrustPolicy restricts an ingress to identities of the IAM.
type ZeroTrustPolicy struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	AllowedEmails []string `json:"allowedEmails,omitempty"`
	// +optional
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// +optional
	AllowedGroups []string `json:"allowedGroups,omitempty"`
	// +optional
	SessionDuration string `json:"sessionDuration,omitempty"`
	// +optional
	IAMEndpoint string `json:"iamEndpoint,omitempty"`
}

// NetworkPolicySpec restricts ingress traffic to the workload's pods.
type NetworkPolicySpec struct {
	// Enabled is true when unset: a present networkPolicy is rendered unless enabled is false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	AllowFrom []NetworkPolicyPeer `json:"allowFrom,omitempty"`
	// +optional
	AllowIngress bool `json:"allowIngress,omitempty"`
	// AllowIntraNamespace is true when unset.
	// +optional
	AllowIntraNamespace *bool `json:"allowIntraNamespace,omitempty"`
}

// NetworkPolicyPeer selects pods allowed to connect.
type NetworkPolicyPeer struct {
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// AutoscalingSpec renders an autoscaling/v2 HorizontalPodAutoscaler; the Deployment then omits
// replicas. The CPU target has two spellings: targetCpuUtilization (contract) and
// targetCPUUtilization (Go v1alpha1 CRs); read it with TargetCPU.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="autoscaling.minReplicas must not exceed autoscaling.maxReplicas"
type AutoscalingSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilization *int32 `json:"targetCpuUtilization,omitempty"`
	// LegacyTargetCPUUtilization is the Go v1alpha1 spelling of TargetCPUUtilization.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	LegacyTargetCPUUtilization *int32 `json:"targetCPUUtilization,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetMemoryUtilization *int32 `json:"targetMemoryUtilization,omitempty"`
}

// TargetCPU returns the CPU utilization target: targetCpuUtilization, else
// targetCPUUtilization, else nil.
func (a *AutoscalingSpec) TargetCPU() *int32 {
	if a.TargetCPUUtilization != nil {
		return a.TargetCPUUtilization
	}
	return a.LegacyTargetCPUUtilization
}

// PodDisruptionBudgetSpec renders a PodDisruptionBudget: minAvailable, else maxUnavailable,
// else minAvailable 1.
type PodDisruptionBudgetSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// ServiceMonitorSpec describes the metrics endpoint. No object is materialized from it.
type ServiceMonitorSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	MetricsPort string `json:"metricsPort,omitempty"`
	// +optional
	MetricsPath string `json:"metricsPath,omitempty"`
	// +optional
	Interval string `json:"interval,omitempty"`
}

// KMSSecretRef asks for a KMSSecret child that syncs a KMS path into a Secret.
//
// Two spellings of the KMS endpoint are accepted: hostApi (contract) and hostAPI (every
// production v1alpha1 CR); read it with Host. HIP-410 CRs write the target Secret as secretName
// and add name and keys; read the Secret name with SecretName.
// +kubebuilder:validation:XValidation:rule="has(self.managedSecretName) || has(self.secretName)",message="kmsSecrets[]: managedSecretName (or secretName) is required"
type KMSSecretRef struct {
	// +optional
	HostAPI string `json:"hostApi,omitempty"`
	// LegacyHostAPI is the Go v1alpha1 spelling of HostAPI.
	// +optional
	LegacyHostAPI string `json:"hostAPI,omitempty"`
	// +optional
	ProjectSlug string `json:"projectSlug,omitempty"`
	// +optional
	EnvSlug string `json:"envSlug,omitempty"`
	// +kubebuilder:validation:MinLength=1
	SecretsPath string `json:"secretsPath"`
	// +optional
	CredentialsRef *SecretReference `json:"credentialsRef,omitempty"`
	// ResyncInterval is in seconds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ResyncInterval *int32 `json:"resyncInterval,omitempty"`
	// +optional
	ManagedSecretName string `json:"managedSecretName,omitempty"`
	// Name is the HIP-410 name of the sync object.
	// +optional
	Name string `json:"name,omitempty"`
	// Keys is the HIP-410 list of keys to sync.
	// +optional
	Keys []string `json:"keys,omitempty"`
	// LegacySecretName is the HIP-410 spelling of ManagedSecretName.
	// +optional
	LegacySecretName string `json:"secretName,omitempty"`
}

// Host returns the KMS API endpoint: hostApi, else hostAPI, else "".
func (r *KMSSecretRef) Host() string {
	if r.HostAPI != "" {
		return r.HostAPI
	}
	return r.LegacyHostAPI
}

// SecretName returns the name of the managed Secret: managedSecretName, else secretName.
func (r *KMSSecretRef) SecretName() string {
	if r.ManagedSecretName != "" {
		return r.ManagedSecretName
	}
	return r.LegacySecretName
}

// SecretReference names a Secret, in the CR's namespace when namespace is empty. Name is
// optional because the Go v1alpha1 schema let it be omitted.
type SecretReference struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// StorageSpec is the volume claim template of a stateful workload.
type StorageSpec struct {
	// +optional
	StorageClassName string            `json:"storageClassName,omitempty"`
	Size             resource.Quantity `json:"size"`
	// +optional
	RetentionPolicy string `json:"retentionPolicy,omitempty"`
	// VolumeName is the claim template name ("data" when unset). It is immutable once the
	// StatefulSet exists.
	// +optional
	VolumeName *string `json:"volumeName,omitempty"`
}

// PersistenceSpec runs the replicate sidecar that streams a SQLite WAL to S3.
type PersistenceSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	DataDir string `json:"dataDir,omitempty"`
	// +optional
	DBPath string `json:"dbPath,omitempty"`
	// +optional
	DirMode bool `json:"dirMode,omitempty"`
	// +optional
	Pattern string `json:"pattern,omitempty"`
	// +optional
	Bucket string `json:"bucket,omitempty"`
	// +optional
	S3Path string `json:"s3Path,omitempty"`
	// +optional
	S3Endpoint string `json:"s3Endpoint,omitempty"`
	// +optional
	S3Region string `json:"s3Region,omitempty"`
	// ForcePathStyle is true when unset.
	// +optional
	ForcePathStyle *bool `json:"forcePathStyle,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	AgeSecret string `json:"ageSecret,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
}

// UpgradePolicySpec configures the managed-upgrade state machine.
type UpgradePolicySpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Preflight *bool `json:"preflight,omitempty"`
	// RolloutDeadlineSeconds defaults to 300; values below 30 count as 30.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RolloutDeadlineSeconds *int32 `json:"rolloutDeadlineSeconds,omitempty"`
	// PreflightDeadlineSeconds defaults to 300; values below 30 count as 30.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PreflightDeadlineSeconds *int32 `json:"preflightDeadlineSeconds,omitempty"`
	// +optional
	BootEnv []corev1.EnvVar `json:"bootEnv,omitempty"`
	// SoakSeconds defaults to 60; 0 turns the soak off.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`
	// +optional
	SnapshotClass string `json:"snapshotClass,omitempty"`
	// RevertInGit: when an upgrade of a CR applied from the universe repository ends Failed,
	// commit the image back to status.lastGoodImage in the file that declares the CR, with
	// the failure in the message, so the repository never names a version that is not running.
	// +optional
	RevertInGit bool `json:"revertInGit,omitempty"`
}

// BackupSpec schedules backups of a datastore to S3.
type BackupSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// +optional
	S3Endpoint string `json:"s3Endpoint,omitempty"`
	// +optional
	S3Bucket string `json:"s3Bucket,omitempty"`
	// +optional
	S3CredentialsSecret string `json:"s3CredentialsSecret,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	RetentionDays *int32 `json:"retentionDays,omitempty"`
}

// ComponentSpec is an optional sub-workload with its own image.
type ComponentSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}
