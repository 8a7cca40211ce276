// Package install generates and applies what `operator install` installs: the CRD bundle of
// a universe, the operator's least-privilege RBAC (derived from the Registry) and its
// Deployment.
package install

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// The operator's own objects.
const (
	// OperatorName names the ServiceAccount and the Deployment; the ClusterRole and its
	// binding are OperatorName.<api group>, so universes can share a cluster.
	OperatorName = "universe-operator"
	// LeaderElectionRole names the Role and RoleBinding granting the Lease in the
	// operator's namespace.
	LeaderElectionRole = OperatorName + "-leader-election"
	// WebhookRelay names the ConfigMap through which a standby replica hands a push
	// webhook to the leader (see gitops.Relay).
	WebhookRelay = OperatorName + "-webhook-relay"
	// GitOpsInventory names the ConfigMap of what the git sweep applied (orphans, and the
	// no-op of a restart); GitOpsSuspend the one of the paths `operator suspend` holds.
	GitOpsInventory = OperatorName + "-gitops-inventory"
	GitOpsSuspend   = OperatorName + "-gitops-suspend"
	// GitOpsStatus names the GitSync object (kinds/gitsync) whose conditions summarize the
	// health of what the git sweep applied: kubectl wait --for=condition=Ready gitsync/<it>.
	GitOpsStatus = OperatorName + "-gitops"
	// ProbePort serves /healthz and /readyz, WebhookPort POST /reconcile and GET /gitops,
	// MetricsPort /metrics.
	ProbePort   = 8081
	WebhookPort = 8082
	MetricsPort = 8080
)

