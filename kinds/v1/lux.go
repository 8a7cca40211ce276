package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LuxRuntimeSpec is the spec of a Lux-family node runtime.
type LuxRuntimeSpec struct {
	// +kubebuilder:validation:Enum=luxd;hanzod;zood
	// +optional
	Engine string `json:"engine,omitempty"`
	// +optional
	NetworkName string `json:"networkName,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	NetworkID int32 `json:"networkID,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Validators *int32 `json:"validators,omitempty"`
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Chains []LuxChainSpec `json:"chains,omitempty"`
	// +optional
	GenesisConfigMap string `json:"genesisConfigMap,omitempty"`
	// +optional
	PluginSource *PluginSource `json:"pluginSource,omitempty"`
	// +optional
	TenantImports []TenantImport `json:"tenantImports,omitempty"`
	// +optional
	ExportSchedules []ExportSchedule `json:"exportSchedules,omitempty"`
	// +optional
	TenantNetworks []TenantNetwork `json:"tenantNetworks,omitempty"`
	// +optional
	SeedRestore *SeedRestore `json:"seedRestore,omitempty"`
	// +optional
	WipeOnRecreate *WipeOnRecreate `json:"wipeOnRecreate,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	StakingPort int32 `json:"stakingPort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTPPort int32 `json:"httpPort,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// +optional
	Replication *Replication `json:"replication,omitempty"`
	// +optional
	Staking *Staking `json:"staking,omitempty"`

	// The fields below are served beyond crd-contract.json (kinds.Extensions): they carry what a
	// lux.network/v1alpha1 LuxNetwork says and the contract's LuxRuntime cannot.

	// UpgradeConfigMap names a ConfigMap whose upgrade.json is the node's --upgrade-file.
	// +optional
	UpgradeConfigMap string `json:"upgradeConfigMap,omitempty"`
	// NodeConfigMap names a ConfigMap whose config.json is the node's --config-file (flags the
	// operator sets win over it).
	// +optional
	NodeConfigMap string `json:"nodeConfigMap,omitempty"`
	// TrackAllChains passes --track-all-chains instead of --track-chains.
	// +optional
	TrackAllChains bool `json:"trackAllChains,omitempty"`
	// NodeFlags are further node flags (name without the leading dashes to value), passed in
	// name order. A flag the operator sets itself is refused.
	// +optional
	NodeFlags map[string]string `json:"nodeFlags,omitempty"`
	// +optional
	UpgradeStrategy *LuxUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// +optional
	StartupGate *LuxStartupGate `json:"startupGate,omitempty"`
}

// LuxUpgradeStrategy bounds a rollout of the validators.
type LuxUpgradeStrategy struct {
	// MaxUnavailable is the most validators down at once during a rollout and in the PDB;
	// default 1.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`
}

// LuxStartupGate holds a validator until enough peers answer on their staking port.
type LuxStartupGate struct {
	// Enabled defaults to true when there is more than one validator.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MinPeers is the number of other validators to wait for (capped at validators-1); default 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinPeers *int32 `json:"minPeers,omitempty"`
	// TimeoutSeconds is how long to wait; default 300.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// CheckIntervalSeconds is the pause between rounds; default 5.
	// +kubebuilder:validation:Minimum=1
	// +optional
	CheckIntervalSeconds *int32 `json:"checkIntervalSeconds,omitempty"`
	// OnTimeout is StartAnyway (default) or Fail.
	// +kubebuilder:validation:Enum=StartAnyway;Fail
	// +optional
	OnTimeout string `json:"onTimeout,omitempty"`
}

