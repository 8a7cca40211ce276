package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceSpec is the spec of Service and of every Service-shaped facade (IAM, KMS, LLM, Queue,
// Observability, Function, Indexer, Explorer). It materializes a Deployment and, as asked, a
// Service, Ingress, HPA, PodDisruptionBudget, NetworkPolicy and KMSSecrets.
type ServiceSpec struct {
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// Replicas is 1 when unset; the HPA owns it when autoscaling is enabled.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +listType=atomic
	// +optional
	Ports []ServicePort `json:"ports,omitempty"`
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
	LivenessProbe *ProbeSpec `json:"livenessProbe,omitempty"`
	// ReadinessProbe defaults to a TCP probe on the first port.
	// +optional
	ReadinessProbe *ProbeSpec `json:"readinessProbe,omitempty"`
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`
	// +optional
	PDB *PodDisruptionBudgetSpec `json:"pdb,omitempty"`
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// +optional
	KMSSecrets []KMSSecretRef `json:"kmsSecrets,omitempty"`
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Strategy Recreate recreates pods; anything else, including empty, is RollingUpdate with
	// maxSurge 1 and maxUnavailable 0 (so it is not a closed set: the Rust schema took any
	// string).
	// +optional
	Strategy string `json:"strategy,omitempty"`
	// +optional
	PartOf string `json:"partOf,omitempty"`
	// +optional
	Component string `json:"component,omitempty"`
	// Labels go on every child and the pod template; they never enter a selector.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations go on the pod template only.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Command []string `json:"command,omitempty"`
	// +optional
	Args []string `json:"args,omitempty"`
	// SurgeColocation prefers the node of the running pod during a rolling update of a pod
	// with a PersistentVolumeClaim.
	// +optional
	SurgeColocation bool `json:"surgeColocation,omitempty"`
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`
	// FSGroup is the legacy pod fsGroup; securityContext.fsGroup wins.
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`
	// SecurityContext is the pod security context. fsGroupChangePolicy is OnRootMismatch when
	// unset and an fsGroup is in effect.
	// +kubebuilder:validation:XValidation:rule="!has(self.fsGroupChangePolicy) || self.fsGroupChangePolicy in ['OnRootMismatch', 'Always']",message="securityContext.fsGroupChangePolicy must be OnRootMismatch or Always"
	// +kubebuilder:validation:XValidation:rule="!has(self.seccompProfile) || self.seccompProfile.type != 'Localhost' || has(self.seccompProfile.localhostProfile)",message="securityContext.seccompProfile.localhostProfile is required when type is Localhost"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// ContainerSecurityContext goes on the main container only.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`
	// +optional
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
	// +optional
	UpgradePolicy *UpgradePolicySpec `json:"upgradePolicy,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// Service is a stateless workload: a Deployment plus the children its spec asks for.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=services,singular=service,shortName=hsvc,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.repository`
// +kubebuilder:printcolumn:name="Upgrade",type=string,JSONPath=`.status.upgrade.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.upgrade.targetImage`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServiceSpec   `json:"spec,omitempty"`
	Status ServiceStatus `json:"status,omitempty"`
}

// ServiceList is a list of Service.
//
// +kubebuilder:object:root=true
type ServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Service `json:"items"`
}