// InstallOptions is what `operator install` installs.
type InstallOptions struct {
	// APIGroup is the universe group whose CRD bundle is installed.
	APIGroup string
	// Namespace the operator runs in; it holds the leader-election Lease.
	Namespace string
	// Image of the operator container.
	Image string
	// CRDsOnly installs the CRD bundle and nothing else.
	CRDsOnly bool
	// Replicas of the Deployment; 0 means 1. With more than one, `operator run` elects a
	// leader and a PodDisruptionBudget keeps one replica up; with one, leader election is
	// off and the Deployment is replaced, never surged, so two writers never overlap.
	Replicas int32
	// Controllers are the loops `operator run` runs (its --controllers); empty leaves its
	// default.
	Controllers []string
	// RunArgs are further `operator run` flags, each as --name=value: the git source, the
	// gitops scope and resync, the log level. The command line checks them.
	RunArgs []string
	// TokenSecret holds the git host token: mounted read-only at TokenFile and passed as
	// --gitops-token-file. An empty Name mounts nothing.
	TokenSecret SecretKey
	// WebhookSecret holds the push webhook's HMAC secret: mounted read-only at
	// WebhookSecretFile and passed as --gitops-webhook-secret-file.
	WebhookSecret SecretKey
	// Shards, when above 0, adds that many Deployments <operator>-shard<i> that run only the
	// Kind controllers for the CRs labelled apply.ShardLabel=shard<i>, each with its own
	// Lease; the main Deployment then skips those CRs (!apply.ShardLabel).
	Shards int32
	// DriveTokenSecret holds the platform's Bearer token of the apps drive loop: mounted at
	// DriveTokenFile and passed as --drive-token-file.
	DriveTokenSecret SecretKey
	// CommitStatusTokenSecret holds the git host token the commit statuses are posted with
	// (--commit-status): mounted at CommitStatusTokenFile, passed as --commit-status-token-file.
	CommitStatusTokenSecret SecretKey
	// AgentCloudTokenSecret holds the cloud API token of the agents loop (AgentCloudTokenFile,
	// --agent-cloud-token-file); AgentVisorSecret the IAM client id and secret visor
	// authenticates, under the keys client-id and client-secret (AgentVisorIDFile,
	// AgentVisorSecretFile).
	AgentCloudTokenSecret SecretKey
	AgentVisorSecret      string
	// GitSSHSecret holds the ssh private key (key identity) and known_hosts (key known_hosts)
	// of an ssh git URL: mounted at GitSSHKeyFile and GitKnownHostsFile.
	GitSSHSecret string
	// PlaneClientSecret holds the deploy plane's OAuth client secret (PlaneClientSecretFile,
	// --deploy-plane-oidc-client-secret-file).
	PlaneClientSecret SecretKey
	// PlanePort, when above 0, is the port of the deploy plane inside the main Deployment
	// (its --deploy-plane-bind-address is among RunArgs): a container port and a Service port
	// named deploy-plane.
	PlanePort int32
	// MetricsSecure says /metrics is served over HTTPS to authorized callers (run's
	// --metrics-secure, among RunArgs): the Service's metrics port says appProtocol https.
	MetricsSecure bool
	// GitOpsCRDs is run's --gitops-allow-crds (among RunArgs): the git path may create and
	// patch CustomResourceDefinitions, and the RBAC grants that.
	GitOpsCRDs bool
	// OwnedNamespaces are the namespaces the operator's loops work in (the git sweep's
	// --gitops-namespaces and --watch-namespaces): a Role and RoleBinding in each, created
	// if missing. Empty, or "*" among them, owns every namespace: the grants are then one
	// ClusterRole bound cluster-wide (see RBAC).
	OwnedNamespaces []string
	// GitServiceAccount is `operator run --gitops-service-account`: the operator may
	// impersonate that ServiceAccount, and no other, in each owned namespace, and the git
	// path's own grants are dropped (see Needs).
	GitServiceAccount string
	// TenantPullSource is the tenants loop's --tenant-pull-secret-source as
	// namespace/name; empty means <Namespace>/<the default pull Secret>. In the operator's
	// namespace the operator may get that one Secret there.
	TenantPullSource string
	// AlertsSecret is operator run's --alerts-secret: the operator may get that one Secret
	// of its namespace (the alert targets).
	AlertsSecret string
	// Plane, when set, installs the deploy plane as its own Deployment and Service
	// (PlaneDeployment, PlaneService).
	Plane *PlaneOptions
	// LuxNetworkKinds also applies the luxfi operator's lux.network CRDs
	// (LuxNetworkCRDObjects), so those CRs are served.
	LuxNetworkKinds bool
	// FleetKinds and FleetSweeps are run's --fleet (among RunArgs) as what it runs: the Kind
	// controllers on the registered clusters (the kinds loop, --fleet-kind-controllers) and
	// their git sweeps (the gitops loop with a git source). The RBAC grants reading the Cluster
	// objects, writing their status and getting the credential Secrets of Namespace; with
	// the sweeps, listing and watching those Secrets (their cache).
	FleetKinds, FleetSweeps bool
	// K8sPlanePort, when above 0, is the port of the /v1/k8s cluster plane (its
	// --k8s-plane-bind-address and OIDC flags are among RunArgs): a container port and a
	// Service port named k8s-plane, and the RBAC of its registry (the Cluster objects and
	// their credential Secrets in Namespace) and of its audit Events (in default).
	K8sPlanePort int32
	// SOPSAgeSecret is run's --gitops-sops-age-secret as a name in Namespace (among RunArgs):
	// the git sweep may get that one Secret there.
	SOPSAgeSecret string
}

// SecretKey names one key of a Secret in the operator's namespace.
type SecretKey struct {
	Name, Key string
}

// Where the Deployment mounts the Secrets of InstallOptions, read-only.
//
//nolint:gosec // G101: mount paths, no credential
const (
	TokenFile             = "/var/run/secrets/openuniverse.dev/gitops-token/token"
	WebhookSecretFile     = "/var/run/secrets/openuniverse.dev/gitops-webhook/secret"
	DriveTokenFile        = "/var/run/secrets/openuniverse.dev/drive-token/token"
	CommitStatusTokenFile = "/var/run/secrets/openuniverse.dev/commit-status-token/token"
	AgentCloudTokenFile   = "/var/run/secrets/openuniverse.dev/agent-cloud-token/token"
	AgentVisorIDFile      = "/var/run/secrets/openuniverse.dev/agent-visor-id/client-id"
	AgentVisorSecretFile  = "/var/run/secrets/openuniverse.dev/agent-visor-secret/client-secret"
	GitSSHKeyFile         = "/var/run/secrets/openuniverse.dev/git-ssh/identity"
	GitKnownHostsFile     = "/var/run/secrets/openuniverse.dev/git-ssh/known_hosts"
	PlaneClientSecretFile = "/var/run/secrets/openuniverse.dev/deploy-plane-oidc/client-secret"
)

