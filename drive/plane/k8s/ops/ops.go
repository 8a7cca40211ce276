// Package ops is the contract of the /v1/k8s cluster plane: 36 named operations in ten
// groups over the registered clusters of the caller's org, each with a typed request and
// reply. It is standard library only, so a client needs nothing but this file.
//
// Every operation is reached the same way: the caller's org comes from its validated token
// (never a field of a request), the request's Cluster is looked up in that org's
// registrations only, and every namespace it names is checked against the registration's
// namespaces bound — refused, never narrowed. The doc comment of each request type is the
// operation's one description: docs.go is generated from it (go test -run TestDocs -update)
// and it reaches the HTTP route, the OpenAPI document, the MCP tool and the CLI.
package ops

// Group is one of the ten groups of operations.
type Group string

// The ten groups.
const (
	Clusters   Group = "clusters"
	Nodes      Group = "nodes"
	Namespaces Group = "namespaces"
	Pods       Group = "pods"
	Volumes    Group = "volumes"
	Workloads  Group = "workloads"
	Jobs       Group = "jobs"
	Resources  Group = "resources"
	Access     Group = "access"
	Metrics    Group = "metrics"
)

// Groups lists the groups in their order.
var Groups = []Group{Clusters, Nodes, Namespaces, Pods, Volumes, Workloads, Jobs, Resources, Access, Metrics}

// Rule is one grant an operation needs on a registered cluster (an RBAC PolicyRule of one
// API group). The plane's ClusterRole is the union of every op's rules, nothing more.
type Rule struct {
	APIGroup  string
	Resources []string
	Verbs     []string
}

// Scope says what part of a registration an operation reaches.
type Scope string

const (
	// Home: the operation reads or writes the registry on the operator's own cluster, not
	// the registered one.
	Home Scope = "home"
	// Namespaced: one namespace, which must be inside the registration's bound.
	Namespaced Scope = "namespaced"
	// Whole: cluster-scoped objects or every namespace: a bounded registration refuses it.
	Whole Scope = "whole"
)

// Op describes one operation: its name (group.member), whether it changes anything, what it
// reaches, the grants it needs and zero values of its request and reply (for schemas).
type Op struct {
	Name     string
	Group    Group
	Mutating bool
	Scope    Scope
	Rules    []Rule
	Request  any
	Reply    any
}

// Doc is the operation's description: the doc comment of its request type.
func (o Op) Doc() string { return docs[o.Name] }

// Member is the name within the group (cordon of nodes.cordon).
func (o Op) Member() string { return o.Name[len(o.Group)+1:] }

