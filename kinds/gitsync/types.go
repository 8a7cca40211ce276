package gitsync

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitSyncSpec is empty: the object is a status only, written by the git sweep.
type GitSyncSpec struct{}

// HealthCounts counts the applied objects by kstatus.
type HealthCounts struct {
	// +optional
	Current int32 `json:"current,omitempty"`
	// +optional
	InProgress int32 `json:"inProgress,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	Terminating int32 `json:"terminating,omitempty"`
	// +optional
	NotFound int32 `json:"notFound,omitempty"`
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
}

// PathHealth is one git path that is not Current: its worst health and the first object
// at it.
type PathHealth struct {
	Path   string `json:"path"`
	Health string `json:"health"`
	// +optional
	Object string `json:"object,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// GitSyncStatus is what the git sweep last saw: the revision it applied, the health
// counts, the paths that are not Current (at most 20) and the conditions.
type GitSyncStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Health HealthCounts `json:"health,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=20
	UnhealthyPaths []PathHealth `json:"unhealthyPaths,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GitSync is the git path's status object of one universe.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=gitsyncs,singular=gitsync,categories=universe
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitSync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   GitSyncSpec   `json:"spec,omitempty"`
	Status GitSyncStatus `json:"status,omitempty"`
}

// GitSyncList is a list of GitSync.
//
// +kubebuilder:object:root=true
type GitSyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitSync `json:"items"`
}
