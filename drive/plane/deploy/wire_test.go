package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

// The argo* types mirror Argo CD's wire types field for field: the json names and omitempty
// of argoproj/argo-cd@37ee0097 pkg/apis/application/v1alpha1/types.go (Application,
// ApplicationTree, ResourceNode, ResourceDiff, ResourceAction, ...), the messages of
// server/application/application.proto (ManagedResourcesResponse, LogEntry,
// ApplicationResourceResponse, ResourceActionsListResponse) with their generated json tags,
// reposerver ManifestResponse, and the account, settings, session and version messages.
// Nested types the plane never fills are json.RawMessage. Every response is decoded into
// them with unknown fields disallowed: a field the plane writes that Argo CD does not have
// fails the test.

type argoApplication struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            argoSpec          `json:"spec"`
	Status          argoStatus        `json:"status,omitempty"`
	Operation       *argoOperation    `json:"operation,omitempty"`
}

type argoApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta   `json:"metadata"`
	Items           []argoApplication `json:"items"`
}

type argoWatchEvent struct {
	Type        string          `json:"type"`
	Application argoApplication `json:"application"`
}

type argoSpec struct {
	Source               *argoSource     `json:"source,omitempty"`
	Destination          argoDestination `json:"destination"`
	Project              string          `json:"project"`
	SyncPolicy           *argoSyncPolicy `json:"syncPolicy,omitempty"`
	IgnoreDifferences    json.RawMessage `json:"ignoreDifferences,omitempty"`
	Info                 []argoInfo      `json:"info,omitempty"`
	RevisionHistoryLimit *int64          `json:"revisionHistoryLimit,omitempty"`
	Sources              []argoSource    `json:"sources,omitempty"`
	SourceHydrator       json.RawMessage `json:"sourceHydrator,omitempty"`
}

type argoSource struct {
	RepoURL        string          `json:"repoURL"`
	Path           string          `json:"path,omitempty"`
	TargetRevision string          `json:"targetRevision,omitempty"`
	Helm           json.RawMessage `json:"helm,omitempty"`
	Kustomize      json.RawMessage `json:"kustomize,omitempty"`
	Directory      json.RawMessage `json:"directory,omitempty"`
	Plugin         json.RawMessage `json:"plugin,omitempty"`
	Chart          string          `json:"chart,omitempty"`
	Ref            string          `json:"ref,omitempty"`
	Name           string          `json:"name,omitempty"`
	TagPrefix      string          `json:"tagPrefix,omitempty"`
}