// Lookup returns the operation named name.
func Lookup(name string) (Op, bool) {
	for _, o := range All {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

func r(group string, resources []string, verbs ...string) Rule {
	return Rule{APIGroup: group, Resources: resources, Verbs: verbs}
}

func res(names ...string) []string { return names }

// All is every operation, by group. Resources' closed set (Kinds) adds its own grants.
var All = []Op{
	{Name: "clusters.list", Group: Clusters, Scope: Home, Request: ClustersListRequest{}, Reply: ClustersListReply{}},
	{Name: "clusters.get", Group: Clusters, Scope: Home, Request: ClustersGetRequest{}, Reply: ClustersGetReply{}},
	{Name: "clusters.register", Group: Clusters, Scope: Home, Mutating: true, Request: ClustersRegisterRequest{}, Reply: ClustersRegisterReply{}},
	{Name: "clusters.deregister", Group: Clusters, Scope: Home, Mutating: true, Request: ClustersDeregisterRequest{}, Reply: ClustersDeregisterReply{}},
	{Name: "clusters.status", Group: Clusters, Scope: Home, Request: ClustersStatusRequest{}, Reply: ClustersStatusReply{}},

	{Name: "nodes.list", Group: Nodes, Scope: Whole, Rules: []Rule{r("", res("nodes"), "list")}, Request: NodesListRequest{}, Reply: NodesListReply{}},
	{Name: "nodes.cordon", Group: Nodes, Scope: Whole, Mutating: true, Rules: []Rule{
		r("", res("nodes"), "get", "patch"), r("", res("pods"), "list"), r("", res("pods/eviction"), "create")},
		Request: NodesCordonRequest{}, Reply: NodesCordonReply{}},
	{Name: "nodes.volumeStats", Group: Nodes, Scope: Whole, Rules: []Rule{
		r("", res("nodes"), "list"), r("", res("nodes/proxy"), "get"), r("", res("persistentvolumeclaims"), "list")},
		Request: NodesVolumeStatsRequest{}, Reply: NodesVolumeStatsReply{}},

	{Name: "namespaces.list", Group: Namespaces, Scope: Namespaced, Rules: []Rule{r("", res("namespaces"), "get", "list")}, Request: NamespacesListRequest{}, Reply: NamespacesListReply{}},
	{Name: "namespaces.get", Group: Namespaces, Scope: Namespaced, Rules: []Rule{r("", res("namespaces"), "get")}, Request: NamespacesGetRequest{}, Reply: NamespacesGetReply{}},
	{Name: "namespaces.create", Group: Namespaces, Scope: Whole, Mutating: true, Rules: []Rule{r("", res("namespaces"), "create")}, Request: NamespacesCreateRequest{}, Reply: NamespacesCreateReply{}},
	{Name: "namespaces.delete", Group: Namespaces, Scope: Whole, Mutating: true, Rules: []Rule{r("", res("namespaces"), "delete")}, Request: NamespacesDeleteRequest{}, Reply: NamespacesDeleteReply{}},

	{Name: "pods.list", Group: Pods, Scope: Namespaced, Rules: []Rule{r("", res("pods"), "list")}, Request: PodsListRequest{}, Reply: PodsListReply{}},
	{Name: "pods.logs", Group: Pods, Scope: Namespaced, Rules: []Rule{r("", res("pods/log"), "get")}, Request: PodsLogsRequest{}, Reply: PodsLogsReply{}},

	{Name: "volumes.listClaims", Group: Volumes, Scope: Namespaced, Rules: []Rule{r("", res("persistentvolumeclaims"), "list")}, Request: VolumesListClaimsRequest{}, Reply: VolumesListClaimsReply{}},
	{Name: "volumes.expandClaim", Group: Volumes, Scope: Namespaced, Mutating: true, Rules: []Rule{r("", res("persistentvolumeclaims"), "get", "patch")}, Request: VolumesExpandClaimRequest{}, Reply: VolumesExpandClaimReply{}},
	{Name: "volumes.listVolumes", Group: Volumes, Scope: Whole, Rules: []Rule{r("", res("persistentvolumes"), "list")}, Request: VolumesListVolumesRequest{}, Reply: VolumesListVolumesReply{}},
	{Name: "volumes.listClasses", Group: Volumes, Scope: Whole, Rules: []Rule{r("storage.k8s.io", res("storageclasses"), "list")}, Request: VolumesListClassesRequest{}, Reply: VolumesListClassesReply{}},

	{Name: "workloads.list", Group: Workloads, Scope: Namespaced, Rules: []Rule{r("apps", res("deployments", "statefulsets", "daemonsets"), "list")}, Request: WorkloadsListRequest{}, Reply: WorkloadsListReply{}},
	{Name: "workloads.get", Group: Workloads, Scope: Namespaced, Rules: []Rule{r("apps", res("deployments", "statefulsets", "daemonsets"), "get")}, Request: WorkloadsGetRequest{}, Reply: WorkloadsGetReply{}},
	{Name: "workloads.scale", Group: Workloads, Scope: Namespaced, Mutating: true, Rules: []Rule{
		r("apps", res("deployments", "statefulsets"), "get"), r("apps", res("deployments/scale", "statefulsets/scale"), "patch")},
		Request: WorkloadsScaleRequest{}, Reply: WorkloadsScaleReply{}},
	{Name: "workloads.restart", Group: Workloads, Scope: Namespaced, Mutating: true, Rules: []Rule{r("apps", res("deployments", "statefulsets", "daemonsets"), "get", "patch")}, Request: WorkloadsRestartRequest{}, Reply: WorkloadsRestartReply{}},
	{Name: "workloads.pause", Group: Workloads, Scope: Namespaced, Mutating: true, Rules: []Rule{r("apps", res("deployments"), "get", "patch")}, Request: WorkloadsPauseRequest{}, Reply: WorkloadsPauseReply{}},
	{Name: "workloads.resume", Group: Workloads, Scope: Namespaced, Mutating: true, Rules: []Rule{r("apps", res("deployments"), "get", "patch")}, Request: WorkloadsResumeRequest{}, Reply: WorkloadsResumeReply{}},
	{Name: "workloads.history", Group: Workloads, Scope: Namespaced, Rules: []Rule{
		r("apps", res("deployments", "statefulsets", "daemonsets"), "get"), r("apps", res("replicasets", "controllerrevisions"), "list")},
		Request: WorkloadsHistoryRequest{}, Reply: WorkloadsHistoryReply{}},
	{Name: "workloads.delete", Group: Workloads, Scope: Namespaced, Mutating: true, Rules: []Rule{r("apps", res("deployments", "statefulsets", "daemonsets"), "get", "delete")}, Request: WorkloadsDeleteRequest{}, Reply: WorkloadsDeleteReply{}},

	{Name: "jobs.list", Group: Jobs, Scope: Namespaced, Rules: []Rule{r("batch", res("jobs", "cronjobs"), "list")}, Request: JobsListRequest{}, Reply: JobsListReply{}},
	{Name: "jobs.trigger", Group: Jobs, Scope: Namespaced, Mutating: true, Rules: []Rule{r("batch", res("cronjobs"), "get"), r("batch", res("jobs"), "create")}, Request: JobsTriggerRequest{}, Reply: JobsTriggerReply{}},
	{Name: "jobs.delete", Group: Jobs, Scope: Namespaced, Mutating: true, Rules: []Rule{r("batch", res("jobs"), "delete")}, Request: JobsDeleteRequest{}, Reply: JobsDeleteReply{}},

	{Name: "resources.list", Group: Resources, Scope: Namespaced, Request: ResourcesListRequest{}, Reply: ResourcesListReply{}},
	{Name: "resources.get", Group: Resources, Scope: Namespaced, Request: ResourcesGetRequest{}, Reply: ResourcesGetReply{}},
	{Name: "resources.apply", Group: Resources, Scope: Namespaced, Mutating: true, Request: ResourcesApplyRequest{}, Reply: ResourcesApplyReply{}},
	{Name: "resources.delete", Group: Resources, Scope: Namespaced, Mutating: true, Request: ResourcesDeleteRequest{}, Reply: ResourcesDeleteReply{}},
	{Name: "resources.watch", Group: Resources, Scope: Namespaced, Request: ResourcesWatchRequest{}, Reply: ResourcesWatchReply{}},

	{Name: "access.review", Group: Access, Scope: Whole, Rules: []Rule{r("authorization.k8s.io", res("selfsubjectaccessreviews"), "create")}, Request: AccessReviewRequest{}, Reply: AccessReviewReply{}},

	{Name: "metrics.pods", Group: Metrics, Scope: Namespaced, Rules: []Rule{r("metrics.k8s.io", res("pods"), "list")}, Request: MetricsPodsRequest{}, Reply: MetricsPodsReply{}},
}

// ResourceVerbs are the verbs each resources.* op needs on every Kind of the closed set.
var ResourceVerbs = map[string][]string{
	"resources.list":   {"list"},
	"resources.get":    {"get"},
	"resources.apply":  {"patch", "create"}, // server-side apply; create when it creates
	"resources.delete": {"delete"},
	"resources.watch":  {"list", "watch"},
}

// Kind is one member of resources.*'s closed set of kinds.
type Kind struct {
	APIVersion string // group/version ("v1" for the core group)
	Kind       string
	Resource   string // plural
}

// Kinds is the closed set of core kinds resources.* serve. The universe Kinds (KMSSecret
// among them) join it in the plane, at the operator's API group. Secret is not a member: a
// credential is written as a KMSSecret, never read back.
var Kinds = []Kind{
	{"v1", "ConfigMap", "configmaps"},
	{"v1", "Service", "services"},
	{"v1", "ServiceAccount", "serviceaccounts"},
	{"apps/v1", "Deployment", "deployments"},
	{"apps/v1", "StatefulSet", "statefulsets"},
	{"apps/v1", "DaemonSet", "daemonsets"},
	{"batch/v1", "Job", "jobs"},
	{"batch/v1", "CronJob", "cronjobs"},
	{"networking.k8s.io/v1", "Ingress", "ingresses"},
	{"networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"},
	{"autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"},
	{"policy/v1", "PodDisruptionBudget", "poddisruptionbudgets"},
}

// Error is the body of every refusal and failure.
type Error struct {
	// Code: BadRequest, Unauthenticated, NotFound (no such cluster of the caller's org, or no
	// such object), OutOfBound (a namespace outside the registration's bound), Forbidden
	// (the cluster's RBAC, or a gated op), Conflict, TooLarge, RateLimited, Timeout, Failed.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Cluster is a registration as the caller's org sees it.
type Cluster struct {
	Name       string   `json:"name"`
	Org        string   `json:"org"`
	Provider   string   `json:"provider,omitempty"`
	Endpoint   string   `json:"endpoint"`
	Nodes      int32    `json:"nodes,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"` // empty: the whole cluster
	Registered string   `json:"registered,omitempty"` // RFC 3339
	Default    bool     `json:"default,omitempty"`
}

// ClustersListRequest lists the clusters registered for the caller's org.
type ClustersListRequest struct{}

// ClustersListReply holds the org's registrations, sorted by name.
type ClustersListReply struct {
	Clusters []Cluster `json:"clusters"`
}

// ClustersGetRequest returns one registration of the caller's org (NotFound for any name
// the org has not registered, whether or not another org has).
type ClustersGetRequest struct {
	Cluster string `json:"cluster"`
}

// ClustersGetReply is the registration.
type ClustersGetReply struct {
	Cluster Cluster `json:"cluster"`
}

// ClustersRegisterRequest attaches a cluster to the caller's org: the kubeconfig must be
// self-contained data (no file paths, exec or auth-provider plugins) whose server is the
// endpoint; it is stored at the location derived from the org and the name, never
// returned. Namespaces bounds a registration made with a scoped credential (empty: the
// whole cluster). The cluster is probed through /version before the reply.
type ClustersRegisterRequest struct {
	Cluster    string   `json:"cluster"`
	Endpoint   string   `json:"endpoint"`
	Provider   string   `json:"provider,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Kubeconfig string   `json:"kubeconfig"`
}

// ClustersRegisterReply is the registration and the server version the probe read.
type ClustersRegisterReply struct {
	Cluster Cluster `json:"cluster"`
	Version string  `json:"version,omitempty"`
	Probe   string  `json:"probe,omitempty"` // the probe's failure, when it failed
}

// ClustersDeregisterRequest removes a registration of the caller's org and its stored
// credential; nothing on the cluster itself is touched.
type ClustersDeregisterRequest struct {
	Cluster string `json:"cluster"`
}

// ClustersDeregisterReply says the registration is gone.
type ClustersDeregisterReply struct {
	Deregistered bool `json:"deregistered"`
}

// ClustersStatusRequest probes a cluster's /version endpoint with its stored credential
// (not a namespace list: a registration bounded to one namespace would fail one and look
// dead while healthy).
type ClustersStatusRequest struct {
	Cluster string `json:"cluster"`
}

// ClustersStatusReply says whether the cluster answered, and with which version.
type ClustersStatusReply struct {
	Reachable bool   `json:"reachable"`
	Version   string `json:"version,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Node is one node of a cluster.
type Node struct {
	Name          string `json:"name"`
	Ready         bool   `json:"ready"`
	Unschedulable bool   `json:"unschedulable"`
	Kubelet       string `json:"kubelet,omitempty"`
	CPU           string `json:"cpu,omitempty"`    // allocatable
	Memory        string `json:"memory,omitempty"` // allocatable
	Pods          string `json:"pods,omitempty"`   // allocatable
}

// NodesListRequest lists a cluster's nodes (whole-cluster registrations only).
type NodesListRequest struct {
	Cluster string `json:"cluster"`
}

// NodesListReply holds the nodes, sorted by name.
type NodesListReply struct {
	Nodes []Node `json:"nodes"`
}

// NodesCordonRequest cordons and drains a node in one op over three calls: mark it
// unschedulable, list its pods, and evict each through the Eviction API, so a
// PodDisruptionBudget refusal is the system working: it is reported, never forced. DaemonSet
// and mirror pods are skipped (they are not rescheduled elsewhere). Uncordon marks the node
// schedulable again and evicts nothing. There is no generic node patch.
type NodesCordonRequest struct {
	Cluster  string `json:"cluster"`
	Node     string `json:"node"`
	Uncordon bool   `json:"uncordon,omitempty"`
}

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// EvictionRefusal is a pod the Eviction API did not evict. Reason DisruptionBudget: a
// PodDisruptionBudget allows no disruption now (429); Error: anything else.
type EvictionRefusal struct {
	Pod     PodRef `json:"pod"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// NodesCordonReply says what each call did.
type NodesCordonReply struct {
	Node          string            `json:"node"`
	Unschedulable bool              `json:"unschedulable"`
	Evicted       []PodRef          `json:"evicted,omitempty"`
	Refused       []EvictionRefusal `json:"refused,omitempty"`
	Skipped       []PodRef          `json:"skipped,omitempty"`
}

// NodesVolumeStatsRequest reads the volume usage of the claims through each node's kubelet
// summary (the node proxy: the one op that needs that grant). It reports nodesRead of
// nodesTotal: a claim with no row is unmeasured, not empty. Namespace filters the claims.
type NodesVolumeStatsRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace,omitempty"`
}

// ClaimUsage is a claim's usage as its node's kubelet reported it.
type ClaimUsage struct {
	Claim          PodRef `json:"claim"`
	Node           string `json:"node"`
	UsedBytes      int64  `json:"usedBytes"`
	CapacityBytes  int64  `json:"capacityBytes"`
	AvailableBytes int64  `json:"availableBytes"`
}

// NodesVolumeStatsReply holds the measured claims, the unmeasured ones, and which nodes
// could be read.
type NodesVolumeStatsReply struct {
	NodesRead  int          `json:"nodesRead"`
	NodesTotal int          `json:"nodesTotal"`
	Claims     []ClaimUsage `json:"claims,omitempty"`
	Unmeasured []PodRef     `json:"unmeasured,omitempty"`
	NodeErrors []string     `json:"nodeErrors,omitempty"`
}

// Namespace is one namespace.
type Namespace struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Org   string `json:"org,omitempty"` // its hanzo.ai/org label, as set
}

// NamespacesListRequest lists the namespaces of a cluster: every one of a whole-cluster
// registration, the bound's of a bounded one (each read by name).
type NamespacesListRequest struct {
	Cluster string `json:"cluster"`
}

// NamespacesListReply holds the namespaces, sorted by name.
type NamespacesListReply struct {
	Namespaces []Namespace `json:"namespaces"`
}

// NamespacesGetRequest returns one namespace inside the bound.
type NamespacesGetRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// NamespacesGetReply is the namespace.
type NamespacesGetReply struct {
	Namespace Namespace `json:"namespace"`
}

// NamespacesCreateRequest creates a namespace (whole-cluster registrations only). It sets no
// labels: a namespace's org is the tenancy rule's business.
type NamespacesCreateRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// NamespacesCreateReply says whether it was created or already existed.
type NamespacesCreateReply struct {
	Namespace Namespace `json:"namespace"`
	Created   bool      `json:"created"`
}

// NamespacesDeleteRequest deletes a namespace and so every object in it, claims included.
// It is gated apart from every other op (off unless the plane allows it), refused for a
// bounded registration, and Confirm must repeat the namespace's name.
type NamespacesDeleteRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Confirm   string `json:"confirm"`
}

// NamespacesDeleteReply says the deletion started (the namespace terminates).
type NamespacesDeleteReply struct {
	Deleting bool `json:"deleting"`
}

// Pod is one pod.
type Pod struct {
	Name       string   `json:"name"`
	Namespace  string   `json:"namespace"`
	Phase      string   `json:"phase"`
	Node       string   `json:"node,omitempty"`
	Ready      bool     `json:"ready"`
	Restarts   int32    `json:"restarts"`
	Containers []string `json:"containers"`
}

// PodsListRequest lists the pods of a namespace, optionally by label selector.
type PodsListRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Selector  string `json:"selector,omitempty"`
}

// PodsListReply holds the pods, sorted by name.
type PodsListReply struct {
	Pods []Pod `json:"pods"`
}

// PodsLogsRequest reads a container's log: the last TailLines lines (default 200, at most
// 5000), at most 1 MiB; Previous reads the last terminated container's.
type PodsLogsRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	TailLines int64  `json:"tailLines,omitempty"`
	Previous  bool   `json:"previous,omitempty"`
}

