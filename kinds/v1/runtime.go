package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The BitcoinRuntime, EthereumRuntime and SolanaRuntime field names come from
// crd-contract.json; their sub-shapes mirror bootnode/operator api/v1, which no saved source
// shows, so the nested fields below are this package's own and conservative.

// NodeComponent is a container of a node runtime.
type NodeComponent struct {
	// +optional
	Client string `json:"client,omitempty"`
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// BitcoinRuntimeSpec is the spec of a Bitcoin node.
type BitcoinRuntimeSpec struct {
	// +kubebuilder:validation:Enum=mainnet;testnet;testnet4;signet;regtest
	// +optional
	Network string `json:"network,omitempty"`
	// +optional
	NodeImage *ImageSpec `json:"nodeImage,omitempty"`
	// +optional
	P2P *BitcoinP2P `json:"p2p,omitempty"`
	// +optional
	Pruning *BitcoinPruning `json:"pruning,omitempty"`
	// RPCAuth names the Secret holding RPC credentials.
	// +optional
	RPCAuth *SecretReference `json:"rpcAuth,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	RPCPort int32 `json:"rpcPort,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	TxIndex bool `json:"txIndex,omitempty"`
	// +optional
	Indexer *NodeComponent `json:"indexer,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// BitcoinP2P configures peer-to-peer networking.
type BitcoinP2P struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxConnections int32 `json:"maxConnections,omitempty"`
	// +optional
	AddNodes []string `json:"addNodes,omitempty"`
}

// BitcoinPruning keeps only recent blocks.
type BitcoinPruning struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	TargetMB int64 `json:"targetMB,omitempty"`
}

// BitcoinRuntime runs a Bitcoin node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=bitcoinruntimes,singular=bitcoinruntime,shortName=btcrt,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BitcoinRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BitcoinRuntimeSpec `json:"spec,omitempty"`
	Status ReplicaStatus      `json:"status,omitempty"`
}

// BitcoinRuntimeList is a list of BitcoinRuntime.
//
// +kubebuilder:object:root=true
type BitcoinRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BitcoinRuntime `json:"items"`
}

// EthereumRuntimeSpec is the spec of an Ethereum execution + consensus pair.
type EthereumRuntimeSpec struct {
	// +optional
	Network string `json:"network,omitempty"`
	// +optional
	Execution *NodeComponent `json:"execution,omitempty"`
	// +optional
	Consensus *NodeComponent `json:"consensus,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ELRPCPort int32 `json:"elRpcPort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	CLRPCPort int32 `json:"clRpcPort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	AuthRPCPort int32 `json:"authRpcPort,omitempty"`
	// +optional
	FeeRecipient string `json:"feeRecipient,omitempty"`
	// JWTSecret names the Secret holding the engine API JWT.
	// +optional
	JWTSecret string `json:"jwtSecret,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// EthereumRuntime runs an Ethereum node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ethereumruntimes,singular=ethereumruntime,shortName=ethrt,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EthereumRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EthereumRuntimeSpec `json:"spec,omitempty"`
	Status ReplicaStatus       `json:"status,omitempty"`
}

// EthereumRuntimeList is a list of EthereumRuntime.
//
// +kubebuilder:object:root=true
type EthereumRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EthereumRuntime `json:"items"`
}

// SolanaRuntimeSpec is the spec of a Solana validator or RPC node.
type SolanaRuntimeSpec struct {
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// +optional
	NodeImage *ImageSpec `json:"nodeImage,omitempty"`
	// IdentityKeypair names the Secret holding the identity keypair.
	// +optional
	IdentityKeypair string `json:"identityKeypair,omitempty"`
	// +optional
	VoteAccount string `json:"voteAccount,omitempty"`
	// +optional
	EntryPoints []string `json:"entryPoints,omitempty"`
	// +optional
	RPCEnabled bool `json:"rpcEnabled,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	RPCPort int32 `json:"rpcPort,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	GossipPort int32 `json:"gossipPort,omitempty"`
	// +optional
	Ledger *StorageSpec `json:"ledger,omitempty"`
	// +optional
	Snapshot *SolanaSnapshot `json:"snapshot,omitempty"`
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// SolanaSnapshot configures snapshot fetching.
type SolanaSnapshot struct {
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
}

// SolanaRuntime runs a Solana node.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=solanaruntimes,singular=solanaruntime,shortName=solrt,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SolanaRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SolanaRuntimeSpec `json:"spec,omitempty"`
	Status ReplicaStatus     `json:"status,omitempty"`
}

// SolanaRuntimeList is a list of SolanaRuntime.
//
// +kubebuilder:object:root=true
type SolanaRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SolanaRuntime `json:"items"`
}
