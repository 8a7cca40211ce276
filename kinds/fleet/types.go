package fleet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSpec registers one cluster for one org. There is no kubeconfig, Secret or credential
// field: the credential is found at the location derived from the org and the name.
type ClusterSpec struct {
	// Org is the org the cluster is registered for; a registration is looked up in its org's
	// index only. It becomes a segment of the credential's path, so '/', '..' and more than 63
	// characters are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Org string `json:"org"`
	// Provider says where the cluster runs (aws, gcp, digitalocean, bare-metal, ...);
	// informational.
	// +optional
	Provider string `json:"provider,omitempty"`
	// Endpoint is the apiserver URL the credential must point at; a credential whose server
	// differs is refused, so a rotated kubeconfig cannot move the registration elsewhere.
	// +kubebuilder:validation:Pattern=`^https://`
	Endpoint string `json:"endpoint"`
	// Nodes, GPUs: the cluster's declared size; informational.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// +optional
	GPUs *GPUs `json:"gpus,omitempty"`
	// Namespaces bounds a registration made with a scoped credential on a shared cluster: a
	// namespace outside it is refused, never silently narrowed. Empty means the whole cluster.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
	// Default marks the org's cluster a CR without a cluster goes to. Not acted on yet: the
	// git layout (orgs/<org>/clusters/<name>/) always names the cluster.
	// +optional
	Default bool `json:"default,omitempty"`
}

// GPUs counts a cluster's accelerators by vendor.
type GPUs struct {
	// +optional
	Nvidia int32 `json:"nvidia,omitempty"`
	// +optional
	AMD int32 `json:"amd,omitempty"`
}

// ClusterStatus is what the fleet observed of the cluster.
type ClusterStatus struct {
	// Registered is when the fleet first reached the cluster with its credential (its
	// /version answered): written by operator run --fleet, with condition Reached.
	// +optional
	Registered *metav1.Time `json:"registered,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Cluster is one registered cluster of the fleet.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,path=clusters,singular=cluster,categories=universe
// +kubebuilder:printcolumn:name="Org",type=string,JSONPath=`.spec.org`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Cluster.
//
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