type argoDestination struct {
	Server    string `json:"server,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

type argoSyncPolicy struct {
	Automated                *argoAutomated  `json:"automated,omitempty"`
	SyncOptions              []string        `json:"syncOptions,omitempty"`
	Retry                    json.RawMessage `json:"retry,omitempty"`
	ManagedNamespaceMetadata json.RawMessage `json:"managedNamespaceMetadata,omitempty"`
}

type argoAutomated struct {
	Prune      *bool `json:"prune,omitempty"`
	SelfHeal   *bool `json:"selfHeal,omitempty"`
	AllowEmpty *bool `json:"allowEmpty,omitempty"`
	Enabled    *bool `json:"enabled,omitempty"`
}

type argoInfo struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type argoStatus struct {
	Resources            []argoResourceStatus `json:"resources,omitempty"`
	Sync                 argoSyncStatus       `json:"sync,omitempty"`
	Health               argoHealth           `json:"health,omitempty"`
	History              []argoHistory        `json:"history,omitempty"`
	Conditions           []argoCondition      `json:"conditions,omitempty"`
	ReconciledAt         *metav1.Time         `json:"reconciledAt,omitempty"`
	OperationState       *argoOperationState  `json:"operationState,omitempty"`
	ObservedAt           *metav1.Time         `json:"observedAt,omitempty"`
	SourceType           string               `json:"sourceType,omitempty"`
	Summary              argoSummary          `json:"summary,omitempty"`
	ResourceHealthSource string               `json:"resourceHealthSource,omitempty"`
	SourceTypes          []string             `json:"sourceTypes,omitempty"`
	ControllerNamespace  string               `json:"controllerNamespace,omitempty"`
	SourceHydrator       json.RawMessage      `json:"sourceHydrator,omitempty"`
}

type argoSyncStatus struct {
	Status     string         `json:"status"`
	ComparedTo argoComparedTo `json:"comparedTo,omitempty"`
	Revision   string         `json:"revision,omitempty"`
	Revisions  []string       `json:"revisions,omitempty"`
}

type argoComparedTo struct {
	Source            argoSource      `json:"source,omitempty"`
	Destination       argoDestination `json:"destination"`
	Sources           []argoSource    `json:"sources,omitempty"`
	IgnoreDifferences json.RawMessage `json:"ignoreDifferences,omitempty"`
}

type argoHealth struct {
	Status             string       `json:"status,omitempty"`
	Message            string       `json:"message,omitempty"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

type argoHistory struct {
	Revision        string        `json:"revision,omitempty"`
	DeployedAt      metav1.Time   `json:"deployedAt"`
	ID              int64         `json:"id"`
	Source          argoSource    `json:"source,omitempty"`
	DeployStartedAt *metav1.Time  `json:"deployStartedAt,omitempty"`
	Sources         []argoSource  `json:"sources,omitempty"`
	Revisions       []string      `json:"revisions,omitempty"`
	InitiatedBy     argoInitiator `json:"initiatedBy,omitempty"`
}

type argoCondition struct {
	Type               string       `json:"type"`
	Message            string       `json:"message"`
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

type argoSummary struct {
	ExternalURLs []string `json:"externalURLs,omitempty"`
	Images       []string `json:"images,omitempty"`
	IsAppOfApps  bool     `json:"isAppOfApps,omitempty"`
}

type argoResourceStatus struct {
	Group                        string      `json:"group,omitempty"`
	Version                      string      `json:"version,omitempty"`
	Kind                         string      `json:"kind,omitempty"`
	Namespace                    string      `json:"namespace,omitempty"`
	Name                         string      `json:"name,omitempty"`
	Status                       string      `json:"status,omitempty"`
	Health                       *argoHealth `json:"health,omitempty"`
	Hook                         bool        `json:"hook,omitempty"`
	RequiresPruning              bool        `json:"requiresPruning,omitempty"`
	SyncWave                     int64       `json:"syncWave,omitempty"`
	RequiresDeletionConfirmation bool        `json:"requiresDeletionConfirmation,omitempty"`
}

type argoOperation struct {
	Sync        *argoSyncOperation `json:"sync,omitempty"`
	InitiatedBy argoInitiator      `json:"initiatedBy,omitempty"`
	Info        []argoInfo         `json:"info,omitempty"`
	Retry       json.RawMessage    `json:"retry,omitempty"`
}

type argoSyncOperation struct {
	Revision              string          `json:"revision,omitempty"`
	Prune                 bool            `json:"prune,omitempty"`
	DryRun                bool            `json:"dryRun,omitempty"`
	SyncStrategy          json.RawMessage `json:"syncStrategy,omitempty"`
	Resources             json.RawMessage `json:"resources,omitempty"`
	Source                *argoSource     `json:"source,omitempty"`
	Manifests             []string        `json:"manifests,omitempty"`
	SyncOptions           []string        `json:"syncOptions,omitempty"`
	Sources               []argoSource    `json:"sources,omitempty"`
	Revisions             []string        `json:"revisions,omitempty"`
	AutoHealAttemptsCount int64           `json:"autoHealAttemptsCount,omitempty"`
}

type argoInitiator struct {
	Username  string `json:"username,omitempty"`
	Automated bool   `json:"automated,omitempty"`
}

type argoOperationState struct {
	Operation  argoOperation   `json:"operation"`
	Phase      string          `json:"phase"`
	Message    string          `json:"message,omitempty"`
	SyncResult *argoSyncResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time     `json:"startedAt"`
	FinishedAt *metav1.Time    `json:"finishedAt,omitempty"`
	RetryCount int64           `json:"retryCount,omitempty"`
}

type argoSyncResult struct {
	Resources                []argoResourceResult `json:"resources,omitempty"`
	Revision                 string               `json:"revision"`
	Source                   argoSource           `json:"source,omitempty"`
	Sources                  []argoSource         `json:"sources,omitempty"`
	Revisions                []string             `json:"revisions,omitempty"`
	ManagedNamespaceMetadata json.RawMessage      `json:"managedNamespaceMetadata,omitempty"`
}

type argoResourceResult struct {
	Group     string   `json:"group"`
	Version   string   `json:"version"`
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Status    string   `json:"status,omitempty"`
	Message   string   `json:"message,omitempty"`
	HookType  string   `json:"hookType,omitempty"`
	HookPhase string   `json:"hookPhase,omitempty"`
	SyncPhase string   `json:"syncPhase,omitempty"`
	Images    []string `json:"images,omitempty"`
}

type argoTree struct {
	Nodes         []argoNode      `json:"nodes,omitempty"`
	OrphanedNodes []argoNode      `json:"orphanedNodes,omitempty"`
	Hosts         json.RawMessage `json:"hosts,omitempty"`
	ShardsCount   int64           `json:"shardsCount,omitempty"`
}

type argoRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

type argoNode struct {
	argoRef         `json:",inline"`
	ParentRefs      []argoRef       `json:"parentRefs,omitempty"`
	Info            []argoInfoItem  `json:"info,omitempty"`
	NetworkingInfo  *argoNetworking `json:"networkingInfo,omitempty"`
	ResourceVersion string          `json:"resourceVersion,omitempty"`
	Images          []string        `json:"images,omitempty"`
	Health          *argoHealth     `json:"health,omitempty"`
	CreatedAt       *metav1.Time    `json:"createdAt,omitempty"`
}

type argoInfoItem struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

type argoNetworking struct {
	TargetLabels map[string]string            `json:"targetLabels,omitempty"`
	TargetRefs   []argoRef                    `json:"targetRefs,omitempty"`
	Labels       map[string]string            `json:"labels,omitempty"`
	Ingress      []corev1.LoadBalancerIngress `json:"ingress,omitempty"`
	ExternalURLs []string                     `json:"externalURLs,omitempty"`
}

type argoManagedResources struct {
	Items []argoResourceDiff `json:"items,omitempty"`
}

type argoResourceDiff struct {
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

type argoResourceResponse struct {
	Manifest *string `json:"manifest,omitempty"`
}

type argoActionsList struct {
	Actions []argoAction `json:"actions,omitempty"`
}

type argoAction struct {
	Name   string `json:"name,omitempty"`
	Params []struct {
		Name string `json:"name,omitempty"`
	} `json:"params,omitempty"`
	Disabled    bool   `json:"disabled,omitempty"`
	IconClass   string `json:"iconClass,omitempty"`
	DisplayName string `json:"displayName,omitempty"`
}

type argoManifestResponse struct {
	Manifests             []string        `json:"manifests,omitempty"`
	Namespace             string          `json:"namespace,omitempty"`
	Server                string          `json:"server,omitempty"`
	Revision              string          `json:"revision,omitempty"`
	SourceType            string          `json:"sourceType,omitempty"`
	VerifyResult          string          `json:"verifyResult,omitempty"`
	Commands              []string        `json:"commands,omitempty"`
	SourceIntegrityResult json.RawMessage `json:"sourceIntegrityResult,omitempty"`
}

// argoLogEntry: every field is required in the proto; pointers tell absence apart.
type argoLogEntry struct {
	Content      *string      `json:"content,omitempty"`
	TimeStamp    *metav1.Time `json:"timeStamp,omitempty"`
	Last         *bool        `json:"last,omitempty"`
	TimeStampStr *string      `json:"timeStampStr,omitempty"`
	PodName      *string      `json:"podName,omitempty"`
}

type argoCanI struct {
	Value string `json:"value"`
}

type argoError struct {
	Error   string            `json:"error"`
	Code    *int              `json:"code"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details"`
}

type argoRevisionMetadata struct {
	Author                string          `json:"author,omitempty"`
	Date                  *metav1.Time    `json:"date"`
	Tags                  []string        `json:"tags,omitempty"`
	Message               string          `json:"message,omitempty"`
	SignatureInfo         string          `json:"signatureInfo,omitempty"`
	References            json.RawMessage `json:"references,omitempty"`
	SourceIntegrityResult json.RawMessage `json:"sourceIntegrityResult,omitempty"`
}

type argoSyncWindows struct {
	ActiveWindows   []json.RawMessage `json:"activeWindows,omitempty"`
	AssignedWindows []json.RawMessage `json:"assignedWindows,omitempty"`
	CanSync         *bool             `json:"canSync,omitempty"`
}

type argoConnectionState struct {
	Status      string       `json:"status"`
	Message     string       `json:"message"`
	AttemptedAt *metav1.Time `json:"attemptedAt"`
}

type argoCluster struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	Config struct {
		Username           string          `json:"username,omitempty"`
		Password           string          `json:"password,omitempty"`
		BearerToken        string          `json:"bearerToken,omitempty"`
		TLSClientConfig    json.RawMessage `json:"tlsClientConfig"`
		AWSAuthConfig      json.RawMessage `json:"awsAuthConfig,omitempty"`
		ExecProviderConfig json.RawMessage `json:"execProviderConfig,omitempty"`
		DisableCompression bool            `json:"disableCompression,omitempty"`
		ProxyURL           string          `json:"proxyUrl,omitempty"`
	} `json:"config"`
	ConnectionState    argoConnectionState `json:"connectionState,omitempty"`
	ServerVersion      string              `json:"serverVersion,omitempty"`
	Namespaces         []string            `json:"namespaces,omitempty"`
	RefreshRequestedAt *metav1.Time        `json:"refreshRequestedAt,omitempty"`
	Info               struct {
		ConnectionState   argoConnectionState `json:"connectionState,omitempty"`
		ServerVersion     string              `json:"serverVersion,omitempty"`
		CacheInfo         json.RawMessage     `json:"cacheInfo,omitempty"`
		ApplicationsCount int64               `json:"applicationsCount"`
		APIVersions       []string            `json:"apiVersions,omitempty"`
	} `json:"info,omitempty"`
	Shard            *int64            `json:"shard,omitempty"`
	ClusterResources bool              `json:"clusterResources,omitempty"`
	Project          string            `json:"project,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
}

type argoClusterList struct {
	Metadata metav1.ListMeta `json:"metadata,omitempty"`
	Items    []argoCluster   `json:"items"`
}

type argoProject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		SourceRepos                     []string          `json:"sourceRepos,omitempty"`
		Destinations                    []argoDestination `json:"destinations,omitempty"`
		Description                     string            `json:"description,omitempty"`
		Roles                           json.RawMessage   `json:"roles,omitempty"`
		ClusterResourceWhitelist        json.RawMessage   `json:"clusterResourceWhitelist,omitempty"`
		NamespaceResourceBlacklist      json.RawMessage   `json:"namespaceResourceBlacklist,omitempty"`
		OrphanedResources               json.RawMessage   `json:"orphanedResources,omitempty"`
		SyncWindows                     json.RawMessage   `json:"syncWindows,omitempty"`
		NamespaceResourceWhitelist      json.RawMessage   `json:"namespaceResourceWhitelist,omitempty"`
		SignatureKeys                   json.RawMessage   `json:"signatureKeys,omitempty"`
		ClusterResourceBlacklist        json.RawMessage   `json:"clusterResourceBlacklist,omitempty"`
		SourceNamespaces                []string          `json:"sourceNamespaces,omitempty"`
		PermitOnlyProjectScopedClusters bool              `json:"permitOnlyProjectScopedClusters,omitempty"`
		DestinationServiceAccounts      json.RawMessage   `json:"destinationServiceAccounts,omitempty"`
		SourceIntegrity                 json.RawMessage   `json:"sourceIntegrity,omitempty"`
	} `json:"spec"`
	Status json.RawMessage `json:"status,omitempty"`
}

type argoProjectList struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta `json:"metadata"`
	Items           []argoProject   `json:"items"`
}

// argoSettings is server/settings Settings (generated json names, all omitempty).
type argoSettings struct {
	URL        string          `json:"url,omitempty"`
	DexConfig  json.RawMessage `json:"dexConfig,omitempty"`
	OIDCConfig *struct {
		Name                     string          `json:"name,omitempty"`
		Issuer                   string          `json:"issuer,omitempty"`
		ClientID                 string          `json:"clientID,omitempty"`
		CLIClientID              string          `json:"cliClientID,omitempty"`
		Scopes                   []string        `json:"scopes,omitempty"`
		IDTokenClaims            json.RawMessage `json:"idTokenClaims,omitempty"`
		EnablePKCEAuthentication bool            `json:"enablePKCEAuthentication,omitempty"`
	} `json:"oidcConfig,omitempty"`
	AppLabelKey               string          `json:"appLabelKey,omitempty"`
	ResourceOverrides         json.RawMessage `json:"resourceOverrides,omitempty"`
	StatusBadgeEnabled        bool            `json:"statusBadgeEnabled,omitempty"`
	GoogleAnalytics           json.RawMessage `json:"googleAnalytics,omitempty"`
	KustomizeOptions          json.RawMessage `json:"kustomizeOptions,omitempty"`
	Help                      json.RawMessage `json:"help,omitempty"`
	Plugins                   json.RawMessage `json:"plugins,omitempty"`
	UserLoginsDisabled        bool            `json:"userLoginsDisabled,omitempty"`
	ConfigManagementPlugins   json.RawMessage `json:"configManagementPlugins,omitempty"`
	KustomizeVersions         []string        `json:"kustomizeVersions,omitempty"`
	UICssURL                  string          `json:"uiCssURL,omitempty"`
	UIBannerContent           string          `json:"uiBannerContent,omitempty"`
	UIBannerURL               string          `json:"uiBannerURL,omitempty"`
	PasswordPattern           string          `json:"passwordPattern,omitempty"`
	TrackingMethod            string          `json:"trackingMethod,omitempty"`
	UIBannerPermanent         bool            `json:"uiBannerPermanent,omitempty"`
	UIBannerPosition          string          `json:"uiBannerPosition,omitempty"`
	StatusBadgeRootURL        string          `json:"statusBadgeRootUrl,omitempty"`
	ExecEnabled               bool            `json:"execEnabled,omitempty"`
	ControllerNamespace       string          `json:"controllerNamespace,omitempty"`
	AppsInAnyNamespaceEnabled bool            `json:"appsInAnyNamespaceEnabled,omitempty"`
	ImpersonationEnabled      bool            `json:"impersonationEnabled,omitempty"`
	InstallationID            string          `json:"installationID,omitempty"`
	AdditionalURLs            []string        `json:"additionalUrls,omitempty"`
	HydratorEnabled           bool            `json:"hydratorEnabled,omitempty"`
	SyncWithReplaceAllowed    bool            `json:"syncWithReplaceAllowed,omitempty"`
	UILoginButtonText         string          `json:"uiLoginButtonText,omitempty"`
	ResourceViewEnabled       bool            `json:"resourceViewEnabled,omitempty"`
}

type argoVersion struct {
	Version, BuildDate, GitCommit, GitTag, GitTreeState, GoVersion, Compiler, Platform string
	KustomizeVersion, HelmVersion, KubectlVersion, JsonnetVersion, ExtraBuildInfo      string
}

type argoUserInfo struct {
	LoggedIn bool     `json:"loggedIn,omitempty"`
	Username string   `json:"username,omitempty"`
	Iss      string   `json:"iss,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// The enumerations (gitops-engine pkg/health and pkg/sync/common, types.go, k8s watch).
var (
	enumHealth    = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}
	enumSync      = []string{"Synced", "OutOfSync", "Unknown"}
	enumPhase     = []string{"Running", "Terminating", "Failed", "Error", "Succeeded"}
	enumWatch     = []string{"ADDED", "MODIFIED", "DELETED"}
	enumResult    = []string{"Synced", "SyncFailed", "Pruned", "PruneSkipped"}
	enumSyncPhase = []string{"PreSync", "Sync", "PostSync", "SyncFail", "PostDelete"}
	enumSource    = []string{"Helm", "Kustomize", "Directory", "Plugin"}
	enumCondition = []string{"DeletionError", "InvalidSpecError", "ComparisonError", "SyncError", "UnknownError", "SharedResourceWarning",
		"RepeatedResourceWarning", "ExcludedResourceWarning", "OrphanedResourceWarning"}
	enumConnection = []string{"Successful", "Failed", "Unknown"}
)

// wire checks the answers of one plane.
type wire struct {
	t    *testing.T
	base string // .../v1/deploy
}

func (c wire) do(method, path, token string, body []byte, header ...string) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// ok calls a route that must answer 200 and decodes its body strictly into v.
func (c wire) ok(method, path, token string, body []byte, v any) []byte {
	c.t.Helper()
	code, _, b := c.do(method, path, token, body)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", method, path, code, head(b))
	}
	strict(c.t, method+" "+path, b, v)
	return b
}

// fails calls a route that must answer code in the gateway's error body.
func (c wire) fails(method, path, token string, body []byte, code int) argoError {
	c.t.Helper()
	got, h, b := c.do(method, path, token, body)
	if got != code {
		c.t.Errorf("%s %s: %d %s, want %d", method, path, got, head(b), code)
	}
	var e argoError
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		c.t.Errorf("%s %s: error content type %q", method, path, h.Get("Content-Type"))
	}
	strict(c.t, method+" "+path+" error", b, &e)
	if e.Error == "" || e.Message != e.Error || e.Code == nil || e.Details == nil {
		c.t.Errorf("%s %s: error body %s lacks error, code, message or details", method, path, head(b))
	}
	return e
}