// PodsLogsReply is the log text; Truncated when the byte limit cut it.
type PodsLogsReply struct {
	Log       string `json:"log"`
	Truncated bool   `json:"truncated"`
}

// Claim is one PersistentVolumeClaim.
type Claim struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Phase        string `json:"phase"`
	Volume       string `json:"volume,omitempty"`
	StorageClass string `json:"storageClass,omitempty"`
	Request      string `json:"request"`
	Capacity     string `json:"capacity,omitempty"`
}

// VolumesListClaimsRequest lists the PersistentVolumeClaims of a namespace.
type VolumesListClaimsRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// VolumesListClaimsReply holds the claims, sorted by name.
type VolumesListClaimsReply struct {
	Claims []Claim `json:"claims"`
}

// VolumesExpandClaimRequest grows a claim to SizeGiB: the one change that keeps claim,
// volume, device and filesystem in agreement. A size not above the current request is
// refused (a claim never shrinks); nothing in the plane deletes a claim.
type VolumesExpandClaimRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	SizeGiB   int64  `json:"sizeGiB"`
}

// VolumesExpandClaimReply holds the request before and after.
type VolumesExpandClaimReply struct {
	Claim    Claim  `json:"claim"`
	Previous string `json:"previous"`
}

// Volume is one PersistentVolume.
type Volume struct {
	Name          string  `json:"name"`
	Phase         string  `json:"phase"`
	Capacity      string  `json:"capacity"`
	StorageClass  string  `json:"storageClass,omitempty"`
	ReclaimPolicy string  `json:"reclaimPolicy,omitempty"`
	Claim         *PodRef `json:"claim,omitempty"`
}

