package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// HanzoServiceSpec is the Go-era Service spec. It reuses the v1 sub-shapes, which accept both
// the Go and the Rust spellings.
type HanzoServiceSpec struct {
	Image v1.ImageSpec `json:"image"`
	// Replicas is 1 when unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +listType=atomic
	// +optional
	Ports []v1.ServicePort `json:"ports,omitempty"`
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	LivenessProbe *v1.ProbeSpec `json:"livenessProbe,omitempty"`
	// +optional
	ReadinessProbe *v1.ProbeSpec `json:"readinessProbe,omitempty"`
	// Probes is the shape of the Go sample CR (config/samples), which matched neither schema;
	// livenessProbe and readinessProbe win over it.
	// +optional
	Probes *Probes `json:"probes,omitempty"`
	// +optional
	Ingress *v1.IngressSpec `json:"ingress,omitempty"`
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`
	// +optional
	PDB *v1.PodDisruptionBudgetSpec `json:"pdb,omitempty"`
	// +optional
	NetworkPolicy *v1.NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +optional
	ServiceMonitor *v1.ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// +optional
	KMSSecrets []v1.KMSSecretRef `json:"kmsSecrets,omitempty"`
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// +kubebuilder:validation:Enum=RollingUpdate;Recreate
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// +optional
	PartOf string `json:"partOf,omitempty"`
	// +optional
	Component string `json:"component,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Command []string `json:"command,omitempty"`
	// +optional
	Args []string `json:"args,omitempty"`
	// UpgradePolicy gates image changes through the upgrade machine (pre-flight, health
	// gate, rollback), as on the v1 Service; it acts only with the operator's --upgrade-fsm.
	// +optional
	UpgradePolicy *v1.UpgradePolicySpec `json:"upgradePolicy,omitempty"`
}

// Probes holds Kubernetes-shaped probes, as the Go sample CR writes them.
type Probes struct {
	// +optional
	Readiness *corev1.Probe `json:"readiness,omitempty"`
	// +optional
	Liveness *corev1.Probe `json:"liveness,omitempty"`
}

// AutoscalingSpec is v1.AutoscalingSpec plus the spelling of the Go sample CR.
type AutoscalingSpec struct {
	v1.AutoscalingSpec `json:",inline"`
	// TargetCPUUtilizationPercentage is the Go sample's spelling of targetCPUUtilization.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// HanzoService is the legacy Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hanzoservices,singular=hanzoservice,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.repository`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HanzoService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HanzoServiceSpec `json:"spec,omitempty"`
	Status v1.ServiceStatus `json:"status,omitempty"`
}

// HanzoServiceList is a list of HanzoService.
//
// +kubebuilder:object:root=true
type HanzoServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HanzoService `json:"items"`
}

// HanzoDatastoreSpec is the Go-era datastore spec: the engine is the required type.
type HanzoDatastoreSpec struct {
	// +kubebuilder:validation:Enum=postgresql;valkey;docdb;minio;nats;datastore
	Type v1.Engine `json:"type"`
	// +optional
	Image *v1.ImageSpec `json:"image,omitempty"`
	// Replicas is 1 when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas *int32         `json:"replicas,omitempty"`
	Storage  v1.StorageSpec `json:"storage"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// +optional
	Command []string `json:"command,omitempty"`
	// +optional
	Args []string `json:"args,omitempty"`
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	KMSSecrets []v1.KMSSecretRef `json:"kmsSecrets,omitempty"`
	// +optional
	Backup *v1.BackupSpec `json:"backup,omitempty"`
	// +optional
	ServiceAliases []string `json:"serviceAliases,omitempty"`
	// +listType=atomic
	// +optional
	Ports []v1.ServicePort `json:"ports,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	NetworkPolicy *v1.NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +optional
	ServiceMonitor *v1.ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// +optional
	PartOf string `json:"partOf,omitempty"`
}

// HanzoDatastore is the legacy Datastore.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hanzodatastores,singular=hanzodatastore,categories=universe
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storage.size`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HanzoDatastore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HanzoDatastoreSpec `json:"spec,omitempty"`
	Status v1.DatastoreStatus `json:"status,omitempty"`
}

// HanzoDatastoreList is a list of HanzoDatastore.
//
// +kubebuilder:object:root=true
type HanzoDatastoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HanzoDatastore `json:"items"`
}

// HanzoDNS is the legacy DNS; its spec is the v1 DNSSpec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=hanzodnses,singular=hanzodns,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Zones",type=integer,JSONPath=`.status.managedZones`
// +kubebuilder:printcolumn:name="CoreDNS",type=boolean,JSONPath=`.status.corednsReady`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HanzoDNS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.DNSSpec   `json:"spec,omitempty"`
	Status v1.DNSStatus `json:"status,omitempty"`
}

// HanzoDNSList is a list of HanzoDNS.
//
// +kubebuilder:object:root=true
type HanzoDNSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HanzoDNS `json:"items"`
}
