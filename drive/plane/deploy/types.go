package deploy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The wire shapes of the Argo CD API (argo-cd pkg/apis/application/v1alpha1/types.go and the
// server packages, as summarized in the reference): encoding/json of these structs, with
// ResourceRef inline in ResourceNode, numeric history ids, ResourceDiff states as JSON strings
// ("null" when absent) and capitalised VersionMessage keys. Only the fields the plane fills
// are declared; a dashboard reads absent fields as their zero value.

// Health statuses (gitops-engine pkg/health).
const (
	HealthHealthy     = "Healthy"
	HealthProgressing = "Progressing"
	HealthDegraded    = "Degraded"
	HealthSuspended   = "Suspended"
	HealthMissing     = "Missing"
	HealthUnknown     = "Unknown"
)

// Sync statuses.
const (
	SyncSynced    = "Synced"
	SyncOutOfSync = "OutOfSync"
	SyncUnknown   = "Unknown"
)

// Operation phases (gitops-engine pkg/sync/common).
const (
	PhaseRunning   = "Running"
	PhaseFailed    = "Failed"
	PhaseError     = "Error"
	PhaseSucceeded = "Succeeded"
)

// Application condition types (argo-cd types.go).
const (
	ConditionSyncError               = "SyncError"
	ConditionComparisonError         = "ComparisonError"
	ConditionInvalidSpecError        = "InvalidSpecError"
	ConditionExcludedResourceWarning = "ExcludedResourceWarning"
)

// Application is argoproj.io/v1alpha1 Application as the API serves it.
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ApplicationSpec   `json:"spec"`
	Status            ApplicationStatus `json:"status,omitempty"`
	Operation         *Operation        `json:"operation,omitempty"`
}

// ApplicationList is the list route's body.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Application `json:"items"`
}

type ApplicationSpec struct {
	Source               *ApplicationSource     `json:"source,omitempty"`
	Destination          ApplicationDestination `json:"destination"`
	Project              string                 `json:"project"`
	SyncPolicy           *SyncPolicy            `json:"syncPolicy,omitempty"`
	Info                 []Info                 `json:"info,omitempty"`
	RevisionHistoryLimit *int64                 `json:"revisionHistoryLimit,omitempty"`
}

type ApplicationSource struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	Chart          string `json:"chart,omitempty"`
	Name           string `json:"name,omitempty"`
}

type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

type SyncPolicy struct {
	Automated   *SyncPolicyAutomated `json:"automated,omitempty"`
	SyncOptions []string             `json:"syncOptions,omitempty"`
}

type SyncPolicyAutomated struct {
	Prune    bool  `json:"prune,omitempty"`
	SelfHeal bool  `json:"selfHeal,omitempty"`
	Enabled  *bool `json:"enabled,omitempty"`
}

type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type ApplicationStatus struct {
	Resources            []ResourceStatus       `json:"resources,omitempty"`
	Sync                 SyncStatus             `json:"sync,omitempty"`
	Health               AppHealthStatus        `json:"health,omitempty"`
	History              []RevisionHistory      `json:"history,omitempty"`
	Conditions           []ApplicationCondition `json:"conditions,omitempty"`
	ReconciledAt         *metav1.Time           `json:"reconciledAt,omitempty"`
	OperationState       *OperationState        `json:"operationState,omitempty"`
	ObservedAt           *metav1.Time           `json:"observedAt,omitempty"`
	SourceType           string                 `json:"sourceType,omitempty"`
	Summary              ApplicationSummary     `json:"summary,omitempty"`
	ResourceHealthSource string                 `json:"resourceHealthSource,omitempty"`
	ControllerNamespace  string                 `json:"controllerNamespace,omitempty"`
}

type SyncStatus struct {
	Status     string     `json:"status"`
	ComparedTo ComparedTo `json:"comparedTo,omitempty"`
	Revision   string     `json:"revision,omitempty"`
}

type ComparedTo struct {
	Source      *ApplicationSource     `json:"source,omitempty"`
	Destination ApplicationDestination `json:"destination"`
}