// Installer server-side applies the CRD bundle and the operator's Deployment with its
// least-privilege RBAC, under reconcile.ManagerInstall. It is idempotent: a second run is all InSync.
type Installer struct {
	Client   client.WithWatch
	Registry kinds.Registry
	// EstablishTimeout bounds the wait for the applied CRDs to be served; 0 means 2m.
	EstablishTimeout time.Duration
}

// Install applies, in dependency order: the CRDs (and waits until the apiserver serves
// them), then (unless CRDsOnly) the Namespace, the RBAC objects and the ServiceAccount,
// then the Deployment. It returns one Result per
// object; an error means the objects could not be generated, and nothing was applied
// after it.
func (i Installer) Install(ctx context.Context, o InstallOptions) ([]apply.Result, error) {
	crds, err := bundleCRDs(o)
	if err != nil {
		return nil, err
	}
	a := &apply.Applier{Client: i.Client, Manager: kinds.ManagerInstall}
	results, pending, err := i.applyCRDs(ctx, a, crds)
	if err != nil {
		return nil, err
	}
	if err := i.waitEstablished(ctx, pending); err != nil {
		return results, err
	}
	if o.CRDsOnly {
		return results, nil
	}
	stages, err := OperatorObjects(o, i.Registry, i.Client.RESTMapper())
	if err != nil {
		return results, err
	}
	for _, stage := range stages {
		results = append(results, a.Apply(ctx, stage)...)
	}
	return results, nil
}

// BundleDigestAnnotation is set on every CRD install applies: the digest of the CRD as the
// bundle declares it. A CRD that carries the digest of the bundle, has no field manager but
// install on its spec and metadata, and is Established is in sync without a request.
const BundleDigestAnnotation = "openuniverse.dev/bundle-digest"

// crdConcurrency is how many CRDs install applies at once.
const crdConcurrency = 8

// applyCRDs applies the bundle at most one request per CRD, after one list of the CRDs'
// metadata: a CRD already at the bundle's digest, written by install alone and served (see
// served) costs nothing; any other is applied with one request (the list gave its
// resourceVersion, which an apply that changes nothing leaves as it is), and the apply
// returns it with its status, so only CRDs not yet Established are named for the wait.
// Without the list (RBAC), it falls back to the get-and-dry-run path.
//
// The list is metadata-only and the bundle is converted for applying one CRD at a time,
// the converted copy kept only when it is applied: a CRD decoded whole into unstructured
// weighs some 20 times its JSON, and the bundle's 48 CRDs held that way (generated and
// listed) were most of `operator up`'s peak memory. It consumes crds (each entry is
// cleared once converted). An error means a CRD could not be converted, and nothing was
// applied.
func (i Installer) applyCRDs(ctx context.Context, a *apply.Applier, crds []apiextensionsv1.CustomResourceDefinition) ([]apply.Result, []string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsGVK.GroupVersion().WithKind("CustomResourceDefinitionList"))
	if err := i.Client.List(ctx, list); err != nil {
		objs, err := crdObjects(crds)
		if err != nil {
			return nil, nil, err
		}
		results := a.Apply(ctx, objs)
		var pending []string
		for n, r := range results {
			if r.Action != apply.Failed && r.Action != apply.Denied {
				pending = append(pending, objs[n].GetName())
			}
		}
		return results, pending, nil
	}
	live := make(map[string]*metav1.PartialObjectMetadata, len(list.Items))
	for n := range list.Items {
		live[list.Items[n].GetName()] = &list.Items[n]
	}
	results := make([]apply.Result, len(crds))
	served := make([]bool, len(crds))
	type change struct {
		n      int
		crd    *unstructured.Unstructured
		before metav1.Object // an untyped nil when the CRD is new
	}
	var changes []change
	for n := range crds {
		crd, err := crdObject(&crds[n])
		crds[n] = apiextensionsv1.CustomResourceDefinition{} // converted: the typed copy is not needed again
		if err != nil {
			return nil, nil, err
		}
		m := live[crd.GetName()]
		if m != nil && inBundle(m, crd) && i.served(crd) {
			results[n], served[n] = apply.Result{Object: apply.RefOf(crd), Action: apply.InSync}, true
			continue
		}
		ch := change{n: n, crd: crd}
		if m != nil {
			ch.before = m
		}
		changes = append(changes, ch)
	}
	apply.FanOut(len(changes), crdConcurrency, func(k int) {
		ch := changes[k]
		var after *unstructured.Unstructured
		results[ch.n], after = a.ApplyKnown(ctx, ch.crd, ch.before)
		served[ch.n] = after != nil && apply.Established(after)
	})
	var pending []string
	for _, ch := range changes {
		if r := results[ch.n]; r.Action != apply.Failed && r.Action != apply.Denied && !served[ch.n] {
			pending = append(pending, ch.crd.GetName())
		}
	}
	return results, pending, nil
}

