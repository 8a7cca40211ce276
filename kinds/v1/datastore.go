package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DBSpec is the spec shared by the datastore Kinds: a StatefulSet with one volume claim
// template, a ClusterIP Service, a headless Service and one Service per alias.
type DBSpec struct {
	// Image defaults per engine.
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32      `json:"replicas,omitempty"`
	Storage  StorageSpec `json:"storage"`
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
	KMSSecrets []KMSSecretRef `json:"kmsSecrets,omitempty"`
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`
	// ServiceAliases are extra ClusterIP Services with the same ports and selector.
	// +optional
	ServiceAliases []string `json:"serviceAliases,omitempty"`
	// +listType=atomic
	// +optional
	Ports []ServicePort `json:"ports,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
	// +optional
	PartOf string `json:"partOf,omitempty"`
	// +optional
	FSGroup *int64 `json:"fsGroup,omitempty"`
	// +kubebuilder:validation:XValidation:rule="!has(self.fsGroupChangePolicy) || self.fsGroupChangePolicy in ['OnRootMismatch', 'Always']",message="securityContext.fsGroupChangePolicy must be OnRootMismatch or Always"
	// +kubebuilder:validation:XValidation:rule="!has(self.seccompProfile) || self.seccompProfile.type != 'Localhost' || has(self.seccompProfile.localhostProfile)",message="securityContext.seccompProfile.localhostProfile is required when type is Localhost"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`
	// +optional
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
}

// Engine is the database engine a datastore CR runs.
type Engine string

// The engines. EngineMinio is the legacy name of EngineS3.
const (
	EnginePostgreSQL Engine = "postgresql"
	EngineValkey     Engine = "valkey"
	EngineDocDB      Engine = "docdb"
	EngineS3         Engine = "s3"
	EngineMinio      Engine = "minio"
	EngineNATS       Engine = "nats"
	EngineDatastore  Engine = "datastore"
)

// DatastoreSpec is the DBSpec of Datastore, SQL, KV, DocDB and S3 plus the retired type
// discriminator that HIP-era and v1alpha1 CRs still carry. For SQL, KV, DocDB and S3 the Kind
// fixes the engine and type is ignored; a Datastore CR uses type when set (see
// Datastore.Engine).
type DatastoreSpec struct {
	DBSpec `json:",inline"`
	// Type is the retired engine discriminator (HIP-401..405, HanzoDatastore). The Rust
	// operator ran any other value as a generic datastore, so it is not a closed set here;
	// HanzoDatastore keeps its enum.
	// +optional
	Type Engine `json:"type,omitempty"`
}

// Engine returns the engine of a Datastore CR: spec.type when set, else datastore.
func (d *Datastore) Engine() Engine {
	if d.Spec.Type != "" {
		return d.Spec.Type
	}
	return EngineDatastore
}

// Datastore runs a datastore whose engine is spec.type (legacy) or the analytics datastore.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=datastores,singular=datastore,shortName=hds,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Datastore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatastoreSpec   `json:"spec,omitempty"`
	Status DatastoreStatus `json:"status,omitempty"`
}

// DatastoreList is a list of Datastore.
//
// +kubebuilder:object:root=true
type DatastoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Datastore `json:"items"`
}

// SQL runs PostgreSQL.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=sqls,singular=sql,shortName=sql,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SQL struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatastoreSpec   `json:"spec,omitempty"`
	Status DatastoreStatus `json:"status,omitempty"`
}

// SQLList is a list of SQL.
//
// +kubebuilder:object:root=true
type SQLList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SQL `json:"items"`
}

// KV runs Valkey.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=kvs,singular=kv,shortName=kv,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KV struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatastoreSpec   `json:"spec,omitempty"`
	Status DatastoreStatus `json:"status,omitempty"`
}

// KVList is a list of KV.
//
// +kubebuilder:object:root=true
type KVList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KV `json:"items"`
}

// DocDB runs the document database (FerretDB over PostgreSQL).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=docdbs,singular=docdb,shortName=docdb,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DocDB struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatastoreSpec   `json:"spec,omitempty"`
	Status DatastoreStatus `json:"status,omitempty"`
}

// DocDBList is a list of DocDB.
//
// +kubebuilder:object:root=true
type DocDBList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DocDB `json:"items"`
}

// S3 runs the S3-compatible object store.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=s3s,singular=s3,shortName=s3,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type S3 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DatastoreSpec   `json:"spec,omitempty"`
	Status DatastoreStatus `json:"status,omitempty"`
}

// S3List is a list of S3.
//
// +kubebuilder:object:root=true
type S3List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []S3 `json:"items"`
}

// ManagedDatabaseSpec is a DBSpec whose engine is chosen by a field.
type ManagedDatabaseSpec struct {
	// Engine is postgresql when unset; minio is the legacy name of s3.
	// +kubebuilder:validation:Enum=postgresql;valkey;docdb;s3;minio;datastore
	// +optional
	Engine Engine `json:"engine,omitempty"`
	DBSpec `json:",inline"`
}

// ManagedDatabase is a tenant database reconciled through the datastore path.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=manageddatabases,singular=manageddatabase,shortName=mdb,categories=universe
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManagedDatabase struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedDatabaseSpec `json:"spec,omitempty"`
	Status DatastoreStatus     `json:"status,omitempty"`
}

// ManagedDatabaseList is a list of ManagedDatabase.
//
// +kubebuilder:object:root=true
type ManagedDatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedDatabase `json:"items"`
}
