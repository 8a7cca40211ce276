package luxnetwork

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LuxNetworkSpec is the luxfi operator's LuxNetwork spec (src/crd.rs). Pointers mark fields
// whose serde default is not the Go zero value. The fields marked "served beyond" are not in
// the luxfi operator: they carry what this operator needs to verify what it runs.
type LuxNetworkSpec struct {
	NetworkID  uint32 `json:"networkId"`
	Validators uint32 `json:"validators"`
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	Resources *ResourceSpec `json:"resources,omitempty"`
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
	// +optional
	Genesis *apiextensionsv1.JSON `json:"genesis,omitempty"`
	// +optional
	GenesisConfigMap string `json:"genesisConfigMap,omitempty"`
	// +optional
	MPC *apiextensionsv1.JSON `json:"mpc,omitempty"`
	// +optional
	Metrics *apiextensionsv1.JSON `json:"metrics,omitempty"`
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`
	// +optional
	ChainTracking *ChainTrackingSpec `json:"chainTracking,omitempty"`
	// +optional
	Snapshot *apiextensionsv1.JSON `json:"snapshot,omitempty"`
	// +optional
	RLPImport *apiextensionsv1.JSON `json:"rlpImport,omitempty"`
	// +optional
	Ports *PortSpec `json:"ports,omitempty"`
	// +optional
	Staking *StakingSpec `json:"staking,omitempty"`
	// +optional
	Init *apiextensionsv1.JSON `json:"init,omitempty"`
	// +optional
	PluginSource *PluginSource `json:"pluginSource,omitempty"`
	// +optional
	StartupScript string `json:"startupScript,omitempty"`
	// +optional
	Security *SecuritySpec `json:"security,omitempty"`
	// +optional
	AdoptExisting bool `json:"adoptExisting,omitempty"`
	// +optional
	Chains []ChainRef `json:"chains,omitempty"`
	// +optional
	Consensus *ConsensusSpec `json:"consensus,omitempty"`
	// +optional
	DBType string `json:"dbType,omitempty"`
	// +optional
	UpgradeConfig *apiextensionsv1.JSON `json:"upgradeConfig,omitempty"`
	// +optional
	EVMConfig *apiextensionsv1.JSON `json:"evmConfig,omitempty"`
	// +optional
	ChainUpgradeConfig *apiextensionsv1.JSON `json:"chainUpgradeConfig,omitempty"`
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
	// +optional
	API *APISpec `json:"api,omitempty"`
	// +optional
	NetworkCompressionType string `json:"networkCompressionType,omitempty"`
	// +optional
	ChainAliases map[string][]string `json:"chainAliases,omitempty"`
	// +optional
	ImportChainData string `json:"importChainData,omitempty"`
	// +optional
	HealthPolicy *apiextensionsv1.JSON `json:"healthPolicy,omitempty"`
	// +optional
	UpgradeStrategy *UpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// +optional
	SeedRestore *SeedRestoreSpec `json:"seedRestore,omitempty"`
	// +optional
	SnapshotSchedule *SnapshotScheduleSpec `json:"snapshotSchedule,omitempty"`
	// +optional
	StartupGate *StartupGateSpec `json:"startupGate,omitempty"`
	// +optional
	AllowValidatorRemoval *bool `json:"allowValidatorRemoval,omitempty"`
}

// ImageSpec is the node image.
type ImageSpec struct {
	// +optional
	Repository string `json:"repository,omitempty"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +optional
	PullPolicy string `json:"pullPolicy,omitempty"`
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty"`
}

// StorageSpec is the data claim.
type StorageSpec struct {
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// +optional
	Size string `json:"size,omitempty"`
}

// ResourceSpec is the node container's resources.
type ResourceSpec struct {
	// +optional
	CPURequest string `json:"cpuRequest,omitempty"`
	// +optional
	CPULimit string `json:"cpuLimit,omitempty"`
	// +optional
	MemoryRequest string `json:"memoryRequest,omitempty"`
	// +optional
	MemoryLimit string `json:"memoryLimit,omitempty"`
}