func head(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// strict decodes b into v with unknown fields disallowed, and nothing after it.
func strict(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, head(b))
	}
	if dec.More() {
		t.Fatalf("%s: data after the JSON value", what)
	}
}

// requireKeys asserts that each dotted path is present in the JSON document b ("[]" walks
// every element of an array): the fields Argo CD writes without omitempty.
func requireKeys(t *testing.T, what string, b []byte, paths ...string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, p := range paths {
		if missing := walk(doc, strings.Split(p, "."), ""); missing != "" {
			t.Errorf("%s: required field %s absent (at %s)", what, p, missing)
		}
	}
}

func walk(doc any, path []string, at string) string {
	if len(path) == 0 {
		return ""
	}
	key, arr := strings.CutSuffix(path[0], "[]")
	m, ok := doc.(map[string]any)
	if !ok {
		return at
	}
	v, ok := m[key]
	switch {
	case !ok && arr: // an omitted list has no elements to lack a field
		return ""
	case !ok:
		return at + "." + key
	}
	if !arr {
		return walk(v, path[1:], at+"."+key)
	}
	list, _ := v.([]any)
	for i, e := range list {
		if miss := walk(e, path[1:], fmt.Sprintf("%s.%s[%d]", at, key, i)); miss != "" {
			return miss
		}
	}
	return ""
}