// VolumesListVolumesRequest lists the PersistentVolumes (whole-cluster registrations only).
type VolumesListVolumesRequest struct {
	Cluster string `json:"cluster"`
}

// VolumesListVolumesReply holds the volumes, sorted by name.
type VolumesListVolumesReply struct {
	Volumes []Volume `json:"volumes"`
}

// StorageClass is one StorageClass.
type StorageClass struct {
	Name           string `json:"name"`
	Provisioner    string `json:"provisioner"`
	AllowExpansion bool   `json:"allowExpansion"`
	Default        bool   `json:"default"`
}

// VolumesListClassesRequest lists the StorageClasses, and so which claims can grow
// (whole-cluster registrations only).
type VolumesListClassesRequest struct {
	Cluster string `json:"cluster"`
}

// VolumesListClassesReply holds the classes, sorted by name.
type VolumesListClassesReply struct {
	Classes []StorageClass `json:"classes"`
}

// Workload is one Deployment, StatefulSet or DaemonSet.
type Workload struct {
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Replicas  int32    `json:"replicas"` // desired (a DaemonSet: scheduled)
	Ready     int32    `json:"ready"`
	Updated   int32    `json:"updated"`
	Available int32    `json:"available"`
	Paused    bool     `json:"paused,omitempty"`
	Images    []string `json:"images"`
}

