package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppSpec is a ServiceSpec with a role that picks what the App materializes, plus the
// role-specific fields of the datastore and ingress roles. Unknown fields are preserved: the
// contract declares App free-form, and role projections carry them to the delegate spec.
//
// +kubebuilder:pruning:PreserveUnknownFields
type AppSpec struct {
	// Role selects the profile: empty, generic, service and the Service-shaped roles give the
	// Service profile; sql, kv, docdb, s3 and datastore the datastore profile with the engine
	// forced by the role; ingress the Ingress profile; the rest are delegated or no-ops.
	// +kubebuilder:validation:Enum="";generic;service;llm;iam;kms;explorer;function;indexer;observability;queue;datastore;docdb;kv;s3;sql;base;gateway;ingress;static;spa;mpc;chain;network;validator;dns;managedDatabase;nodeFleet;luxRuntime;agentDeployment;node
	// +optional
	Role string `json:"role,omitempty"`

	ServiceSpec `json:",inline"`

	// Tag is accepted for App CRs that carry the image tag at the top level.
	// +optional
	Tag string `json:"tag,omitempty"`
	// Type is the retired datastore discriminator; the role decides the engine.
	// +optional
	Type string `json:"type,omitempty"`
	// Storage is read by the datastore roles.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// +optional
	ServiceAliases []string `json:"serviceAliases,omitempty"`
	// Domains is read by the ingress role.
	// +optional
	Domains []IngressDomain `json:"domains,omitempty"`
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
}

// App declares one workload whose role decides its profile. An App supersedes a Service CR
// of the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=apps,singular=app,shortName=app,categories=universe
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.repository`
// +kubebuilder:printcolumn:name="Upgrade",type=string,JSONPath=`.status.upgrade.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.upgrade.targetImage`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AppSpec       `json:"spec,omitempty"`
	Status ServiceStatus `json:"status,omitempty"`
}

// AppList is a list of App.
//
// +kubebuilder:object:root=true
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}