func inEnum(t *testing.T, what, v string, enum []string) {
	t.Helper()
	if !slices.Contains(enum, v) {
		t.Errorf("%s = %q, not one of %v", what, v, enum)
	}
}

// checkApp asserts an Application's required fields and enumerations.
func checkApp(t *testing.T, what string, a argoApplication) {
	t.Helper()
	if a.Kind != "" && (a.Kind != "Application" || a.APIVersion != "argoproj.io/v1alpha1") {
		t.Errorf("%s: kind %q apiVersion %q", what, a.Kind, a.APIVersion)
	}
	if a.Metadata.Name == "" || a.Metadata.Namespace == "" || a.Spec.Project == "" || a.Spec.Destination.Server == "" {
		t.Errorf("%s: name %q namespace %q project %q destination %q: all required", what, a.Metadata.Name, a.Metadata.Namespace,
			a.Spec.Project, a.Spec.Destination.Server)
	}
	if a.Spec.SyncPolicy != nil && a.Spec.SyncPolicy.Automated != nil {
		t.Errorf("%s: advertises spec.syncPolicy.automated, a switch the plane does not have", what)
	}
	st := a.Status
	inEnum(t, what+" status.sync.status", st.Sync.Status, enumSync)
	inEnum(t, what+" status.health.status", st.Health.Status, enumHealth)
	if st.SourceType != "" {
		inEnum(t, what+" status.sourceType", st.SourceType, enumSource)
	}
	for _, r := range st.Resources {
		if r.Kind == "" || r.Name == "" || r.Version == "" {
			t.Errorf("%s: resource %+v lacks kind, name or version", what, r)
		}
		if r.Kind == "Secret" && r.Group == "" {
			t.Errorf("%s: lists Secret %s", what, r.Name)
		}
		inEnum(t, what+" resource status", r.Status, enumSync)
		if r.Health != nil {
			inEnum(t, what+" resource health", r.Health.Status, enumHealth)
		}
	}
	for i, h := range st.History {
		if h.ID != int64(i) || h.DeployedAt.IsZero() || h.Revision == "" {
			t.Errorf("%s: history[%d] = id %d deployedAt %v revision %q", what, i, h.ID, h.DeployedAt, h.Revision)
		}
	}
	for _, c := range st.Conditions {
		inEnum(t, what+" condition type", c.Type, enumCondition)
	}
	if op := st.OperationState; op != nil {
		inEnum(t, what+" operationState.phase", op.Phase, enumPhase)
		if op.StartedAt.IsZero() {
			t.Errorf("%s: operationState.startedAt zero", what)
		}
		if op.SyncResult != nil {
			for _, r := range op.SyncResult.Resources {
				inEnum(t, what+" syncResult status", r.Status, enumResult)
				if r.SyncPhase != "" {
					inEnum(t, what+" syncResult syncPhase", r.SyncPhase, enumSyncPhase)
				}
			}
		}
	}
}

func checkTree(t *testing.T, what string, tr argoTree) {
	t.Helper()
	for _, n := range tr.Nodes {
		if n.Kind == "" || n.Name == "" || n.Version == "" || n.UID == "" {
			t.Errorf("%s: node %+v lacks kind, name, version or uid", what, n.argoRef)
		}
		if n.Kind == "Secret" && n.Group == "" {
			t.Errorf("%s: Secret %s is a node", what, n.Name)
		}
		if n.Health != nil {
			inEnum(t, what+" node health", n.Health.Status, enumHealth)
		}
	}
}

// appKeys are the fields of an Application Argo CD always writes.
var appKeys = []string{"metadata.name", "spec.destination", "spec.project", "status.sync.status", "status.history[].id",
	"status.history[].deployedAt"}

func prefixed(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = prefix + k
	}
	return out
}

// wireDiffer answers a diff of every child: the Deployment modified (its live object read
// from the apiserver and a target with another image), the rest in sync.
type wireDiffer struct{ c client.Client }

