package hip

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// MPC is MPC at the universe group; its spec is the canonical one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=mpcs,singular=mpc,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MPC struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.MPCSpec   `json:"spec,omitempty"`
	Status v1.MPCStatus `json:"status,omitempty"`
}

// MPCList is a list of MPC.
//
// +kubebuilder:object:root=true
type MPCList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MPC `json:"items"`
}

// NetworkSpec accepts both the HIP-414 shape and the v0.6 shape of a Network.
type NetworkSpec struct {
	// NetworkID is a number, or a string of digits as HIP-414 writes it.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+$')",message="networkID must be a non-negative number"
	NetworkID intstr.IntOrString `json:"networkID"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	EVMChainID int64 `json:"evmChainID,omitempty"`
	// Validators is the validator count (v0.6) or a validator template object (HIP-414).
	// It is free-form, which CEL cannot check; ToNetwork rejects another shape.
	// +optional
	Validators *apiextensionsv1.JSON `json:"validators,omitempty"`
	// +optional
	ValidatorTemplate *v1.ValidatorSpec `json:"validatorTemplate,omitempty"`
	// +optional
	Chains []NetworkChain `json:"chains,omitempty"`
	// +optional
	Indexer *v1.ComponentSpec `json:"indexer,omitempty"`
	// +optional
	Bridge *v1.ComponentSpec `json:"bridge,omitempty"`
	// +optional
	Bootnode *v1.ComponentSpec `json:"bootnode,omitempty"`
	// +optional
	Explorer *v1.NetworkExplorerSpec `json:"explorer,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
}

// NetworkChain is a chain of a HIP-era Network; HIP-414 names it and gives its genesis.
type NetworkChain struct {
	// +optional
	BlockchainID string `json:"blockchainID,omitempty"`
	// +optional
	VMID string `json:"vmID,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Genesis string `json:"genesis,omitempty"`
}

// Network is Network at the universe group.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=networks,singular=network,categories=universe
// +kubebuilder:printcolumn:name="NetworkID",type=string,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Network struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkSpec      `json:"spec,omitempty"`
	Status v1.NetworkStatus `json:"status,omitempty"`
}

// NetworkList is a list of Network.
//
// +kubebuilder:object:root=true
type NetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Network `json:"items"`
}

// ChainSpec is the spec of a HIP-era Chain.
type ChainSpec struct {
	Network string         `json:"network"`
	Chain   ChainParameter `json:"chain"`
}

// ChainParameter accepts vmId/networkId (v0.6) and vmID/subnetID (HIP-415).
// +kubebuilder:validation:XValidation:rule="has(self.vmId) || has(self.vmID)",message="chain.vmId (or vmID) is required"
type ChainParameter struct {
	Name string `json:"name"`
	// +optional
	VMID string `json:"vmId,omitempty"`
	// LegacyVMID is the HIP-415 spelling of VMID.
	// +optional
	LegacyVMID string `json:"vmID,omitempty"`
	Genesis    string `json:"genesis"`
	// +optional
	NetworkID string `json:"networkId,omitempty"`
	// SubnetID is the HIP-415 name of the network the chain runs on.
	// +optional
	SubnetID string `json:"subnetID,omitempty"`
}

// Chain is Chain at the universe group.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=chains,singular=chain,categories=universe
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Chain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ChainSpec        `json:"spec,omitempty"`
	Status v1.NetworkStatus `json:"status,omitempty"`
}

// ChainList is a list of Chain.
//
// +kubebuilder:object:root=true
type ChainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Chain `json:"items"`
}

// Validator is Validator at the universe group; its spec is the canonical one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=validators,singular=validator,categories=universe
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Validator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.ValidatorKindSpec `json:"spec,omitempty"`
	Status v1.ServiceStatus     `json:"status,omitempty"`
}

// ValidatorList is a list of Validator.
//
// +kubebuilder:object:root=true
type ValidatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Validator `json:"items"`
}

// SubnetSpec is the spec of a v0.3-era Subnet (HIP-417).
type SubnetSpec struct {
	Network string `json:"network"`
	// +optional
	SubnetID string `json:"subnetId,omitempty"`
	// +optional
	Chains []NetworkChain `json:"chains,omitempty"`
}

// Subnet groups chains of a network (a no-op Kind; it has no canonical successor).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=subnets,singular=subnet,categories=universe
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.spec.network`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Subnet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SubnetSpec `json:"spec,omitempty"`
	Status v1.Status  `json:"status,omitempty"`
}

// SubnetList is a list of Subnet.
//
// +kubebuilder:object:root=true
type SubnetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Subnet `json:"items"`
}

// Indexer is Indexer at the universe group; its spec is a ServiceSpec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=indexers,singular=indexer,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.repository`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Indexer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.ServiceSpec   `json:"spec,omitempty"`
	Status v1.ServiceStatus `json:"status,omitempty"`
}

// IndexerList is a list of Indexer.
//
// +kubebuilder:object:root=true
type IndexerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Indexer `json:"items"`
}

// Explorer is Explorer at the universe group; its spec is a ServiceSpec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=explorers,singular=explorer,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.repository`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Explorer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.ServiceSpec   `json:"spec,omitempty"`
	Status v1.ServiceStatus `json:"status,omitempty"`
}

// ExplorerList is a list of Explorer.
//
// +kubebuilder:object:root=true
type ExplorerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Explorer `json:"items"`
}

// LuxRuntime is LuxRuntime at the universe group, where the v0.6 bundles put it; its spec is
// the canonical one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=luxruntimes,singular=luxruntime,categories=universe
// +kubebuilder:printcolumn:name="NetworkID",type=integer,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Validators",type=integer,JSONPath=`.status.activeValidators`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LuxRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.LuxRuntimeSpec   `json:"spec,omitempty"`
	Status v1.LuxRuntimeStatus `json:"status,omitempty"`
}

// LuxRuntimeList is a list of LuxRuntime.
//
// +kubebuilder:object:root=true
type LuxRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LuxRuntime `json:"items"`
}

// NodeFleet is NodeFleet at the universe group, where the v0.6 bundles put it; its spec is
// the canonical one.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodefleets,singular=nodefleet,categories=universe
// +kubebuilder:printcolumn:name="NetworkID",type=integer,JSONPath=`.spec.networkID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeFleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.NodeFleetSpec   `json:"spec,omitempty"`
	Status v1.NodeFleetStatus `json:"status,omitempty"`
}

// NodeFleetList is a list of NodeFleet.
//
// +kubebuilder:object:root=true
type NodeFleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFleet `json:"items"`
}