// AppHealthStatus is the application's health (no message since Argo CD 3.0, kept here).
type AppHealthStatus struct {
	Status             string       `json:"status,omitempty"`
	Message            string       `json:"message,omitempty"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

type HealthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// RevisionHistory is one history row; id and deployedAt have no omitempty.
type RevisionHistory struct {
	Revision        string             `json:"revision,omitempty"`
	DeployedAt      metav1.Time        `json:"deployedAt"`
	ID              int64              `json:"id"`
	Source          ApplicationSource  `json:"source,omitempty"`
	DeployStartedAt *metav1.Time       `json:"deployStartedAt,omitempty"`
	InitiatedBy     OperationInitiator `json:"initiatedBy,omitempty"`
}

type ApplicationCondition struct {
	Type               string       `json:"type"`
	Message            string       `json:"message"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

type ApplicationSummary struct {
	ExternalURLs []string `json:"externalURLs,omitempty"`
	Images       []string `json:"images,omitempty"`
}

// ResourceStatus is one status.resources entry.
type ResourceStatus struct {
	Group           string        `json:"group,omitempty"`
	Version         string        `json:"version,omitempty"`
	Kind            string        `json:"kind,omitempty"`
	Namespace       string        `json:"namespace,omitempty"`
	Name            string        `json:"name,omitempty"`
	Status          string        `json:"status,omitempty"`
	Health          *HealthStatus `json:"health,omitempty"`
	RequiresPruning bool          `json:"requiresPruning,omitempty"`
}

type Operation struct {
	Sync        *SyncOperation     `json:"sync,omitempty"`
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
}

type SyncOperation struct {
	Revision string `json:"revision,omitempty"`
	Prune    bool   `json:"prune,omitempty"`
	DryRun   bool   `json:"dryRun,omitempty"`
}

type OperationInitiator struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}

type OperationState struct {
	Operation  Operation            `json:"operation"`
	Phase      string               `json:"phase"`
	Message    string               `json:"message,omitempty"`
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time          `json:"startedAt"`
	FinishedAt *metav1.Time         `json:"finishedAt,omitempty"`
	RetryCount int64                `json:"retryCount,omitempty"`
}

type SyncOperationResult struct {
	Resources []ResourceResult `json:"resources,omitempty"`
	Revision  string           `json:"revision"`
}

// ApplicationWatchEvent is one stream/applications event.
type ApplicationWatchEvent struct {
	Type        string      `json:"type"`
	Application Application `json:"application"`
}

// ResourceRef names a resource; it is inline in ResourceNode.
type ResourceRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

type ResourceNode struct {
	ResourceRef     `json:",inline"`
	ParentRefs      []ResourceRef   `json:"parentRefs,omitempty"`
	Info            []InfoItem      `json:"info,omitempty"`
	NetworkingInfo  *NetworkingInfo `json:"networkingInfo,omitempty"`
	ResourceVersion string          `json:"resourceVersion,omitempty"`
	Images          []string        `json:"images,omitempty"`
	Health          *HealthStatus   `json:"health,omitempty"`
	CreatedAt       *metav1.Time    `json:"createdAt,omitempty"`
}

type InfoItem struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