// WorkloadsListRequest lists the Deployments, StatefulSets and DaemonSets of a namespace.
type WorkloadsListRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// WorkloadsListReply holds the workloads, sorted by kind and name.
type WorkloadsListReply struct {
	Workloads []Workload `json:"workloads"`
}

// WorkloadRef names a workload: Kind is Deployment, StatefulSet or DaemonSet.
type WorkloadRef struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// WorkloadsGetRequest returns one workload's rollout state.
type WorkloadsGetRequest struct {
	WorkloadRef
}

// WorkloadsGetReply is the workload.
type WorkloadsGetReply struct {
	Workload Workload `json:"workload"`
}

// WorkloadsScaleRequest sets a Deployment's or StatefulSet's replicas through its scale
// subresource (at most the plane's replica limit). A CR's controller may set it back: scale
// the CR's own replicas instead.
type WorkloadsScaleRequest struct {
	WorkloadRef
	Replicas int32 `json:"replicas"`
}

// WorkloadsScaleReply holds the replicas before and the workload after.
type WorkloadsScaleReply struct {
	Previous int32    `json:"previous"`
	Workload Workload `json:"workload"`
}

// WorkloadsRestartRequest rolls a workload's pods by stamping its pod template's
// kubectl.kubernetes.io/restartedAt annotation, as kubectl rollout restart does.
type WorkloadsRestartRequest struct {
	WorkloadRef
}

