package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BaseSpec is the spec of Base, a replicated application database.
type BaseSpec struct {
	Image ImageSpec `json:"image"`
	// Replicas is 3 when unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Port is 8090 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Consensus string `json:"consensus,omitempty"`
	// +optional
	Schema  string      `json:"schema,omitempty"`
	Storage StorageSpec `json:"storage"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// +optional
	Gateway *BaseGatewaySpec `json:"gateway,omitempty"`
	// +optional
	IAMApp string `json:"iamApp,omitempty"`
	// +optional
	KMSSecrets []KMSSecretRef `json:"kmsSecrets,omitempty"`
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// +optional
	PartOf string `json:"partOf,omitempty"`
}

// BaseGatewaySpec routes gateway traffic to the current writer.
type BaseGatewaySpec struct {
	// +optional
	Route string `json:"route,omitempty"`
	// +optional
	GatewayName string `json:"gatewayName,omitempty"`
	// +optional
	GatewayNamespace string `json:"gatewayNamespace,omitempty"`
	// +optional
	LeaderPollInterval string `json:"leaderPollInterval,omitempty"`
	// +optional
	ReadYourWritesTTL string `json:"readYourWritesTTL,omitempty"`
}

// BaseStatus is the status of Base.
type BaseStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	CurrentWriter string `json:"currentWriter,omitempty"`
	// +optional
	Term int64 `json:"term,omitempty"`
}

// Base runs a replicated application database with a consensus writer.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=bases,singular=base,shortName=bapp,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Writer",type=string,JSONPath=`.status.currentWriter`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Base struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BaseSpec   `json:"spec,omitempty"`
	Status BaseStatus `json:"status,omitempty"`
}

// BaseList is a list of Base.
//
// +kubebuilder:object:root=true
type BaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Base `json:"items"`
}

// SPASpec is the spec of a single-page app: a runtime image serving content on port 3000.
type SPASpec struct {
	Runtime ImageSpec `json:"runtime"`
	Content ImageSpec `json:"content"`
	// Config becomes one environment variable per entry.
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// Replicas is 1 when unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	MultiApp bool `json:"multiApp,omitempty"`
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// +optional
	PDB *PodDisruptionBudgetSpec `json:"pdb,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SPA serves a single-page app.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=spas,singular=spa,shortName=spa,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.runtime.repository`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SPA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SPASpec       `json:"spec,omitempty"`
	Status ServiceStatus `json:"status,omitempty"`
}

// SPAList is a list of SPA.
//
// +kubebuilder:object:root=true
type SPAList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SPA `json:"items"`
}

// StaticSpec is the spec of a static site.
type StaticSpec struct {
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// +optional
	Image   *ImageSpec  `json:"image,omitempty"`
	Ingress IngressSpec `json:"ingress"`
}

// Static serves a static site (validated only; it materializes nothing yet).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=statics,singular=static,shortName=static,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Static struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StaticSpec    `json:"spec,omitempty"`
	Status ServiceStatus `json:"status,omitempty"`
}

// StaticList is a list of Static.
//
// +kubebuilder:object:root=true
type StaticList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Static `json:"items"`
}

// AgentDeploymentSpec binds an agent to a machine through the cloud API.
type AgentDeploymentSpec struct {
	// +kubebuilder:validation:MinLength=1
	AgentName string `json:"agentName"`
	// +kubebuilder:validation:MinLength=1
	Org string `json:"org"`
	// ExecutionMode is long-running when unset.
	// +optional
	ExecutionMode string `json:"executionMode,omitempty"`
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	BotVersion string `json:"botVersion,omitempty"`
	// +optional
	Provider string `json:"provider,omitempty"`
	// +optional
	MachineID string `json:"machineId,omitempty"`
}

// AgentDeploymentStatus is the status of AgentDeployment.
type AgentDeploymentStatus struct {
	Status `json:",inline"`
	// +optional
	AgentReady bool `json:"agentReady,omitempty"`
	// +optional
	MachineID string `json:"machineId,omitempty"`
	// +kubebuilder:validation:Enum=Pending;Bound;Error
	// +optional
	BindingStatus string `json:"bindingStatus,omitempty"`
}

// AgentDeployment deploys an agent; it materializes no Kubernetes objects.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=agentdeployments,singular=agentdeployment,shortName=agentdeploy;bot,categories=universe
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.spec.agentName`
// +kubebuilder:printcolumn:name="Org",type=string,JSONPath=`.spec.org`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.executionMode`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Binding",type=string,JSONPath=`.status.bindingStatus`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AgentDeploymentSpec   `json:"spec,omitempty"`
	Status AgentDeploymentStatus `json:"status,omitempty"`
}