type NetworkingInfo struct {
	TargetLabels map[string]string `json:"targetLabels,omitempty"`
	TargetRefs   []ResourceRef     `json:"targetRefs,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	ExternalURLs []string          `json:"externalURLs,omitempty"`
}

// ApplicationTree is the resource-tree body.
type ApplicationTree struct {
	Nodes         []ResourceNode `json:"nodes,omitempty"`
	OrphanedNodes []ResourceNode `json:"orphanedNodes,omitempty"`
	ShardsCount   int64          `json:"shardsCount,omitempty"`
}

// ResourceDiff is one managed-resources item; the four states are JSON documents as strings.
type ResourceDiff struct {
	Group               string `json:"group,omitempty"`
	Kind                string `json:"kind,omitempty"`
	Namespace           string `json:"namespace,omitempty"`
	Name                string `json:"name,omitempty"`
	TargetState         string `json:"targetState,omitempty"`
	LiveState           string `json:"liveState,omitempty"`
	Diff                string `json:"diff,omitempty"`
	Hook                bool   `json:"hook,omitempty"`
	NormalizedLiveState string `json:"normalizedLiveState,omitempty"`
	PredictedLiveState  string `json:"predictedLiveState,omitempty"`
	ResourceVersion     string `json:"resourceVersion,omitempty"`
	Modified            bool   `json:"modified,omitempty"`
}

// ManagedResourcesResponse is the managed-resources body.
type ManagedResourcesResponse struct {
	Items []ResourceDiff `json:"items"`
}

// RevisionMetadata describes one commit.
type RevisionMetadata struct {
	Author  string       `json:"author,omitempty"`
	Date    *metav1.Time `json:"date"`
	Tags    []string     `json:"tags,omitempty"`
	Message string       `json:"message,omitempty"`
}

type Cluster struct {
	Server          string            `json:"server"`
	Name            string            `json:"name"`
	Config          ClusterConfig     `json:"config"`
	Namespaces      []string          `json:"namespaces,omitempty"`
	Project         string            `json:"project,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	Info            ClusterInfo       `json:"info,omitempty"`
	ServerVersion   string            `json:"serverVersion,omitempty"`
	ConnectionState ConnectionState   `json:"connectionState,omitempty"`
}

// ClusterConfig is sanitised: the plane never serves credentials.
type ClusterConfig struct {
	TLSClientConfig TLSClientConfig `json:"tlsClientConfig"`
}

type TLSClientConfig struct {
	Insecure bool `json:"insecure"`
}

type ClusterInfo struct {
	ConnectionState   ConnectionState `json:"connectionState,omitempty"`
	ServerVersion     string          `json:"serverVersion,omitempty"`
	ApplicationsCount int64           `json:"applicationsCount"`
	APIVersions       []string        `json:"apiVersions,omitempty"`
}

type ConnectionState struct {
	Status      string       `json:"status"`
	Message     string       `json:"message"`
	AttemptedAt *metav1.Time `json:"attemptedAt,omitempty"`
}

type ClusterList struct {
	metav1.ListMeta `json:"metadata"`
	Items           []Cluster `json:"items"`
}

type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              AppProjectSpec `json:"spec"`
}

type AppProjectSpec struct {
	SourceRepos  []string                 `json:"sourceRepos,omitempty"`
	Destinations []ApplicationDestination `json:"destinations,omitempty"`
	Description  string                   `json:"description,omitempty"`
}

type AppProjectList struct {
	metav1.ListMeta `json:"metadata"`
	Items           []AppProject `json:"items"`
}

// Settings is the settings body (a subset of clusterSettings).
type Settings struct {
	URL                       string         `json:"url,omitempty"`
	AppLabelKey               string         `json:"appLabelKey,omitempty"`
	StatusBadgeEnabled        bool           `json:"statusBadgeEnabled,omitempty"`
	UserLoginsDisabled        bool           `json:"userLoginsDisabled,omitempty"`
	ExecEnabled               bool           `json:"execEnabled"`
	ControllerNamespace       string         `json:"controllerNamespace,omitempty"`
	AppsInAnyNamespaceEnabled bool           `json:"appsInAnyNamespaceEnabled"`
	TrackingMethod            string         `json:"trackingMethod,omitempty"`
	OIDCConfig                *OIDCConfig    `json:"oidcConfig,omitempty"`
	ResourceOverrides         map[string]any `json:"resourceOverrides,omitempty"`
}