// WorkloadsRestartReply holds the stamp.
type WorkloadsRestartReply struct {
	RestartedAt string `json:"restartedAt"`
}

// WorkloadsPauseRequest pauses a Deployment's rollout (spec.paused).
type WorkloadsPauseRequest struct {
	WorkloadRef
}

// WorkloadsPauseReply says the Deployment is paused.
type WorkloadsPauseReply struct {
	Paused bool `json:"paused"`
}

// WorkloadsResumeRequest resumes a paused Deployment's rollout.
type WorkloadsResumeRequest struct {
	WorkloadRef
}

// WorkloadsResumeReply says the Deployment is no longer paused.
type WorkloadsResumeReply struct {
	Paused bool `json:"paused"`
}

// Revision is one revision of a workload's rollout history.
type Revision struct {
	Revision int64    `json:"revision"`
	Name     string   `json:"name"` // the ReplicaSet or ControllerRevision
	Created  string   `json:"created"`
	Images   []string `json:"images,omitempty"`
}

// WorkloadsHistoryRequest lists a workload's revisions: a Deployment's ReplicaSets, a
// StatefulSet's or DaemonSet's ControllerRevisions, owned by it.
type WorkloadsHistoryRequest struct {
	WorkloadRef
}

// WorkloadsHistoryReply holds the revisions, newest first.
type WorkloadsHistoryReply struct {
	Revisions []Revision `json:"revisions"`
}