func (d wireDiffer) Diff(ctx context.Context, cr *unstructured.Unstructured) ([]ChildDiff, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: cr.GetName()}, live); err != nil {
		return nil, err
	}
	target := live.DeepCopy()
	_ = unstructured.SetNestedField(target.Object, "changed", "metadata", "labels", "diff")
	return []ChildDiff{{GVK: live.GroupVersionKind(), Namespace: live.GetNamespace(), Name: live.GetName(), Live: live, Target: target,
		Modified: true, Diff: "+  diff: changed"},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: cr.GetNamespace(), Name: "web-env", Modified: true}}, nil
}

// wireLogs stands for the apiserver's pods/log (envtest runs no kubelet): timestamped lines,
// and for a follow, a line every 50 ms until the context ends. It records the options.
type wireLogs struct {
	mu   sync.Mutex
	opts []corev1.PodLogOptions
	pods []string
}

func (l *wireLogs) PodLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	l.mu.Lock()
	l.opts, l.pods = append(l.opts, *opts), append(l.pods, namespace+"/"+pod)
	l.mu.Unlock()
	if !opts.Timestamps {
		return nil, errors.New("want timestamps")
	}
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		base := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
		for i := range 3 {
			fmt.Fprintf(pw, "%s %s line %d\n", base.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), pod, i)
		}
		for i := 3; opts.Follow; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := fmt.Fprintf(pw, "%s %s line %d\n", time.Now().UTC().Format(time.RFC3339Nano), pod, i); err != nil {
					return
				}
			}
		}
	}()
	return pr, nil
}

// wireSweep is a sweep's last report: one object of acme's namespace applied, one of
// globex's denied, a file skipped.
type wireSweep struct{ a, b string }

func (s wireSweep) LastSweep() *SweepReport {
	return &SweepReport{RepoURL: "https://git.example.test/universe", Branch: "main", Revision: "c0ffee", Started: time.Now().Add(-time.Second),
		Duration: 300 * time.Millisecond,
		Results: []SweepResult{{Group: "hanzo.ai", Version: "v1", Kind: "Service", Namespace: s.a, Name: "web", Action: "InSync"},
			{Group: "hanzo.ai", Version: "v1", Kind: "Service", Namespace: s.b, Name: "other", Action: "Denied", Message: "apps/other.yaml: forbidden"}},
		Skips: []SweepSkip{{File: "README.md", Message: "not a manifest"}}}
}