// AgentDeploymentList is a list of AgentDeployment.
//
// +kubebuilder:object:root=true
type AgentDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentDeployment `json:"items"`
}

// ImageUpdateSpec polls a registry and commits newer tags to git.
type ImageUpdateSpec struct {
	// +kubebuilder:validation:MinLength=1
	ImageRepository string `json:"imageRepository"`
	// Policy is "semver:*" when unset; also a semver range or "regex:<expr>".
	// +optional
	Policy string `json:"policy,omitempty"`
	// +kubebuilder:validation:MinLength=1
	WritebackRepo string `json:"writebackRepo"`
	// WritebackRef is main when unset.
	// +optional
	WritebackRef string `json:"writebackRef,omitempty"`
	// +kubebuilder:validation:MinLength=1
	WritebackPath string `json:"writebackPath"`
	// IntervalSeconds is 300 when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	IntervalSeconds *int32 `json:"intervalSeconds,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	RegistrySecret string `json:"registrySecret,omitempty"`
	// Insecure lets the registry client speak plain HTTP, to a loopback registry only: plain
	// HTTP never goes to another host, with or without it.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// PushBranch receives the commits instead of writebackRef: created from it when missing,
	// never force-pushed. It must be under imageupdate/ (imageupdate/<name>).
	// +optional
	PushBranch string `json:"pushBranch,omitempty"`
	// CommitMessage is a Go template over .Repository, .OldTag, .NewTag, .Namespace, .Name
	// and .Path; empty means "imageupdate: bump <repository> <old> -> <new>".
	// +optional
	CommitMessage string `json:"commitMessage,omitempty"`
	// +optional
	CommitAuthor *CommitAuthor `json:"commitAuthor,omitempty"`
	// SigningKeySecret names a Secret whose git.asc (and optional passphrase) signs commits.
	// +optional
	SigningKeySecret string `json:"signingKeySecret,omitempty"`
}

// CommitAuthor is named in a "Requested-by:" trailer of write-back commits; the operator is
// their author and committer.
type CommitAuthor struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Email string `json:"email"`
}

// ImageUpdateStatus is the status of ImageUpdate.
type ImageUpdateStatus struct {
	Status `json:",inline"`
	// +optional
	LatestTag string `json:"latestTag,omitempty"`
	// +optional
	LastPushedTag string `json:"lastPushedTag,omitempty"`
	// +optional
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`
	// LastCommit is the SHA of the last write-back commit.
	// +optional
	LastCommit string `json:"lastCommit,omitempty"`
}

// ImageUpdate keeps an image tag in git at the newest tag its policy allows.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=imageupdates,singular=imageupdate,shortName=imgup,categories=universe
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.imageRepository`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Latest",type=string,JSONPath=`.status.latestTag`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ImageUpdate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ImageUpdateSpec   `json:"spec,omitempty"`
	Status ImageUpdateStatus `json:"status,omitempty"`
}

// ImageUpdateList is a list of ImageUpdate.
//
// +kubebuilder:object:root=true
type ImageUpdateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdate `json:"items"`
}

// KMSSecretSpec projects keys of a KMS path into a Secret.
type KMSSecretSpec struct {
	// Transport "zap" selects the ZAP projector.
	// +optional
	Transport string `json:"transport,omitempty"`
	// +optional
	ZapAddr string `json:"zapAddr,omitempty"`
	// +optional
	ProjectSlug string `json:"projectSlug,omitempty"`
	// +optional
	EnvSlug string `json:"envSlug,omitempty"`
	// +optional
	SecretsPath string `json:"secretsPath,omitempty"`
	// Keys to project; empty projects none, never all.
	// +optional
	Keys []string `json:"keys,omitempty"`
	// +optional
	ManagedSecretName string `json:"managedSecretName,omitempty"`
	// +optional
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
}

// KMSSecret is served at kms.<universe>.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=kmssecrets,singular=kmssecret,shortName=kmss,categories=universe
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.managedSecretName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KMSSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KMSSecretSpec `json:"spec,omitempty"`
	Status Status        `json:"status,omitempty"`
}

// KMSSecretList is a list of KMSSecret.
//
// +kubebuilder:object:root=true
type KMSSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KMSSecret `json:"items"`
}