// WorkloadsDeleteRequest deletes a workload (its pods follow, in the background); Confirm
// must repeat its name. A StatefulSet whose claim retention policy deletes its claims is
// refused: nothing in the plane deletes a claim.
type WorkloadsDeleteRequest struct {
	WorkloadRef
	Confirm string `json:"confirm"`
}

// WorkloadsDeleteReply says it was deleted.
type WorkloadsDeleteReply struct {
	Deleted bool `json:"deleted"`
}

// Job is one Job.
type Job struct {
	Name      string `json:"name"`
	Active    int32  `json:"active"`
	Succeeded int32  `json:"succeeded"`
	Failed    int32  `json:"failed"`
	Complete  bool   `json:"complete"`
	CronJob   string `json:"cronJob,omitempty"`
}

// CronJob is one CronJob.
type CronJob struct {
	Name         string `json:"name"`
	Schedule     string `json:"schedule"`
	Suspend      bool   `json:"suspend"`
	LastSchedule string `json:"lastSchedule,omitempty"`
}

// JobsListRequest lists the Jobs and CronJobs of a namespace.
type JobsListRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// JobsListReply holds them, sorted by name.
type JobsListReply struct {
	Jobs     []Job     `json:"jobs"`
	CronJobs []CronJob `json:"cronJobs"`
}

// JobsTriggerRequest runs a CronJob now: a Job from its job template, owned by it, as
// kubectl create job --from=cronjob/NAME does.
type JobsTriggerRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	CronJob   string `json:"cronJob"`
}

// JobsTriggerReply names the Job made.
type JobsTriggerReply struct {
	Job string `json:"job"`
}

// JobsDeleteRequest deletes a Job and its pods (in the background).
type JobsDeleteRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
}