// inBundle reports whether the live CRD's metadata is the bundle's want as install left
// it: the same digest, not being deleted, and no other manager of its spec or metadata.
func inBundle(live metav1.Object, want *unstructured.Unstructured) bool {
	if live.GetAnnotations()[BundleDigestAnnotation] != want.GetAnnotations()[BundleDigestAnnotation] || live.GetDeletionTimestamp() != nil {
		return false
	}
	for _, e := range live.GetManagedFields() {
		if e.Subresource == "" && e.Manager != kinds.ManagerInstall {
			return false
		}
	}
	return true
}

// served reports whether the apiserver serves want's Kind, by the client's RESTMapper
// (discovery): the apiserver lists a CRD's Kind in discovery only once the CRD is
// Established, which the metadata-only list cannot show. A CRD Established a moment ago
// that discovery does not list yet is applied once more, which changes nothing.
func (i Installer) served(want *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(want.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(want.Object, "spec", "names", "kind")
	_, err := i.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	return err == nil
}

// waitEstablished polls the named CRDs until each is Established.
func (i Installer) waitEstablished(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	timeout := i.EstablishTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return apply.WaitEstablished(ctx, i.Client, names, 250*time.Millisecond)
}

// CRDObjects returns the CRD bundle of group as objects to apply.
func CRDObjects(group string) ([]*unstructured.Unstructured, error) {
	crds, err := kinds.CRDs(group)
	if err != nil {
		return nil, fmt.Errorf("crd bundle of %s: %w", group, err)
	}
	return crdObjects(crds)
}

// OperatorObjects returns the operator's objects in apply stages: the Namespace (and the
// owned ones); the RBAC (see RBAC) and ServiceAccount; the Deployment. mapper resolves the children's Kinds to resources.
func OperatorObjects(o InstallOptions, reg kinds.Registry, mapper meta.RESTMapper) ([][]*unstructured.Unstructured, error) {
	if err := kinds.ValidateGroup(o.APIGroup); err != nil {
		return nil, err
	}
	if o.Namespace == "" || o.Image == "" {
		return nil, fmt.Errorf("install: namespace and image are required")
	}
	if o.Replicas < 0 {
		return nil, fmt.Errorf("install: replicas %d: want at least 1", o.Replicas)
	}
	for flag, sk := range map[string]SecretKey{"token": o.TokenSecret, "webhook": o.WebhookSecret, "drive token": o.DriveTokenSecret, "agent cloud token": o.AgentCloudTokenSecret,
		"deploy plane client secret": o.PlaneClientSecret, "commit status token": o.CommitStatusTokenSecret} {
		if sk.Name != "" && sk.Key == "" {
			return nil, fmt.Errorf("install: the %s Secret %s needs a key", flag, sk.Name)
		}
	}
	rbac, err := RBAC(o, reg, mapper)
	if err != nil {
		return nil, err
	}
	labels := operatorLabels()
	namespaces := []client.Object{&corev1.Namespace{TypeMeta: typeMeta(corev1.SchemeGroupVersion.String(), "Namespace"),
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace, Labels: labels}}}
	if !o.OwnsAll() {
		// the owned namespaces hold the operator's Roles: they exist before them
		for _, ns := range dedupe(o.OwnedNamespaces) {
			if ns != o.Namespace {
				namespaces = append(namespaces, &corev1.Namespace{TypeMeta: typeMeta(corev1.SchemeGroupVersion.String(), "Namespace"),
					ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
		}
	}
	typed := [][]client.Object{
		namespaces,
		append(rbac, &corev1.ServiceAccount{TypeMeta: typeMeta(corev1.SchemeGroupVersion.String(), "ServiceAccount"),
			ObjectMeta: metav1.ObjectMeta{Name: OperatorName, Namespace: o.Namespace, Labels: labels}}),
		{Service(o), Deployment(o)},
	}
	if pdb := PodDisruptionBudget(o); pdb != nil {
		typed[len(typed)-1] = append(typed[len(typed)-1], pdb)
	}
	for i := range o.Shards {
		typed[len(typed)-1] = append(typed[len(typed)-1], ShardDeployment(o, int(i)+1))
	}
	typed[len(typed)-1] = append(typed[len(typed)-1], planeObjects(o)...)
	out := make([][]*unstructured.Unstructured, 0, len(typed))
	for _, stage := range typed {
		var objs []*unstructured.Unstructured
		for _, obj := range stage {
			u, err := toUnstructured(obj)
			if err != nil {
				return nil, err
			}
			objs = append(objs, u)
		}
		out = append(out, objs)
	}
	return out, nil
}

// Deployment returns the operator's Deployment: o.Replicas replicas (leader election on
// when more than one) running `operator run` for o.APIGroup with o.Controllers and
// o.RunArgs, its namespace from the downward API, the token and webhook Secrets mounted
// read-only at TokenFile and WebhookSecretFile. The pod passes the "restricted" Pod
// Security Standard: a non-root user (65532) with no capabilities, no privilege
// escalation, the runtime's seccomp profile and a read-only root whose only writable path
// is an emptyDir /tmp (the git clone cache). Liveness is /healthz, readiness /readyz
// (caches synced and, with a git source, the first sweep reported), both on ProbePort.
//
//nolint:funlen // the Deployment is one literal, read field by field against the goldens
func Deployment(o InstallOptions) *appsv1.Deployment {
	replicas := max(o.Replicas, 1)
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(portProbes)}},
			PeriodSeconds:    period,
			TimeoutSeconds:   5,
			FailureThreshold: 3,
		}
	}
	args := []string{"run",
		fmt.Sprintf("--leader-elect=%t", replicas > 1),
		fmt.Sprintf("--health-probe-bind-address=:%d", ProbePort),
		fmt.Sprintf("--webhook-bind-address=:%d", WebhookPort),
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
	}
	if len(o.Controllers) > 0 {
		args = append(args, "--controllers="+strings.Join(o.Controllers, ","))
	}
	if o.Shards > 0 {
		args = append(args, "--watch-label-selector=!"+apply.ShardLabel) // the shards reconcile those
	}
	args = append(args, o.RunArgs...)
	mounts := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	volumes := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	// mountKeys mounts keys of one Secret as files of one directory, each passed as its flag.
	mountKeys := func(volume, secret string, files map[string][2]string) { // key -> {file, flag}
		if secret == "" {
			return
		}
		var items []corev1.KeyToPath
		var dir string
		for _, key := range slices.Sorted(maps.Keys(files)) {
			file, flag := files[key][0], files[key][1]
			args = append(args, "--"+flag+"="+file)
			// a fixed file name whatever the key; no subPath, so a rotated Secret reaches the pod
			items, dir = append(items, corev1.KeyToPath{Key: key, Path: path.Base(file)}), path.Dir(file)
		}
		mounts = append(mounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, Items: items,
			DefaultMode: ptr.To[int32](0o440), // read by the pod's group (fsGroup) only
		}}})
	}
	mount := func(volume string, sk SecretKey, file, flag string) {
		mountKeys(volume, sk.Name, map[string][2]string{sk.Key: {file, flag}})
	}
	mount("gitops-token", o.TokenSecret, TokenFile, "gitops-token-file")
	mount("gitops-webhook", o.WebhookSecret, WebhookSecretFile, "gitops-webhook-secret-file")
	mount("drive-token", o.DriveTokenSecret, DriveTokenFile, "drive-token-file")
	mount("commit-status-token", o.CommitStatusTokenSecret, CommitStatusTokenFile, "commit-status-token-file")
	mount("agent-cloud-token", o.AgentCloudTokenSecret, AgentCloudTokenFile, "agent-cloud-token-file")
	if o.AgentVisorSecret != "" {
		mount("agent-visor-id", SecretKey{Name: o.AgentVisorSecret, Key: "client-id"}, AgentVisorIDFile, "agent-visor-client-id-file")
		mount("agent-visor-secret", SecretKey{Name: o.AgentVisorSecret, Key: "client-secret"}, AgentVisorSecretFile, "agent-visor-client-secret-file")
	}
	mountKeys("git-ssh", o.GitSSHSecret, map[string][2]string{
		"identity": {GitSSHKeyFile, "git-ssh-key-file"}, "known_hosts": {GitKnownHostsFile, "git-known-hosts-file"}})
	mount("deploy-plane-oidc", o.PlaneClientSecret, PlaneClientSecretFile, "deploy-plane-oidc-client-secret-file")
	ports := []corev1.ContainerPort{
		{Name: portMetrics, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		{Name: portProbes, ContainerPort: ProbePort, Protocol: corev1.ProtocolTCP},
		{Name: portWebhook, ContainerPort: WebhookPort, Protocol: corev1.ProtocolTCP},
	}
	if o.PlanePort > 0 {
		ports = append(ports, corev1.ContainerPort{Name: portPlane, ContainerPort: o.PlanePort, Protocol: corev1.ProtocolTCP})
	}
	if o.K8sPlanePort > 0 {
		ports = append(ports, corev1.ContainerPort{Name: portK8sPlane, ContainerPort: o.K8sPlanePort, Protocol: corev1.ProtocolTCP})
	}
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if replicas > 1 {
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
		}}
	}
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion.String(), "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: OperatorName, Namespace: o.Namespace, Labels: operatorLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: podSelector()},
			Strategy: strategy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podSelector()},
				Spec: corev1.PodSpec{
					ServiceAccountName: OperatorName,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](NonRootUID),
						RunAsGroup:     ptr.To[int64](NonRootUID),
						FSGroup:        ptr.To[int64](NonRootUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "operator",
						Image: o.Image,
						Args:  args,
						Env: []corev1.EnvVar{
							{Name: "OPERATOR_API_GROUP", Value: o.APIGroup},
							{Name: "OPERATOR_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
							}},
						},
						Ports:          ports,
						LivenessProbe:  probe("/healthz", 10),
						ReadinessProbe: probe("/readyz", 5),
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("50m"),
								corev1.ResourceMemory: resource.MustParse("64Mi"),
							},
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