// LuxChainSpec is a chain a runtime tracks.
type LuxChainSpec struct {
	// +kubebuilder:validation:MinLength=1
	ChainID string `json:"chainID"`
	// +optional
	VMID string `json:"vmID,omitempty"`
	// +optional
	GenesisConfigMap string `json:"genesisConfigMap,omitempty"`
	// +optional
	BootstrapBlocking *bool `json:"bootstrapBlocking,omitempty"`
	// +optional
	Component string `json:"component,omitempty"`
	// Alias is an alias of the chain (--chain-aliases-file-content); served beyond the contract.
	// +optional
	Alias string `json:"alias,omitempty"`
	// TrackingID is the ID --track-chains names for this chain (its subnet), when it is not
	// chainID; served beyond the contract.
	// +optional
	TrackingID string `json:"trackingID,omitempty"`
}

// PluginSource fetches VM plugins before the node starts.
type PluginSource struct {
	// +optional
	Bucket string `json:"bucket,omitempty"`
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// +optional
	PluginDir string `json:"pluginDir,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	VMPlugins []VMPlugin `json:"vmPlugins,omitempty"`
}

// VMPlugin is one plugin object.
type VMPlugin struct {
	VMID      string `json:"vmID"`
	ObjectKey string `json:"objectKey"`
	// +optional
	ChainIDs []string `json:"chainIDs,omitempty"`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
}

// TenantImport imports a tenant chain.
type TenantImport struct {
	Tenant       string `json:"tenant"`
	ChainAlias   string `json:"chainAlias"`
	BlockchainID string `json:"blockchainID"`
	SourceURL    string `json:"sourceURL"`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
}

// ExportSchedule exports a chain on a schedule.
type ExportSchedule struct {
	Name        string            `json:"name"`
	ChainAlias  string            `json:"chainAlias"`
	Schedule    string            `json:"schedule"`
	Destination ExportDestination `json:"destination"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	FromHeight int64 `json:"fromHeight,omitempty"`
	// +optional
	ToHeight string `json:"toHeight,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// ExportDestination is a PVC or an S3 bucket.
type ExportDestination struct {
	// +optional
	PVC *PVCDestination `json:"pvc,omitempty"`
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`
}

// PVCDestination writes exports to a claim.
type PVCDestination struct {
	ClaimName string `json:"claimName"`
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// S3Destination writes exports to a bucket.
type S3Destination struct {
	Endpoint             string                      `json:"endpoint"`
	Bucket               string                      `json:"bucket"`
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// +optional
	KeyPrefix string `json:"keyPrefix,omitempty"`
}

// TenantNetwork is a tenant network anchored on this one.
type TenantNetwork struct {
	ParentNetworkID string `json:"parentNetworkId"`
	// +optional
	Chains []TenantChain `json:"chains,omitempty"`
}

// TenantChain is a chain of a tenant network.
type TenantChain struct {
	BlockchainID string                      `json:"blockchainId"`
	VMID         string                      `json:"vmId"`
	ConfigMapRef corev1.LocalObjectReference `json:"configMapRef"`
}

// SeedRestore seeds the data directory before first start.
type SeedRestore struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Sources []SeedSource `json:"sources,omitempty"`
	// +optional
	DataDir string `json:"dataDir,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
}

// SeedSource is one archive to restore.
type SeedSource struct {
	Type string `json:"type"`
	URL  string `json:"url"`
	// +optional
	ExpectedHash string `json:"expectedHash,omitempty"`
}

// WipeOnRecreate says what to wipe when the workload is recreated.
type WipeOnRecreate struct {
	// +optional
	Scope string `json:"scope,omitempty"`
}

// Replication streams node data to S3.
type Replication struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	S3Endpoint string `json:"s3Endpoint,omitempty"`
	// +optional
	S3Bucket string `json:"s3Bucket,omitempty"`
	// +optional
	S3Path string `json:"s3Path,omitempty"`
	// +optional
	S3Region string `json:"s3Region,omitempty"`
	// +optional
	S3UseSSL bool `json:"s3UseSsl,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	AgeIdentitySecret string `json:"ageIdentitySecret,omitempty"`
	// +optional
	AgeRecipient string `json:"ageRecipient,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	SnapshotIntervalSeconds int64 `json:"snapshotIntervalSeconds,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	IncrementalIntervalSeconds int64 `json:"incrementalIntervalSeconds,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	SourceNodeIndex *int32 `json:"sourceNodeIndex,omitempty"`
}

