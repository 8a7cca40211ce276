package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MPCSpec is the spec of an MPC signer cluster.
// +kubebuilder:validation:XValidation:rule="self.replicas >= self.threshold + 1",message="replicas must be at least threshold+1"
type MPCSpec struct {
	Image ImageSpec `json:"image"`
	// +kubebuilder:validation:Minimum=1
	Replicas int32 `json:"replicas"`
	// +kubebuilder:validation:Minimum=1
	Threshold int32 `json:"threshold"`
	// P2PPort is 4000 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	P2PPort int32 `json:"p2pPort,omitempty"`
	// APIPort is 8080 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	APIPort int32 `json:"apiPort,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Dashboard *ComponentSpec `json:"dashboard,omitempty"`
	// +optional
	Cache *ComponentSpec `json:"cache,omitempty"`
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// ImagePullSecrets are Secret names.
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// MPCStatus is the status of MPC.
type MPCStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyNodes int32 `json:"readyNodes,omitempty"`
	// +optional
	KeysGenerated bool `json:"keysGenerated,omitempty"`
}

// MPC runs a threshold-signing cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=mpcs,singular=mpc,shortName=hmpc,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodes`
// +kubebuilder:printcolumn:name="Threshold",type=integer,JSONPath=`.spec.threshold`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MPC struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MPCSpec   `json:"spec,omitempty"`
	Status MPCStatus `json:"status,omitempty"`
}

// MPCList is a list of MPC.
//
// +kubebuilder:object:root=true
type MPCList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MPC `json:"items"`
}

// NetworkSpec is the spec of a validator network.
type NetworkSpec struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	NetworkID int64 `json:"networkID"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	EVMChainID int64 `json:"evmChainID,omitempty"`
	// Validators is the number of validators; 0 materializes nothing.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Validators int32 `json:"validators,omitempty"`
	// +optional
	Chains []NetworkChain `json:"chains,omitempty"`
	// ValidatorTemplate is required when validators > 0.
	// +optional
	ValidatorTemplate *ValidatorSpec `json:"validatorTemplate,omitempty"`
	// +optional
	Indexer *ComponentSpec `json:"indexer,omitempty"`
	// +optional
	Bridge *ComponentSpec `json:"bridge,omitempty"`
	// +optional
	Bootnode *ComponentSpec `json:"bootnode,omitempty"`
	// +optional
	Explorer *NetworkExplorerSpec `json:"explorer,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// NetworkChain is a chain a network runs.
type NetworkChain struct {
	BlockchainID string `json:"blockchainID"`
	// +optional
	VMID string `json:"vmID,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}

// NetworkExplorerSpec is the block explorer of a network.
type NetworkExplorerSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	BackendImage string `json:"backendImage,omitempty"`
	// +optional
	FrontendImage string `json:"frontendImage,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	PostgresStorage *StorageSpec `json:"postgresStorage,omitempty"`
}

// ValidatorSpec is the shape of a validator StatefulSet.
type ValidatorSpec struct {
	Image ImageSpec `json:"image"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	BootstrapNodes []string `json:"bootstrapNodes,omitempty"`
	// StakingPort is 9631 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	StakingPort int32 `json:"stakingPort,omitempty"`
	// HTTPPort is 9630 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTPPort int32 `json:"httpPort,omitempty"`
}

// NetworkStatus is the status of Network and Chain.
type NetworkStatus struct {
	Status `json:",inline"`
	// +kubebuilder:validation:Enum=L2;Anchored;Independent
	// +optional
	Mode string `json:"mode,omitempty"`
	// +optional
	ActiveValidators int32 `json:"activeValidators,omitempty"`
	// +optional
	BootstrapComplete bool `json:"bootstrapComplete,omitempty"`
	// +optional
	ChainCount int32 `json:"chainCount,omitempty"`
}

// Network runs the validators of a network.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=networks,singular=network,shortName=hnet,categories=universe;bootnode
// +kubebuilder:printcolumn:name="NetworkID",type=integer,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Validators",type=integer,JSONPath=`.status.activeValidators`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Network struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkSpec   `json:"spec,omitempty"`
	Status NetworkStatus `json:"status,omitempty"`
}

// NetworkList is a list of Network.
//
// +kubebuilder:object:root=true
type NetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Network `json:"items"`
}

// ChainSpec is the spec of Chain.
type ChainSpec struct {
	// Network names the Network CR.
	Network string         `json:"network"`
	Chain   ChainParameter `json:"chain"`
}

// ChainParameter defines a chain.
type ChainParameter struct {
	Name    string `json:"name"`
	VMID    string `json:"vmId"`
	Genesis string `json:"genesis"`
	// +optional
	NetworkID string `json:"networkId,omitempty"`
}

// Chain declares a chain on a network (no objects are materialized).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=chains,singular=chain,shortName=chain,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Chain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChainSpec     `json:"spec,omitempty"`
	Status NetworkStatus `json:"status,omitempty"`
}

// ChainList is a list of Chain.
//
// +kubebuilder:object:root=true
type ChainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Chain `json:"items"`
}

// ValidatorKindSpec is the spec of Validator.
type ValidatorKindSpec struct {
	Network string        `json:"network"`
	Spec    ValidatorSpec `json:"spec"`
}

// Validator declares a validator of a network (no objects are materialized).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=validators,singular=validator,shortName=val,categories=universe;bootnode
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Validator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValidatorKindSpec `json:"spec,omitempty"`
	Status ServiceStatus     `json:"status,omitempty"`
}

// ValidatorList is a list of Validator.
//
// +kubebuilder:object:root=true
type ValidatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Validator `json:"items"`
}
