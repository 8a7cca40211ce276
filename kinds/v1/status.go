package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is the coarse state of a CR, shared by every Kind.
// +kubebuilder:validation:Enum=Pending;Creating;Running;Degraded;Deleting
type Phase string

// The phases. A workload is Running when ready >= desired > 0, Degraded when some but not all
// replicas are ready, Creating otherwise.
const (
	PhasePending  Phase = "Pending"
	PhaseCreating Phase = "Creating"
	PhaseRunning  Phase = "Running"
	PhaseDegraded Phase = "Degraded"
	PhaseDeleting Phase = "Deleting"
)

// Status is the status every Kind shares.
type Status struct {
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Restarts is the restart count of the container the message names while pods are stuck
	// (kept out of the message, so a crash loop does not rewrite the conditions).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
}

// ServiceStatus is the status of the Service-shaped Kinds and App.
type ServiceStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	// Endpoints holds one URL per ingress host.
	// +optional
	Endpoints []string `json:"endpoints,omitempty"`
	// LastGoodImage is the last image the upgrade machine proved.
	// +optional
	LastGoodImage string `json:"lastGoodImage,omitempty"`
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`
	// +optional
	UpgradeHistory []UpgradeRecord `json:"upgradeHistory,omitempty"`
}

// UpgradeStatus is the state of an upgrade in flight.
type UpgradeStatus struct {
	TargetImage string `json:"targetImage"`
	// +kubebuilder:validation:Enum=Preflighting;Rolling;RollingBack;Failed
	// +optional
	Phase string `json:"phase,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	DeadlineAt *metav1.Time `json:"deadlineAt,omitempty"`
	// +optional
	PreflightPod string `json:"preflightPod,omitempty"`
	// +optional
	PreflightClone string `json:"preflightClone,omitempty"`
	// +optional
	PreflightSnapshot string `json:"preflightSnapshot,omitempty"`
	// +optional
	StableSince *metav1.Time `json:"stableSince,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// RevertCommit is the universe-repository commit that put the image back to
	// lastGoodImage after this upgrade failed (spec.upgradePolicy.revertInGit), or the head
	// that already named it.
	// +optional
	RevertCommit string `json:"revertCommit,omitempty"`
}

// UpgradeRecord is one finished upgrade.
type UpgradeRecord struct {
	Image string `json:"image"`
	// +optional
	FromImage string `json:"fromImage,omitempty"`
	// +kubebuilder:validation:Enum=Succeeded;RolledBack;PreflightFailed;Superseded
	Result string `json:"result"`
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// DatastoreStatus is the status of the datastore Kinds.
type DatastoreStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	ConnectionString string `json:"connectionString,omitempty"`
	// +optional
	LastBackup *metav1.Time `json:"lastBackup,omitempty"`
}

// ReplicaStatus is the status of a Kind that runs replicas and reports nothing else.
type ReplicaStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}