// TestArgoWire: every route of the plane, answered by the real apiserver's objects, decoded
// into the mirror of Argo CD's types with unknown fields disallowed, with the required fields
// and enumerations asserted; the dashboard's rollback sequence (PUT, then rollback); JSON
// errors on unknown routes; only CRs are applications (a KMSSecret child is not); a Static
// is a row; the resource, logs and actions routes never reach a Secret or another org.
func TestArgoWire(t *testing.T) {
	base := testbed.APIServer(t)
	kc, err := client.New(base, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, kc)
	iss, err := testbed.NewOIDCIssuer("aud")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	ao := DefaultAuthOptions()
	ao.Issuer, ao.Audience, ao.AdminOrg = iss.URL, "aud", "platform"
	auth, err := NewAuthenticator(context.Background(), ao, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const nsA, nsB = "wire-a", "wire-b"
	logs := &wireLogs{}
	_, srv := planeOn(t, base, auth, prometheus.NewRegistry(), func(c *Config) {
		c.Differ, c.Live, c.Logs, c.Sweep = wireDiffer{c: kc}, kc, logs, wireSweep{a: nsA, b: nsB}
		c.Actions = &Requester{Client: kc, Now: time.Now}
	})
	admin := iss.Token(map[string]any{"sub": "root", "aud": "aud", "org": "platform", "groups": []string{"admin"}})
	member := iss.Token(map[string]any{"sub": "ann", "aud": "aud", "org": "acme"})
	w := wire{t: t, base: srv.URL + Prefix}
	api := "/api/v1"

	ctx := context.Background()
	for ns, org := range map[string]string{nsA: "acme", nsB: "globex"} {
		n := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": map[string]any{kinds.OrgLabel: org}}}}
		if err := kc.Apply(ctx, client.ApplyConfigurationFromUnstructured(n), client.FieldOwner("cloud-api"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	create := func(u *unstructured.Unstructured, owner *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		if owner != nil {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(),
				UID: owner.GetUID(), Controller: ptr.To(true)}})
		}
		if err := kc.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		return u
	}
	obj := func(apiVersion, kind, ns, name string, rest map[string]any) *unstructured.Unstructured {
		m := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}}
		for k, v := range rest {
			m[k] = v
		}
		return &unstructured.Unstructured{Object: m}
	}
	svc := func(ns, name, tag string) *unstructured.Unstructured {
		return create(obj("hanzo.ai/v1", "Service", ns, name, map[string]any{"spec": map[string]any{
			"image": map[string]any{"repository": "ghcr.io/x/" + name, "tag": tag}, "replicas": int64(1),
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}}}}), nil)
	}
	podSpec := map[string]any{"containers": []any{map[string]any{"name": "web", "image": "ghcr.io/x/web:v2"}}}
	web := svc(nsA, "web", "v2")
	// a history row to roll back to, as the upgrade machine writes it
	_ = unstructured.SetNestedSlice(web.Object, []any{map[string]any{"image": "ghcr.io/x/web:v1", "result": "Succeeded",
		"at": "2026-12-01T10:00:00Z"}}, "status", "upgradeHistory")
	if err := kc.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	dep := create(obj("apps/v1", "Deployment", nsA, "web", map[string]any{"spec": map[string]any{"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": podSpec}}}), web)
	rs := create(obj("apps/v1", "ReplicaSet", nsA, "web-1", map[string]any{"spec": map[string]any{"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": podSpec}}}), dep)
	create(obj("v1", "Pod", nsA, "web-1-a", map[string]any{"metadata": map[string]any{"name": "web-1-a", "namespace": nsA,
		"labels": map[string]any{"app": "web"}}, "spec": podSpec}), rs)
	create(obj("v1", "Secret", nsA, "web-env", map[string]any{"stringData": map[string]any{"TOKEN": "s3cr3t-value"}}), web)
	var kmsGVK schema.GroupVersionKind
	for ref, e := range kinds.Builtin() {
		if ref.Kind == "KMSSecret" && ref.Placement == kinds.PlacementCanonical {
			kmsGVK = e.GroupVersionKind("hanzo.ai")
		}
	}
	create(obj(kmsGVK.GroupVersion().String(), "KMSSecret", nsA, "web-kms", map[string]any{"spec": map[string]any{"secretsPath": "/web"}}), web)
	create(obj("hanzo.ai/v1", "Static", nsA, "site", map[string]any{"spec": map[string]any{"configMap": "site-files",
		"ingress": map[string]any{"enabled": true, "hosts": []any{"site.example.test"}}}}), nil)
	other := svc(nsB, "other", "v1")
	create(obj("v1", "Pod", nsB, "other-a", map[string]any{"spec": podSpec}), other)
	event := func(name string, on *unstructured.Unstructured, reason string) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: on.GetNamespace()},
			InvolvedObject: corev1.ObjectReference{APIVersion: on.GetAPIVersion(), Kind: on.GetKind(), Namespace: on.GetNamespace(),
				Name: on.GetName(), UID: on.GetUID()}, Reason: reason, Message: reason + " of " + on.GetName(), Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "test"}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1}
		if err := kc.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	event("web-cr", web, "Reconciled")
	event("web-dep", dep, "ScalingReplicaSet")

	q := "?appNamespace=" + nsA
	var list argoApplicationList
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		list = argoApplicationList{}
		code, _, b := w.do("GET", api+"/applications", admin, nil)
		if code != 200 || json.Unmarshal(b, &list) != nil {
			return false, nil
		}
		var tr ApplicationTree
		_, _, tb := w.do("GET", api+"/applications/web/resource-tree"+q, admin, nil)
		_ = json.Unmarshal(tb, &tr)
		return len(ours(list.Items)) == 3 && len(tr.Nodes) == 4, nil
	})
	if err != nil {
		t.Fatalf("the plane never showed web (4 nodes), site and other: %d applications", len(ours(list.Items)))
	}

	t.Run("applications", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var list argoApplicationList
		b := w.ok("GET", api+"/applications", admin, nil, &list)
		requireKeys(t, "list", b, append(prefixed("items[].", appKeys), "metadata", "items")...)
		var names []string
		for _, a := range list.Items {
			checkApp(t, "list item "+a.Metadata.Name, a)
		}
		for _, a := range ours(list.Items) { // the apiserver is shared with the package's other tests
			names = append(names, a.Metadata.Namespace+"/"+a.Metadata.Name)
		}
		if want := []string{nsA + "/site", nsA + "/web", nsB + "/other"}; !slices.Equal(names, want) {
			t.Errorf("applications %v, want %v (a KMSSecret child is no application)", names, want)
		}
		var site argoApplication
		w.ok("GET", api+"/applications/site"+q, admin, nil, &site)
		checkApp(t, "site", site)
		if !slices.Contains(site.Status.Summary.ExternalURLs, "https://site.example.test") {
			t.Errorf("static site row: external URLs %v", site.Status.Summary.ExternalURLs)
		}
		var app argoApplication
		b = w.ok("GET", api+"/applications/web"+q, admin, nil, &app)
		requireKeys(t, "web", b, appKeys...)
		checkApp(t, "web", app)
		kinds := map[string]bool{}
		for _, r := range app.Status.Resources {
			kinds[r.Kind] = true
		}
		if !kinds["KMSSecret"] || !kinds["Deployment"] || kinds["Secret"] {
			t.Errorf("web's resources %v: want its Deployment and KMSSecret, never its Secret", kinds)
		}
		if len(app.Status.History) != 2 {
			t.Errorf("history %+v, want the upgrade row and the current image", app.Status.History)
		}
		// a member sees its org's only
		var mine argoApplicationList
		w.ok("GET", api+"/applications", member, nil, &mine)
		for _, a := range mine.Items {
			if a.Metadata.Namespace == nsB {
				t.Errorf("member of acme sees globex's %s", a.Metadata.Name)
			}
		}
		if n := len(ours(mine.Items)); n != 2 {
			t.Errorf("member sees %d of this test's applications, want acme's 2", n)
		}
	})

	t.Run("tree and streams", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var tr argoTree
		w.ok("GET", api+"/applications/web/resource-tree"+q, admin, nil, &tr)
		checkTree(t, "tree", tr)
		for _, path := range []string{"/stream/applications" + q, "/stream/applications/web/resource-tree" + q} {
			frame := firstFrame(t, srv.URL+Prefix+api+path, admin)
			if strings.Contains(path, "resource-tree") {
				var env struct {
					Result argoTree `json:"result"`
				}
				strict(t, path, frame, &env)
				checkTree(t, path, env.Result)
				continue
			}
			var env struct {
				Result argoWatchEvent `json:"result"`
			}
			strict(t, path, frame, &env)
			inEnum(t, "watch event type", env.Result.Type, enumWatch)
			checkApp(t, path, env.Result.Application)
		}
	})

	t.Run("diff and manifests", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var mr argoManagedResources
		b := w.ok("GET", api+"/applications/web/managed-resources"+q, admin, nil, &mr)
		requireKeys(t, "managed-resources", b, "items")
		if len(mr.Items) != 1 || mr.Items[0].Kind != "Deployment" || !mr.Items[0].Modified {
			t.Fatalf("managed resources %+v: want the modified Deployment and no Secret", mr.Items)
		}
		for _, s := range []string{mr.Items[0].LiveState, mr.Items[0].TargetState, mr.Items[0].NormalizedLiveState, mr.Items[0].PredictedLiveState} {
			var v map[string]any
			if err := json.Unmarshal([]byte(s), &v); err != nil || v["kind"] != "Deployment" {
				t.Errorf("a state is not the Deployment as a JSON string: %q", head([]byte(s)))
			}
		}
		var mf argoManifestResponse
		w.ok("GET", api+"/applications/web/manifests"+q, admin, nil, &mf)
		if len(mf.Manifests) == 0 || mf.Namespace != nsA || mf.Server == "" {
			t.Fatalf("manifests %+v", mf)
		}
		var kindsOf []string
		for _, m := range mf.Manifests {
			var u map[string]any
			if err := json.Unmarshal([]byte(m), &u); err != nil {
				t.Fatalf("manifest not JSON: %v", err)
			}
			kindsOf = append(kindsOf, fmt.Sprint(u["kind"]))
		}
		if !slices.Contains(kindsOf, "Deployment") || slices.Contains(kindsOf, "Secret") {
			t.Errorf("manifests are %v: want what the Service builds, no Secret", kindsOf)
		}
		inEnum(t, "manifests sourceType", mf.SourceType, enumSource)
	})

	t.Run("resource and events", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var rr argoResourceResponse
		b := w.ok("GET", api+"/applications/web/resource"+q+"&namespace="+nsA+"&resourceName=web-1-a&version=v1&kind=Pod", admin, nil, &rr)
		requireKeys(t, "resource", b, "manifest")
		var live map[string]any
		if rr.Manifest == nil || json.Unmarshal([]byte(*rr.Manifest), &live) != nil || live["kind"] != "Pod" {
			t.Fatalf("resource manifest %v", rr.Manifest)
		}
		// the whole pod, not the cache's trimmed copy (the apiserver defaults restartPolicy)
		if spec, _ := live["spec"].(map[string]any); spec["restartPolicy"] != "Always" {
			t.Errorf("resource answered a trimmed pod: spec %v", live["spec"])
		}
		// never a Secret, never an object outside the tree, never another org's
		w.fails("GET", api+"/applications/web/resource"+q+"&namespace="+nsA+"&resourceName=web-env&version=v1&kind=Secret", admin, nil, 404)
		w.fails("GET", api+"/applications/web/resource"+q+"&namespace="+nsB+"&resourceName=other-a&version=v1&kind=Pod", admin, nil, 404)
		w.fails("GET", api+"/applications/other/resource?appNamespace="+nsB+"&namespace="+nsB+"&resourceName=other-a&version=v1&kind=Pod", member, nil, 403)

		var evs corev1.EventList
		w.ok("GET", api+"/applications/web/events"+q, admin, nil, &evs)
		if len(evs.Items) != 1 || evs.Items[0].Reason != "Reconciled" {
			t.Errorf("the CR's events: %+v", evs.Items)
		}
		evs = corev1.EventList{}
		w.ok("GET", api+"/applications/web/events"+q+"&resourceNamespace="+nsA+"&resourceName=web&resourceUID="+string(dep.GetUID()), member, nil, &evs)
		if len(evs.Items) != 1 || evs.Items[0].Reason != "ScalingReplicaSet" {
			t.Errorf("the Deployment's events: %+v", evs.Items)
		}
		w.fails("GET", api+"/applications/other/events?appNamespace="+nsB, member, nil, 403)
	})

	t.Run("logs", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		code, h, b := w.do("GET", api+"/applications/web/logs"+q+"&kind=Deployment&group=apps&resourceName=web&tailLines=50", member, nil)
		if code != 200 || h.Get("Content-Encoding") != "" {
			t.Fatalf("logs: %d %s (encoding %q)", code, head(b), h.Get("Content-Encoding"))
		}
		entries := logEntries(t, bytes.Split(bytes.TrimSpace(b), []byte("\n")), false)
		if len(entries) != 4 || !*entries[3].Last || *entries[0].Content != "web-1-a line 0" || *entries[0].PodName != "web-1-a" {
			t.Fatalf("logs: %s", b)
		}
		logs.mu.Lock()
		last := logs.opts[len(logs.opts)-1]
		logs.mu.Unlock()
		if *last.TailLines != 50 || last.LimitBytes == nil || *last.LimitBytes != maxLogBytesPerPod {
			t.Errorf("pod log options %+v: want tailLines 50 and the byte limit", last)
		}
		// a follow over server-sent events, ended by the client
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(fctx, "GET", w.base+api+"/applications/web/pods/web-1-a/logs"+q+"&follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var frames [][]byte
		for sc.Scan() && len(frames) < 5 {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				frames = append(frames, []byte(strings.TrimSpace(line)))
			}
		}
		cancel()
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/event-stream" || len(frames) < 5 {
			t.Fatalf("follow: content type %q, %d frames", resp.Header.Get("Content-Type"), len(frames))
		}
		logEntries(t, frames, true)
		w.fails("GET", api+"/applications/other/logs?appNamespace="+nsB, member, nil, 403)
		w.fails("GET", api+"/applications/web/logs"+q+"&podName=other-a", admin, nil, 404)
		w.fails("GET", api+"/applications/web/logs"+q+"&tailLines=x", admin, nil, 400)
	})

	t.Run("actions", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		depQ := "&namespace=" + nsA + "&resourceName=web&version=v1&group=apps&kind=Deployment"
		var al argoActionsList
		w.ok("GET", api+"/applications/web/resource/actions"+q+depQ, admin, nil, &al)
		if len(al.Actions) != 1 || al.Actions[0].Name != "restart" || al.Actions[0].Disabled {
			t.Fatalf("actions %+v", al.Actions)
		}
		al = argoActionsList{}
		w.ok("GET", api+"/applications/web/resource/actions"+q+depQ, member, nil, &al)
		if len(al.Actions) != 1 || !al.Actions[0].Disabled {
			t.Errorf("a member's actions %+v: want restart disabled", al.Actions)
		}
		al = argoActionsList{}
		w.ok("GET", api+"/applications/web/resource/actions"+q+"&namespace="+nsA+"&resourceName=web-1-a&version=v1&kind=Pod", admin, nil, &al)
		if len(al.Actions) != 0 {
			t.Errorf("a Pod's actions %+v: want none", al.Actions)
		}
		w.fails("POST", api+"/applications/web/resource/actions"+q+depQ, member, []byte(`"restart"`), 403)
		var empty struct{}
		w.ok("POST", api+"/applications/web/resource/actions"+q+depQ, admin, []byte(`"restart"`), &empty)
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(dep.GroupVersionKind())
		if err := kc.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
			t.Fatal(err)
		}
		at, _, _ := unstructured.NestedString(got.Object, "spec", "template", "metadata", "annotations", AnnotationRestartedAt)
		if at == "" {
			t.Error("restart did not stamp the pod template")
		}
		body, _ := json.Marshal(ResourceActionRunRequest{Name: "web", Namespace: nsA, ResourceName: "web", Version: "v1", Group: "apps",
			Kind: "Deployment", Action: "restart", AppNamespace: nsA})
		w.ok("POST", api+"/applications/web/resource/actions/v2", admin, body, &empty)
		w.fails("POST", api+"/applications/web/resource/actions"+q+depQ, admin, []byte(`"delete"`), 400)
		w.fails("POST", api+"/applications/web/resource/actions"+q+"&namespace="+nsA+"&resourceName=web-env&version=v1&kind=Secret", admin,
			[]byte(`"restart"`), 404)
	})

	t.Run("rollback as the dashboard does it", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var app argoApplication
		raw := w.ok("GET", api+"/applications/web"+q, admin, nil, &app)
		// the dashboard: copy the application, switch automation off, PUT, then rollback
		var doc map[string]any
		_ = json.Unmarshal(raw, &doc)
		spec := doc["spec"].(map[string]any)
		spec["syncPolicy"] = map[string]any{"automated": map[string]any{"enabled": false}}
		put, _ := json.Marshal(doc)
		w.fails("PUT", api+"/applications/web?validate=false", member, put, 403)
		var updated argoApplication
		w.ok("PUT", api+"/applications/web?validate=false", admin, put, &updated)
		checkApp(t, "PUT answer", updated)
		spec["syncPolicy"] = map[string]any{"automated": nil}
		put, _ = json.Marshal(doc)
		w.ok("PUT", api+"/applications/web?validate=false", admin, put, &updated)
		var rolled argoApplication
		w.ok("POST", api+"/applications/web/rollback", admin, []byte(`{"id":0,"appNamespace":"`+nsA+`","prune":false}`), &rolled)
		checkApp(t, "rollback answer", rolled)
		if rolled.Operation == nil || rolled.Operation.Sync == nil || rolled.Operation.Sync.Revision != "ghcr.io/x/web:v1" {
			t.Errorf("rollback operation %+v", rolled.Operation)
		}
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(web.GroupVersionKind())
		if err := kc.Get(ctx, client.ObjectKeyFromObject(web), cr); err != nil {
			t.Fatal(err)
		}
		if tag, _, _ := unstructured.NestedString(cr.Object, "spec", "image", "tag"); tag != "v1" {
			t.Errorf("after the rollback the CR's tag is %q, want v1", tag)
		}
		// an update that changes anything else is refused, naming the field
		spec["syncPolicy"] = map[string]any{"automated": map[string]any{"selfHeal": true}}
		put, _ = json.Marshal(doc)
		if e := w.fails("PUT", api+"/applications/web", admin, put, 400); !strings.Contains(e.Message, "auto-sync") {
			t.Errorf("automation on: %q", e.Message)
		}
		spec["syncPolicy"], spec["project"] = nil, "globex"
		put, _ = json.Marshal(doc)
		if e := w.fails("PUT", api+"/applications/web", admin, put, 400); !strings.Contains(e.Message, "spec.project") {
			t.Errorf("project change: %q", e.Message)
		}
	})

	t.Run("sync, reconcile and the rest", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var app argoApplication
		w.ok("POST", api+"/applications/web/sync", admin, []byte(`{"appNamespace":"`+nsA+`","prune":false,"dryRun":false,"syncOptions":{"items":[]}}`), &app)
		checkApp(t, "sync answer", app)
		w.ok("POST", api+"/applications/web/reconcile"+q, admin, nil, &app)
		var rm argoRevisionMetadata
		w.ok("GET", api+"/applications/web/revisions/ghcr.io/x/web:v1/metadata"+q, admin, nil, &rm)
		var sw argoSyncWindows
		w.ok("GET", api+"/applications/web/syncwindows"+q, admin, nil, &sw)
		if sw.CanSync == nil {
			t.Error("syncwindows: canSync absent")
		}
		var cl argoClusterList
		w.ok("GET", api+"/clusters", admin, nil, &cl)
		for _, c := range cl.Items {
			inEnum(t, "cluster connection", c.ConnectionState.Status, enumConnection)
		}
		var pl argoProjectList
		w.ok("GET", api+"/projects", admin, nil, &pl)
		var p argoProject
		w.ok("GET", api+"/projects/default", admin, nil, &p)
		var st argoSettings
		w.ok("GET", api+"/settings", member, nil, &st)
		var ci argoCanI
		for _, path := range []string{"/account/can-i/applications/sync/acme/web", "/account/can-i/applications/get/acme/web"} {
			ci = argoCanI{}
			b := w.ok("GET", api+path, member, nil, &ci)
			requireKeys(t, path, b, "value")
			inEnum(t, path, ci.Value, []string{"yes", "no"})
		}
		w.fails("GET", api+"/account/can-i/nothing/get/x", member, nil, 400)
		var ui argoUserInfo
		w.ok("GET", api+"/session/userinfo", member, nil, &ui)
		var v argoVersion
		w.ok("GET", "/api/version", member, nil, &v)
		var empty struct{}
		code, _, b := w.do("POST", "/reconcile", admin, nil)
		if code == 200 {
			strict(t, "POST /reconcile", b, &empty)
		} else {
			var e argoError
			strict(t, "POST /reconcile error", b, &e)
		}
	})

	t.Run("gitops", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		var gl argoApplicationList
		b := w.ok("GET", "/gitops", admin, nil, &gl)
		requireKeys(t, "gitops", b, prefixed("items[].", appKeys)...)
		if len(gl.Items) != 1 {
			t.Fatalf("gitops rows %d", len(gl.Items))
		}
		g := gl.Items[0]
		checkApp(t, "gitops row", g)
		if g.Status.Sync.Status != "OutOfSync" || g.Status.Health.Status != "Degraded" || len(g.Status.Resources) != 2 ||
			g.Status.OperationState == nil || g.Status.OperationState.Phase != "Failed" || g.Status.Sync.Revision != "c0ffee" {
			t.Errorf("gitops row (a denied object): %+v", g.Status)
		}
		gl = argoApplicationList{}
		w.ok("GET", api+"/gitops", member, nil, &gl)
		if len(gl.Items) != 1 || len(gl.Items[0].Status.Resources) != 1 || gl.Items[0].Status.Resources[0].Namespace != nsA ||
			len(gl.Items[0].Status.Conditions) != 0 {
			t.Errorf("a member's gitops row shows %+v: want its org's object only, no file skips", gl.Items[0].Status.Resources)
		}
	})

	t.Run("errors", func(t *testing.T) {
		w := wire{t: t, base: w.base}
		w.fails("GET", api+"/nothing-here", admin, nil, 404)
		w.fails("GET", "/api/v2/applications", "", nil, 404)
		w.fails("DELETE", api+"/applications/web", admin, nil, 405)
		w.fails("GET", api+"/applications", "", nil, 401)
		w.fails("GET", api+"/applications/nope", admin, nil, 404)
		w.fails("GET", api+"/applications/other?appNamespace="+nsB, member, nil, 403)
	})
}