// ServiceSpec shapes the Services.
type ServiceSpec struct {
	// +optional
	ServiceType string `json:"serviceType,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	IngressEnabled bool `json:"ingressEnabled,omitempty"`
	// +optional
	IngressHost string `json:"ingressHost,omitempty"`
	// +optional
	PerPodServices bool `json:"perPodServices,omitempty"`
}

// ChainTrackingSpec says which chains the node tracks.
type ChainTrackingSpec struct {
	// +optional
	TrackAllChains bool `json:"trackAllChains,omitempty"`
	// +optional
	TrackedChains []string `json:"trackedChains,omitempty"`
	// +optional
	Aliases []string `json:"aliases,omitempty"`
}

// PortSpec is the http and staking ports (9650 and 9651 by default).
type PortSpec struct {
	// +optional
	HTTP int32 `json:"http,omitempty"`
	// +optional
	Staking int32 `json:"staking,omitempty"`
}

// StakingSpec names the staking keys Secret (staker-<i>.crt, staker-<i>.key, signer-<i>.key).
type StakingSpec struct {
	SecretName string `json:"secretName"`
	// +optional
	KMS *KMSStakingSpec `json:"kms,omitempty"`
}

// KMSStakingSpec fills the staking Secret from KMS through a KMSSecret.
type KMSStakingSpec struct {
	// +optional
	HostAPI string `json:"hostApi,omitempty"`
	// +optional
	ProjectSlug string `json:"projectSlug,omitempty"`
	// +optional
	EnvSlug string `json:"envSlug,omitempty"`
	// +optional
	SecretsPath string `json:"secretsPath,omitempty"`
	// +optional
	Auth KMSAuthSpec `json:"auth"`
	// +optional
	ResyncInterval *uint64 `json:"resyncInterval,omitempty"`
}

// KMSAuthSpec is the KMS universal-auth credentials Secret.
type KMSAuthSpec struct {
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	CredentialsNamespace string `json:"credentialsNamespace,omitempty"`
}

// PluginSource fetches VM plugins from a bucket.
type PluginSource struct {
	Bucket string `json:"bucket"`
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	VMPlugins []VMPluginMapping `json:"vmPlugins,omitempty"`
	// +optional
	KMSConfigPath string `json:"kmsConfigPath,omitempty"`
}

// VMPluginMapping is one plugin object.
type VMPluginMapping struct {
	VMID      string `json:"vmId"`
	ObjectKey string `json:"objectKey"`
	// SHA256 is served beyond the luxfi operator: a plugin is only installed when it matches.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
}

// SecuritySpec is the pod security context (1000 each by default).
type SecuritySpec struct {
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`
}

// ChainRef is a chain the network runs.
type ChainRef struct {
	BlockchainID string `json:"blockchainId"`
	// +optional
	Alias string `json:"alias,omitempty"`
	// +optional
	TrackingID string `json:"trackingId,omitempty"`
}

// ConsensusSpec is the consensus flags.
type ConsensusSpec struct {
	// +optional
	SampleSize *uint32 `json:"sampleSize,omitempty"`
	// +optional
	QuorumSize *uint32 `json:"quorumSize,omitempty"`
	// +optional
	SybilProtectionEnabled *bool `json:"sybilProtectionEnabled,omitempty"`
	// +optional
	RequireValidatorToConnect *bool `json:"requireValidatorToConnect,omitempty"`
	// +optional
	AllowPrivateIPs *bool `json:"allowPrivateIps,omitempty"`
}

// GatewaySpec generates a KrakenD config.
type GatewaySpec struct {
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// +optional
	AutoRoutes bool `json:"autoRoutes,omitempty"`
	// +optional
	Host string `json:"host,omitempty"`
}

// BootstrapSpec is how validators find each other.
type BootstrapSpec struct {
	// +optional
	UseHostnames *bool `json:"useHostnames,omitempty"`
	// +optional
	ExternalIPs []string `json:"externalIps,omitempty"`
}

// APISpec is the node's API flags.
type APISpec struct {
	// +optional
	AdminEnabled *bool `json:"adminEnabled,omitempty"`
	// +optional
	MetricsEnabled *bool `json:"metricsEnabled,omitempty"`
	// +optional
	IndexEnabled *bool `json:"indexEnabled,omitempty"`
	// +optional
	HTTPAllowedHosts string `json:"httpAllowedHosts,omitempty"`
}

// UpgradeStrategy bounds restarts.
type UpgradeStrategy struct {
	// +optional
	StrategyType string `json:"strategyType,omitempty"`
	// +optional
	MaxUnavailable *uint32 `json:"maxUnavailable,omitempty"`
	// +optional
	HealthCheckBetweenRestarts *bool `json:"healthCheckBetweenRestarts,omitempty"`
	// +optional
	StabilizationSeconds *uint64 `json:"stabilizationSeconds,omitempty"`
}