// JobsDeleteReply says it was deleted.
type JobsDeleteReply struct {
	Deleted bool `json:"deleted"`
}

// ResourceRef names a kind of the closed set (apiVersion and kind, e.g. apps/v1
// Deployment, or a universe Kind at the operator's group) in a namespace.
type ResourceRef struct {
	Cluster    string `json:"cluster"`
	Namespace  string `json:"namespace"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ResourcesListRequest lists objects of one kind of the closed set in a namespace, one page
// of at most Limit (default and maximum 500); Continue resumes.
type ResourcesListRequest struct {
	ResourceRef
	Selector string `json:"selector,omitempty"`
	Limit    int64  `json:"limit,omitempty"`
	Continue string `json:"continue,omitempty"`
}

// ResourcesListReply holds a page of objects.
type ResourcesListReply struct {
	Items    []map[string]any `json:"items"`
	Continue string           `json:"continue,omitempty"`
}

// ResourcesGetRequest returns one object of a kind of the closed set.
type ResourcesGetRequest struct {
	ResourceRef
	Name string `json:"name"`
}

// ResourcesGetReply is the object (managedFields removed).
type ResourcesGetReply struct {
	Object map[string]any `json:"object"`
}

// ResourcesApplyRequest server-side applies one object of a named kind of the closed set
// (the universe Kinds, KMSSecret, a few core kinds): never arbitrary YAML resolved through
// discovery. The object's apiVersion, kind and namespace must be the request's. A
// credential is written as a KMSSecret, which the KMS operator resolves into a Secret:
// nothing is returned. DryRun asks the apiserver to validate without persisting.
type ResourcesApplyRequest struct {
	ResourceRef
	Object map[string]any `json:"object"`
	DryRun bool           `json:"dryRun,omitempty"`
}

// ResourcesApplyReply is the object as applied.
type ResourcesApplyReply struct {
	Object map[string]any `json:"object"`
}

// ResourcesDeleteRequest deletes one object of a kind of the closed set (which holds no
// claim: nothing deletes a claim).
type ResourcesDeleteRequest struct {
	ResourceRef
	Name string `json:"name"`
}

// ResourcesDeleteReply says it was deleted.
type ResourcesDeleteReply struct {
	Deleted bool `json:"deleted"`
}

// ResourcesWatchRequest is a bounded read, not a stream: the changes to objects of one kind
// of the closed set within WaitSeconds (default 10, at most 30) after Cursor. Without a
// Cursor it returns none and the cursor to start from. A cursor too old to resume from
// answers expired: true and a fresh cursor (list again, then watch from it), never an
// empty page.
type ResourcesWatchRequest struct {
	ResourceRef
	Cursor      string `json:"cursor,omitempty"`
	WaitSeconds int    `json:"waitSeconds,omitempty"`
}

// WatchEvent is one change: ADDED, MODIFIED or DELETED.
type WatchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// ResourcesWatchReply holds the changes and the cursor to resume from.
type ResourcesWatchReply struct {
	Events  []WatchEvent `json:"events"`
	Cursor  string       `json:"cursor"`
	Expired bool         `json:"expired"`
}

// AccessReviewRequest asks whether the registration's own credential may do Verb on
// Resource (of APIGroup) in Namespace ("" for cluster-wide) on the cluster: what the plane
// could do there, as the cluster's RBAC decides it. A review is a cluster-scoped request:
// whole-cluster registrations only.
type AccessReviewRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Verb      string `json:"verb"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Resource  string `json:"resource"`
}

// AccessReviewReply is the cluster's answer.
type AccessReviewReply struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
}

// PodUsage is one pod's usage as metrics-server reported it.
type PodUsage struct {
	Name   string `json:"name"`
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}

// MetricsPodsRequest reads the pods' CPU and memory usage of a namespace from the metrics
// API. Available is false when the cluster serves no metrics API: no metrics-server is
// not zero load, so no usage is reported then.
type MetricsPodsRequest struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// MetricsPodsReply holds the usage, when available.
type MetricsPodsReply struct {
	Available bool       `json:"available"`
	Reason    string     `json:"reason,omitempty"`
	Pods      []PodUsage `json:"pods,omitempty"`
}