type OIDCConfig struct {
	Name     string   `json:"name,omitempty"`
	Issuer   string   `json:"issuer,omitempty"`
	ClientID string   `json:"clientID,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// VersionMessage keys are capitalised on the wire (no json tags in argo-cd).
type VersionMessage struct {
	Version      string
	BuildDate    string
	GitCommit    string
	GitTag       string
	GitTreeState string
	GoVersion    string
	Compiler     string
	Platform     string
}

// CanIResponse is {"value":"yes"|"no"}.
type CanIResponse struct {
	Value string `json:"value"`
}

// ErrorBody is grpc-gateway v1's default error body.
type ErrorBody struct {
	Error   string `json:"error"`
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []any  `json:"details"`
}

// SyncRequest is ApplicationSyncRequest; syncOptions is wrapped in {items}.
type SyncRequest struct {
	Name         string       `json:"name,omitempty"`
	Revision     string       `json:"revision,omitempty"`
	DryRun       bool         `json:"dryRun,omitempty"`
	Prune        bool         `json:"prune,omitempty"`
	AppNamespace string       `json:"appNamespace,omitempty"`
	Project      string       `json:"project,omitempty"`
	SyncOptions  *SyncOptions `json:"syncOptions,omitempty"`
}

type SyncOptions struct {
	Items []string `json:"items,omitempty"`
}

// RollbackRequest is ApplicationRollbackRequest; id is a status.history[].id.
type RollbackRequest struct {
	Name         string `json:"name,omitempty"`
	ID           int64  `json:"id"`
	DryRun       bool   `json:"dryRun,omitempty"`
	Prune        bool   `json:"prune,omitempty"`
	AppNamespace string `json:"appNamespace,omitempty"`
	Project      string `json:"project,omitempty"`
}

// ApplicationResourceResponse is the resource route's body: one live object as a JSON string.
type ApplicationResourceResponse struct {
	Manifest string `json:"manifest"`
}

// ResourceAction is one action of a resource (the restart of a workload).
type ResourceAction struct {
	Name        string                `json:"name,omitempty"`
	Params      []ResourceActionParam `json:"params,omitempty"`
	Disabled    bool                  `json:"disabled,omitempty"`
	IconClass   string                `json:"iconClass,omitempty"`
	DisplayName string                `json:"displayName,omitempty"`
}

type ResourceActionParam struct {
	Name string `json:"name,omitempty"`
}

// ResourceActionsListResponse is the resource/actions body (actions omitted when none).
type ResourceActionsListResponse struct {
	Actions []ResourceAction `json:"actions,omitempty"`
}

// ResourceActionRunRequest is ResourceActionRunRequestV2, the body of resource/actions/v2
// (resource/actions takes the action name as its body and the rest as query parameters).
type ResourceActionRunRequest struct {
	Name                     string                    `json:"name,omitempty"`
	Namespace                string                    `json:"namespace,omitempty"`
	ResourceName             string                    `json:"resourceName,omitempty"`
	Version                  string                    `json:"version,omitempty"`
	Group                    string                    `json:"group,omitempty"`
	Kind                     string                    `json:"kind,omitempty"`
	Action                   string                    `json:"action,omitempty"`
	AppNamespace             string                    `json:"appNamespace,omitempty"`
	Project                  string                    `json:"project,omitempty"`
	ResourceActionParameters []ResourceActionParameter `json:"resourceActionParameters,omitempty"`
}

type ResourceActionParameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ManifestResponse is the manifests body: the desired objects as JSON strings.
type ManifestResponse struct {
	Manifests    []string `json:"manifests,omitempty"`
	Namespace    string   `json:"namespace,omitempty"`
	Server       string   `json:"server,omitempty"`
	Revision     string   `json:"revision,omitempty"`
	SourceType   string   `json:"sourceType,omitempty"`
	VerifyResult string   `json:"verifyResult,omitempty"`
	Commands     []string `json:"commands,omitempty"`
}

// LogEntry is one line of the logs stream (every field is required in Argo CD's proto, so
// every field is written).
type LogEntry struct {
	Content      string      `json:"content"`
	TimeStamp    metav1.Time `json:"timeStamp"`
	Last         bool        `json:"last"`
	TimeStampStr string      `json:"timeStampStr"`
	PodName      string      `json:"podName"`
}

// ResourceResult is one object of a sync result.
type ResourceResult struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status,omitempty"`
	Message   string `json:"message,omitempty"`
	SyncPhase string `json:"syncPhase,omitempty"`
}

// Result codes of a ResourceResult (gitops-engine pkg/sync/common).
const (
	ResultSynced     = "Synced"
	ResultSyncFailed = "SyncFailed"
)