// SeedRestoreSpec seeds an empty data dir.
type SeedRestoreSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	SourceType string `json:"sourceType,omitempty"`
	// +optional
	ObjectStoreURL string `json:"objectStoreUrl,omitempty"`
	// ExpectedHash (sha256) is served beyond the luxfi operator: an archive is only unpacked
	// when it matches.
	// +optional
	ExpectedHash string `json:"expectedHash,omitempty"`
	// +optional
	VolumeSnapshotName string `json:"volumeSnapshotName,omitempty"`
	// +optional
	DonorPVCName string `json:"donorPvcName,omitempty"`
	// +optional
	RestorePolicy string `json:"restorePolicy,omitempty"`
	// +optional
	MarkerPath string `json:"markerPath,omitempty"`
}

// SnapshotScheduleSpec uploads snapshots of one validator.
type SnapshotScheduleSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	IntervalSeconds *uint64 `json:"intervalSeconds,omitempty"`
	// +optional
	ObjectStoreEndpoint string `json:"objectStoreEndpoint,omitempty"`
	// +optional
	Bucket string `json:"bucket,omitempty"`
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// +optional
	AccessKey string `json:"accessKey,omitempty"`
	// SecretKeyRef names the Secret holding AWS_SECRET_ACCESS_KEY (the luxfi operator used the
	// value itself as the secret key).
	// +optional
	SecretKeyRef string `json:"secretKeyRef,omitempty"`
	// +optional
	SourceNodeIndex uint32 `json:"sourceNodeIndex,omitempty"`
	// +optional
	IncludeRLPExports *bool `json:"includeRlpExports,omitempty"`
	// +optional
	MaxRetained *uint32 `json:"maxRetained,omitempty"`
}

// StartupGateSpec waits for peers before the node starts.
type StartupGateSpec struct {
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// +optional
	MinPeers *uint32 `json:"minPeers,omitempty"`
	// +optional
	WaitForHealthyPeer bool `json:"waitForHealthyPeer,omitempty"`
	// +optional
	TimeoutSeconds *uint64 `json:"timeoutSeconds,omitempty"`
	// +optional
	CheckIntervalSeconds *uint64 `json:"checkIntervalSeconds,omitempty"`
	// +optional
	OnTimeout string `json:"onTimeout,omitempty"`
}

// LuxNetwork is the luxfi operator's network: validators, their Services and wiring.
//
// +kubebuilder:object:root=true
type LuxNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LuxNetworkSpec `json:"spec,omitempty"`
	// Status is schema-light: the luxfi operator's fields and this operator's phase,
	// conditions and observedGeneration.
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxNetworkList is a list of LuxNetwork.
//
// +kubebuilder:object:root=true
type LuxNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxNetwork `json:"items"`
}

// LuxChain is a chain declaration (the luxfi operator appended it to its network's chains). Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type LuxChain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LuxChainSpec `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxChainList is a list of LuxChain.
//
// +kubebuilder:object:root=true
type LuxChainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxChain `json:"items"`
}

// LuxIndexer is a chain indexer. Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type LuxIndexer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LuxIndexerSpec `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxIndexerList is a list of LuxIndexer.
//
// +kubebuilder:object:root=true
type LuxIndexerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxIndexer `json:"items"`
}

// LuxExplorer is an explorer UI. Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type LuxExplorer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LuxExplorerSpec `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxExplorerList is a list of LuxExplorer.
//
// +kubebuilder:object:root=true
type LuxExplorerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxExplorer `json:"items"`
}

// LuxGateway is an API gateway. Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type LuxGateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LuxGatewaySpec `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxGatewayList is a list of LuxGateway.
//
// +kubebuilder:object:root=true
type LuxGatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxGateway `json:"items"`
}

// LuxMPC is an MPC signer cluster. Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type LuxMPC struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LuxMPCSpec `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// LuxMPCList is a list of LuxMPC.
//
// +kubebuilder:object:root=true
type LuxMPCList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxMPC `json:"items"`
}

// KMSSecret is the secrets.lux.network KMSSecret an external KMS operator turns into Secrets. Served from its schema-light CRD; the spec is decoded typed (apps.go).
//
// +kubebuilder:object:root=true
type KMSSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// KMSSecretList is a list of KMSSecret.
//
// +kubebuilder:object:root=true
type KMSSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KMSSecret `json:"items"`
}