// ours are the applications of this test's namespaces.
func ours(apps []argoApplication) []argoApplication {
	var out []argoApplication
	for _, a := range apps {
		if strings.HasPrefix(a.Metadata.Namespace, "wire-") {
			out = append(out, a)
		}
	}
	return out
}

// firstFrame opens a stream and returns its first data frame.
func firstFrame(t *testing.T, url, token string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(strings.TrimSpace(line))
		}
	}
	t.Fatalf("%s: no frame", url)
	return nil
}

// logEntries decodes {"result":LogEntry} lines strictly and asserts every field is there.
func logEntries(t *testing.T, lines [][]byte, follow bool) []argoLogEntry {
	t.Helper()
	var out []argoLogEntry
	for _, l := range lines {
		var env struct {
			Result argoLogEntry `json:"result"`
		}
		strict(t, "log entry", l, &env)
		e := env.Result
		if e.Content == nil || e.TimeStamp == nil || e.Last == nil || e.TimeStampStr == nil || e.PodName == nil {
			t.Fatalf("log entry %s lacks a required field", l)
		}
		if _, err := time.Parse(time.RFC3339Nano, *e.TimeStampStr); err != nil {
			t.Errorf("timeStampStr %q: %v", *e.TimeStampStr, err)
		}
		if follow && *e.Last {
			t.Errorf("a follow sent last before it ended")
		}
		out = append(out, e)
	}
	return out
}