// Staking names the staking key material.
type Staking struct {
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// +optional
	KMS *KMSSecretRef `json:"kms,omitempty"`
}

// LuxRuntimeStatus is the status of LuxRuntime.
type LuxRuntimeStatus struct {
	Status `json:",inline"`
	// +optional
	ActiveValidators int32 `json:"activeValidators,omitempty"`
	// +optional
	ChainStatuses []ChainStatus `json:"chainStatuses,omitempty"`
}

// ChainStatus reports one chain of a runtime.
type ChainStatus struct {
	Alias string `json:"alias"`
	Phase string `json:"phase"`
	// +optional
	BlockchainID string `json:"blockchainId,omitempty"`
	// +optional
	LastObserved *metav1.Time `json:"lastObserved,omitempty"`
}

// LuxRuntime runs Lux-family nodes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=luxruntimes,singular=luxruntime,shortName=lrt,categories=universe;bootnode
// +kubebuilder:printcolumn:name="NetworkID",type=integer,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Validators",type=integer,JSONPath=`.status.activeValidators`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LuxRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LuxRuntimeSpec   `json:"spec,omitempty"`
	Status LuxRuntimeStatus `json:"status,omitempty"`
}

// LuxRuntimeList is a list of LuxRuntime.
//
// +kubebuilder:object:root=true
type LuxRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxRuntime `json:"items"`
}

// NodeFleetSpec is the spec of an archive node plus state-sync replicas.
type NodeFleetSpec struct {
	// +optional
	NetworkName string `json:"networkName,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	NetworkID int32 `json:"networkID,omitempty"`
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// +optional
	Chains []FleetChain `json:"chains,omitempty"`
	// +optional
	Archive *ArchiveSpec `json:"archive,omitempty"`
	// +optional
	StateSync *StateSyncSpec `json:"stateSync,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTPPort int32 `json:"httpPort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	StakingPort int32 `json:"stakingPort,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// FleetChain is a chain a fleet tracks.
type FleetChain struct {
	Alias string `json:"alias"`
	// +optional
	VMID string `json:"vmID,omitempty"`
}

// ArchiveSpec is the archive node.
type ArchiveSpec struct {
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	AncientStore *AncientStore `json:"ancientStore,omitempty"`
	// +optional
	HostAffinity *HostAffinity `json:"hostAffinity,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	SnapshotCacheMB int32 `json:"snapshotCacheMB,omitempty"`
}

// AncientStore is the cold store of an archive node.
type AncientStore struct {
	// +optional
	Backend string `json:"backend,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxTableSize int64 `json:"maxTableSize,omitempty"`
}

// HostAffinity pins pods to a node.
type HostAffinity struct {
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// StateSyncSpec is the state-sync replica set.
type StateSyncSpec struct {
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	HostAffinity *HostAffinity `json:"hostAffinity,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	StateSyncMinBlocks int32 `json:"stateSyncMinBlocks,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	SnapshotCacheMB int32 `json:"snapshotCacheMB,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	BlockCacheMB int32 `json:"blockCacheMB,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	TrieCacheMB int32 `json:"trieCacheMB,omitempty"`
	// +optional
	LowMemory *bool `json:"lowMemory,omitempty"`
}

// NodeFleetStatus is the status of NodeFleet.
type NodeFleetStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	ArchiveReady bool `json:"archiveReady,omitempty"`
}

// NodeFleet runs an archive node and state-sync replicas.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodefleets,singular=nodefleet,shortName=fleet,categories=universe;bootnode
// +kubebuilder:printcolumn:name="NetworkID",type=integer,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeFleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeFleetSpec   `json:"spec,omitempty"`
	Status NodeFleetStatus `json:"status,omitempty"`
}

// NodeFleetList is a list of NodeFleet.
//
// +kubebuilder:object:root=true
type NodeFleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFleet `json:"items"`
}