// ShardDeployment returns the Deployment of shard i (from 1): <operator>-shard<i>, the Kind
// controllers only, for the CRs labelled apply.ShardLabel=shard<i>, electing its leader
// through a Lease of its own (named by `operator run` after the selector). Its pods carry
// instance <operator>-shard<i>, so neither the main Deployment nor its Service selects them.
func ShardDeployment(o InstallOptions, i int) *appsv1.Deployment {
	so := o
	so.Shards, so.Controllers = 0, []string{"kinds"}
	// no git, drive, agents or plane in a shard
	so.TokenSecret, so.WebhookSecret, so.DriveTokenSecret, so.AgentCloudTokenSecret = SecretKey{}, SecretKey{}, SecretKey{}, SecretKey{}
	so.AgentVisorSecret, so.GitSSHSecret, so.PlaneClientSecret, so.PlanePort = "", "", SecretKey{}, 0
	so.FleetKinds, so.FleetSweeps, so.K8sPlanePort, so.SOPSAgeSecret = false, false, 0, "" // shards run no fleet, cluster plane or git sweep
	so.CommitStatusTokenSecret = SecretKey{}
	so.RunArgs = nil
	for _, a := range o.RunArgs {
		if shardArg(a) {
			so.RunArgs = append(so.RunArgs, a)
		}
	}
	d := Deployment(so)
	name := fmt.Sprintf("%s-shard%d", OperatorName, i)
	sel := map[string]string{kinds.LabelName: OperatorName, kinds.LabelInstance: name}
	d.Name = name
	d.Labels[kinds.LabelInstance] = name
	d.Spec.Selector.MatchLabels = sel
	d.Spec.Template.Labels = maps.Clone(sel)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Args = append(c.Args, fmt.Sprintf("--watch-label-selector=%s=shard%d", apply.ShardLabel, i))
	return d
}

// shardArgs are the prefixes of the run arguments a shard keeps: what the Kind controllers,
// the logs, the metrics and the election read.
var shardArgs = []string{"--log-", "--metrics-secure=", "--kind-concurrency=", "--upgrade-fsm=", "--preflight-gc-",
	"--tenant-org-managers=", "--watch-namespaces=", "--lease-duration=", "--renew-deadline=", "--retry-period="}

func shardArg(a string) bool {
	for _, p := range shardArgs {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return false
}

// NonRootUID is the user and group the operator runs as: distroless's nonroot, which the
// image (hack/image, Dockerfile) sets too.
const NonRootUID = 65532

// Container port names: portWebhook serves the webhook and /gitops, portProbes the probes.
const (
	portWebhook  = "webhook"
	portProbes   = "probes"
	portMetrics  = "metrics"
	portPlane    = "deploy-plane"
	portK8sPlane = "k8s-plane"
)

// Service returns the Service in front of the operator's pods: the push webhook
// (POST /reconcile, any replica accepts it) on port 80 and the metrics on MetricsPort.
func Service(o InstallOptions) *corev1.Service {
	metrics := corev1.ServicePort{Name: portMetrics, Port: MetricsPort, TargetPort: intstr.FromString(portMetrics), Protocol: corev1.ProtocolTCP}
	if o.MetricsSecure {
		metrics.AppProtocol = ptr.To("https") // TLS, to callers the apiserver authorizes
	}
	ports := []corev1.ServicePort{
		{Name: "webhook", Port: 80, TargetPort: intstr.FromString(portWebhook), Protocol: corev1.ProtocolTCP},
		metrics,
	}
	if o.PlanePort > 0 {
		ports = append(ports, corev1.ServicePort{Name: portPlane, Port: o.PlanePort, TargetPort: intstr.FromString(portPlane), Protocol: corev1.ProtocolTCP})
	}
	if o.K8sPlanePort > 0 {
		ports = append(ports, corev1.ServicePort{Name: portK8sPlane, Port: o.K8sPlanePort, TargetPort: intstr.FromString(portK8sPlane), Protocol: corev1.ProtocolTCP})
	}
	return &corev1.Service{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Service"),
		ObjectMeta: metav1.ObjectMeta{Name: OperatorName, Namespace: o.Namespace, Labels: operatorLabels()},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: podSelector(),
			Ports:    ports,
		},
	}
}

// PodDisruptionBudget returns the budget that keeps all but one replica up through a
// voluntary disruption (a node drain); nil with one replica, where it would block drains.
func PodDisruptionBudget(o InstallOptions) *policyv1.PodDisruptionBudget {
	if o.Replicas <= 1 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   typeMeta(policyv1.SchemeGroupVersion.String(), "PodDisruptionBudget"),
		ObjectMeta: metav1.ObjectMeta{Name: OperatorName, Namespace: o.Namespace, Labels: operatorLabels()},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: podSelector()},
		},
	}
}

func podSelector() map[string]string {
	return map[string]string{kinds.LabelName: OperatorName, kinds.LabelInstance: OperatorName}
}

func operatorLabels() map[string]string {
	return map[string]string{
		kinds.LabelName:      OperatorName,
		kinds.LabelInstance:  OperatorName,
		kinds.LabelManagedBy: kinds.ManagerInstall,
	}
}

var apiextensionsGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// toUnstructured converts a typed object for applying, without the status and the null
// creationTimestamp the conversion adds.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedupe(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}
