package install

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/upgrade"
)

// Where says which namespaces a Need covers.
type Where string

// The scopes of a Need.
const (
	// InCluster: a cluster-scoped resource (granted by the ClusterRole, hence in every
	// namespace too: keep to reads and reviews).
	InCluster Where = "cluster"
	// InOwned: each owned namespace (a Role and RoleBinding there); every namespace when
	// all are owned (the ClusterRole).
	InOwned Where = "owned"
	// InHome: the operator's own namespace (the leader-election Role).
	InHome Where = "home"
	// InDefault: the namespace default, where Events about cluster-scoped objects go (the
	// cluster plane's audit Events about the Cluster registrations): a Role of its own there.
	InDefault Where = "default"
)

// DefaultNamespace holds the Events about cluster-scoped objects (InDefault).
const DefaultNamespace = "default"

// DefaultRoleName names the Role and RoleBinding of the InDefault rows in DefaultNamespace,
// apart from the owned namespaces' Role (default may be one of them).
func DefaultRoleName(group string) string { return OperatorName + "-events." + group }

// Loops of `operator run --controllers` that the needs table names, and the shared needs
// of every operator.
const (
	LoopKinds       = "kinds"
	LoopGitOps      = "gitops"
	LoopImageUpdate = "imageupdate"
	LoopTenants     = "tenants"
	LoopDrive       = "drive"
	LoopAgents      = "agents"
	// LoopRun is what `operator run` needs whatever loops it runs: the Lease, the webhook
	// relay, Events, the secure metrics' reviews.
	LoopRun = "run"
)

// runDefaultLoops are `operator run`'s loops when --controllers is not given.
var runDefaultLoops = []string{LoopKinds, LoopGitOps, LoopImageUpdate}

// Need is one row of the operator's needs table: Verbs on Resources of Group, Where, for
// the Loops that make those calls (the row is granted when any of them runs). Names, when
// set, are the only objects it covers (RBAC's resourceNames).
type Need struct {
	Loops     []string
	Where     Where
	Group     string
	Resources []string
	Names     []string
	Verbs     []string
	Why       string
}

// Covers reports whether the need grants verb on group/resource (a "res/sub"
// subresource), object name (empty: any object or a collection), in namespace ns (empty:
// cluster scope or all namespaces) under the install's namespaces: owned (nil: all) and
// home.
func (n Need) Covers(verb, group, resource, name, ns string, owned []string, home string) bool {
	if n.Group != group || !slices.Contains(n.Resources, resource) || !slices.Contains(n.Verbs, verb) {
		return false
	}
	if len(n.Names) > 0 && !slices.Contains(n.Names, name) {
		return false
	}
	switch n.Where {
	case InCluster:
		return true
	case InOwned:
		return ownsAll(owned) || slices.Contains(owned, ns)
	case InHome:
		return ns == home
	case InDefault:
		return ns == DefaultNamespace
	}
	return false
}

func ownsAll(owned []string) bool { return len(owned) == 0 || slices.Contains(owned, "*") }

// OwnsAll reports whether the install grants the operator every namespace: no owned
// namespace given, or "*" among them.
func (o InstallOptions) OwnsAll() bool { return ownsAll(o.OwnedNamespaces) }

// ClusterRoleName is the operator's ClusterRole (and ClusterRoleBinding) of universe
// group; RoleName its Role and RoleBinding in each owned namespace. Both carry the group,
// so universes can share a cluster.
func ClusterRoleName(group string) string { return OperatorName + "." + group }

// RoleName: see ClusterRoleName.
func RoleName(group string) string { return OperatorName + "." + group }

// Verbs of the needs table. The git path never deletes and a controller never deletes its
// own CR; children are deleted when their CR stops wanting them.
var (
	verbsRead     = []string{"get", "list", "watch"}
	verbsApply    = []string{"get", "create", "patch"} // server-side apply; get for the dry-run path
	verbsStatus   = []string{"get", "patch", "update"}
	verbsChildren = []string{"get", "list", "watch", "create", "patch", "delete"}
	verbsEvents   = []string{"create", "patch"}
	// verbsPreflight: the pre-flight resources are created once and deleted, never patched.
	verbsPreflight = []string{"get", "list", "watch", "create", "delete"}
)

// Needs returns the operator's needs table for o: every call its loops (o.Controllers,
// or `operator run`'s default) make, by verb × group/resource × where, derived from the
// code:
//   - every Kind of the CRD bundle (the universe, kms and chain families, and the luxfi
//     lux.network Kinds): read (every loop that handles CRs), create and patch (the git
//     path and the drive loop apply them), /status (the controllers); delete only for a
//     Kind that is also a child the controllers prune (KMSSecret);
//   - every child Kind a Registry entry owns, resolved through mapper: read, create, patch
//     and delete (the Kind controllers prune by owner uid); the git path applies them too;
//   - Pods and PersistentVolumeClaims, VolumeSnapshots: read, create and delete (the
//     upgrade machine's pre-flight pods and clones, their GC); ReplicaSets: read;
//   - Secrets: get for ImageUpdate's registry, git and signing Secrets and the tenants'
//     source; create and patch for the tenants' pull Secrets and Secrets declared in git
//     (never list or watch: the operator does not cache Secrets);
//   - RoleBindings: the tenants' binding, and bind on exactly the tenant ClusterRole;
//   - Namespaces: read (the tenancy rule, tenant onboarding); create and patch only the
//     owned ones (the git path applies them); CRDs: read (the established checks);
//   - Events; TokenReviews and SubjectAccessReviews (`operator run --metrics-secure`);
//     the Lease and the webhook relay ConfigMap in the operator's namespace;
//   - with o.GitServiceAccount the git path applies every namespaced object as that
//     ServiceAccount of the object's namespace: the operator needs impersonate on it, and
//     none of the git path's own grants but the Namespaces.
//
// Rows are in a fixed order; resources within a row sorted.
//
//nolint:funlen // the rows in the order the doc above lists them, one block per row
func Needs(o InstallOptions, reg kinds.Registry, mapper meta.RESTMapper) ([]Need, error) {
	crds, err := kinds.CRDs(o.APIGroup)
	if err != nil {
		return nil, fmt.Errorf("crd bundle of %s: %w", o.APIGroup, err)
	}
	// The luxfi lux.network Kinds are in the Registry whether or not their CRDs
	// (`operator crds --lux-network-kinds`) are installed: the role covers them, so
	// installing those CRDs later needs no new RBAC.
	lux, err := kinds.LuxNetworkCRDs()
	if err != nil {
		return nil, fmt.Errorf("lux.network CRDs: %w", err)
	}
	crds = append(crds, lux...)
	crPlurals := map[string][]string{}        // group -> plurals
	crByKind := map[schema.GroupKind]string{} // -> plural
	for _, crd := range crds {
		crPlurals[crd.Spec.Group] = append(crPlurals[crd.Spec.Group], crd.Spec.Names.Plural)
		crByKind[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.Spec.Names.Plural
	}
	children, prunedCRs, err := childResources(o.APIGroup, reg, mapper, crByKind)
	if err != nil {
		return nil, err
	}
	git := []string{LoopGitOps} // the git path's own grants: none when it impersonates
	if o.GitServiceAccount != "" {
		git = nil
	}
	var needs []Need
	need := func(loops []string, where Where, group string, resources, verbs []string, why string, names ...string) {
		needs = append(needs, Need{Loops: loops, Where: where, Group: group, Resources: dedupe(resources), Verbs: verbs, Names: names, Why: why})
	}
	crLoops := []string{LoopKinds, LoopGitOps, LoopImageUpdate, LoopDrive, LoopAgents}
	for _, g := range sortedKeys(crPlurals) {
		plurals := dedupe(crPlurals[g])
		status := make([]string, len(plurals))
		for i, p := range plurals {
			status[i] = p + "/status"
		}
		need(crLoops, InOwned, g, plurals, verbsRead, "the CRs: caches of every loop that handles them")
		need(append([]string{LoopDrive}, git...), InOwned, g, plurals, verbsApply, "the CRs: applied from git and by the drive loop")
		need([]string{LoopKinds, LoopImageUpdate, LoopAgents}, InOwned, g, status, verbsStatus, "the CRs' status: one writer per loop")
		if pruned := prunedCRs[g]; len(pruned) > 0 {
			need([]string{LoopKinds}, InOwned, g, pruned, []string{"delete"}, "a CR that is also a child: pruned by owner uid")
		}
	}
	for _, g := range sortedKeys(children) {
		if len(children[g]) > 0 {
			need([]string{LoopKinds}, InOwned, g, children[g], verbsChildren, "the Kind controllers' children: applied, watched, pruned by owner uid")
			need(git, InOwned, g, children[g], append(slices.Clone(verbsRead), "create", "patch"), "the same kinds declared in git (never deleted)")
		}
	}
	need([]string{LoopKinds}, InOwned, "", []string{"persistentvolumeclaims", "pods"}, verbsPreflight, "pods explain a stuck workload; pre-flight pods and clone claims, and their GC")
	need([]string{LoopKinds}, InOwned, upgrade.SnapshotGroup, []string{"volumesnapshots"}, verbsPreflight, "pre-flight clones, and their GC")
	need([]string{LoopKinds}, InOwned, "apps", []string{"replicasets"}, verbsRead, "the resource tree between a Deployment and its Pods")
	need([]string{LoopImageUpdate, LoopTenants}, InOwned, "", []string{"secrets"}, []string{"get"}, "an ImageUpdate's registry, git and signing Secrets; the tenants' pull Secret (uncached: never list or watch)")
	need(append([]string{LoopTenants}, git...), InOwned, "", []string{"secrets"}, []string{"create", "patch"}, "the tenants' pull Secrets; Secrets declared in git")
	need(git, InOwned, "", []string{"secrets"}, []string{"get"}, "the dry-run path of a Secret declared in git")
	need([]string{LoopTenants}, InOwned, rbacv1.GroupName, []string{"rolebindings"}, []string{"get", "list", "watch", "create", "patch"}, "the tenant RoleBinding")
	// the apiserver refuses a RoleBinding to a ClusterRole whose permissions the creator
	// neither holds nor may bind (checked in the binding's namespace)
	need([]string{LoopTenants}, InOwned, rbacv1.GroupName, []string{"clusterroles"}, []string{"bind"}, "the tenant RoleBinding's ClusterRole, and no other", drive.DefaultTenantOptions().ClusterRole)
	if o.GitServiceAccount != "" {
		need([]string{LoopGitOps}, InOwned, "", []string{"serviceaccounts"}, []string{"impersonate"}, "--gitops-service-account: the git path applies as this ServiceAccount of each namespace", o.GitServiceAccount)
	}
	src := o.TenantPullSource
	if src == "" {
		src = o.Namespace + "/" + drive.DefaultTenantOptions().PullSecret
	}
	if ns, name, ok := strings.Cut(src, "/"); ok && ns == o.Namespace {
		need([]string{LoopTenants}, InHome, "", []string{"secrets"}, []string{"get"}, "the tenants' pull Secret source, and no other Secret of the operator's namespace", name)
	}
	everyLoop := []string{LoopRun}
	needs = append(needs, capabilityNeeds(o)...)
	if o.AlertsSecret != "" {
		need(everyLoop, InHome, "", []string{"secrets"}, []string{"get"}, "--alerts-secret: the alert targets, read once at start, and no other Secret", o.AlertsSecret)
	}
	need(everyLoop, InOwned, "", []string{"events"}, verbsEvents, "Events on the objects of each loop")
	need(everyLoop, InOwned, "events.k8s.io", []string{"events"}, verbsEvents, "Events on the objects of each loop")
	need(everyLoop, InOwned, "", []string{"events"}, []string{"list"}, "the deploy plane's events route: an application's Events (uncached, by involved object)")
	need(everyLoop, InOwned, "", []string{"pods/log"}, []string{"get"}, "the deploy plane's logs route: the pod logs of an application's tree (bounded)")
	need([]string{LoopKinds, LoopGitOps, LoopImageUpdate, LoopTenants, LoopDrive, LoopAgents}, InCluster, "", []string{"namespaces"}, verbsRead, "the tenancy rule reads a Namespace's org label; tenant onboarding watches them")
	if o.OwnsAll() {
		need([]string{LoopGitOps}, InCluster, "", []string{"namespaces"}, []string{"create", "patch"}, "Namespaces declared in git")
	} else {
		need([]string{LoopGitOps}, InCluster, "", []string{"namespaces"}, []string{"create", "patch"}, "the owned Namespaces declared in git, and no other", dedupe(o.OwnedNamespaces)...)
	}
	need([]string{LoopKinds, LoopGitOps}, InCluster, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, verbsRead, "the established checks")
	if o.GitOpsCRDs {
		need([]string{LoopGitOps}, InCluster, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"create", "patch"}, "--gitops-allow-crds: CRDs declared in git (never deleted)")
	}
	need(everyLoop, InCluster, "authentication.k8s.io", []string{"tokenreviews"}, []string{"create"}, "--metrics-secure: the scraper's token")
	need(everyLoop, InCluster, "authorization.k8s.io", []string{"subjectaccessreviews"}, []string{"create"}, "--metrics-secure: may the scraper get /metrics")
	need(everyLoop, InHome, "coordination.k8s.io", []string{"leases"}, []string{"get", "list", "watch", "create", "update", "patch"}, "leader election")
	need([]string{LoopGitOps}, InHome, "", []string{"configmaps"}, []string{"get", "list", "watch", "patch"}, "the webhook relay: a standby stamps it, the leader watches it", WebhookRelay)
	need([]string{LoopGitOps}, InHome, "", []string{"configmaps"}, []string{"create"}, "the webhook relay's first stamp")
	need([]string{LoopGitOps}, InHome, "", []string{"configmaps"}, []string{"get", "list", "watch", "patch"}, "the git path's inventory (orphans) and suspended paths", GitOpsInventory, GitOpsSuspend)
	need([]string{LoopGitOps}, InHome, o.APIGroup, []string{"gitsyncs", "gitsyncs/status"}, []string{"get", "patch"}, "the git path's status object (health conditions for kubectl wait)", GitOpsStatus)
	need([]string{LoopGitOps}, InHome, o.APIGroup, []string{"gitsyncs"}, []string{"create"}, "the git path's status object's first apply")
	need(everyLoop, InHome, "", []string{"events"}, verbsEvents, "leader election Events")

	running := o.Controllers
	if len(running) == 0 {
		running = runDefaultLoops
	}
	running = append(slices.Clone(running), LoopRun)
	return slices.DeleteFunc(needs, func(n Need) bool {
		return !slices.ContainsFunc(n.Loops, func(l string) bool { return slices.Contains(running, l) })
	}), nil
}

// RBAC returns the operator's RBAC objects, generated from Needs: with every namespace
// owned, one ClusterRole (the cluster and owned rows) bound cluster-wide; else a
// ClusterRole of the cluster rows alone, bound cluster-wide, and a Role and RoleBinding
// per owned namespace. The home rows are the leader-election Role of the operator's
// namespace. Bind and escalate appear only with resourceNames.
func RBAC(o InstallOptions, reg kinds.Registry, mapper meta.RESTMapper) ([]client.Object, error) {
	needs, err := Needs(o, reg, mapper)
	if err != nil {
		return nil, err
	}
	rules := func(keep func(Where) bool) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, n := range needs {
			if keep(n.Where) {
				out = append(out, rbacv1.PolicyRule{APIGroups: []string{n.Group}, Resources: slices.Clone(n.Resources),
					ResourceNames: slices.Clone(n.Names), Verbs: slices.Clone(n.Verbs)})
			}
		}
		return out
	}
	for _, n := range needs {
		if len(n.Names) == 0 && slices.ContainsFunc(n.Verbs, func(v string) bool { return v == "bind" || v == "escalate" || v == "impersonate" }) {
			return nil, fmt.Errorf("install: the need %v on %s/%v has no resourceNames: bind, escalate and impersonate are granted on named objects only", n.Verbs, n.Group, n.Resources)
		}
	}
	all := o.OwnsAll()
	labels := operatorLabels()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: OperatorName, Namespace: o.Namespace}}
	name := ClusterRoleName(o.APIGroup)
	out := []client.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules:      rules(func(w Where) bool { return w == InCluster || all && w == InOwned }),
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subject,
		},
	}
	role := func(ns, name string, where Where) {
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"),
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				Rules:      rules(func(w Where) bool { return w == where }),
			},
			&rbacv1.RoleBinding{
				TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"),
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subject,
			})
	}
	role(o.Namespace, LeaderElectionRole, InHome)
	if slices.ContainsFunc(needs, func(n Need) bool { return n.Where == InDefault }) {
		role(DefaultNamespace, DefaultRoleName(o.APIGroup), InDefault)
	}
	if !all {
		for _, ns := range dedupe(o.OwnedNamespaces) {
			role(ns, RoleName(o.APIGroup), InOwned)
		}
	}
	return out, nil
}

// RBACSummary says, in one line, what the install grants the operator.
func RBACSummary(o InstallOptions) string {
	if o.OwnsAll() {
		return "rbac: every namespace is owned (--gitops-namespaces=* or no namespaces given): the operator's grants are one ClusterRole " +
			ClusterRoleName(o.APIGroup) + " bound cluster-wide, as asked; name the namespaces for a Role in each instead"
	}
	s := "rbac: a Role and RoleBinding " + RoleName(o.APIGroup) + " in each owned namespace (" + strings.Join(dedupe(o.OwnedNamespaces), ",") +
		"), a ClusterRole " + ClusterRoleName(o.APIGroup) + " of cluster-scoped reads, the Lease's Role in " + o.Namespace
	if o.GitServiceAccount != "" {
		s += "; the git sweep applies as the ServiceAccount " + o.GitServiceAccount + " of each namespace"
	}
	return s
}

// childResources resolves every child Kind the Registry's entries own to its resource,
// by API group. Children that are custom resources of the bundle come back apart, in
// prunedCRs.
func childResources(group string, reg kinds.Registry, mapper meta.RESTMapper, crByKind map[schema.GroupKind]string) (children, prunedCRs map[string][]string, err error) {
	children = map[string][]string{"": nil}
	prunedCRs = map[string][]string{}
	refs := make([]kinds.Ref, 0, len(reg))
	for ref := range reg {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, ref := range refs {
		for _, gvk := range reg[ref].OwnedGVKs(group) {
			if plural, ok := crByKind[gvk.GroupKind()]; ok {
				prunedCRs[gvk.Group] = append(prunedCRs[gvk.Group], plural)
				continue
			}
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, nil, fmt.Errorf("resolve %s, a child of %s, to its resource: %w", gvk, ref, err)
			}
			if m.Scope != nil && m.Scope.Name() != meta.RESTScopeNameNamespace {
				// children are granted in the owned namespaces' Roles, where a cluster-scoped
				// resource would be granted nothing: give it a row of its own first
				return nil, nil, fmt.Errorf("%s, a child of %s, is cluster-scoped: the needs table has no row for it", gvk, ref)
			}
			children[gvk.Group] = append(children[gvk.Group], m.Resource.Resource)
		}
	}
	return children, prunedCRs, nil
}

// capabilityNeeds are the rows of the capabilities `operator run` turns on by flag, each
// only when install turns it on:
//   - --fleet: the registrations (the Cluster objects, cluster-scoped, in the universe group)
//     read by the fleet's sweeps and Kind controllers and their status written; get on the
//     operator namespace's Secrets, the credentials at derived names (fleet-<sha256 prefix>,
//     unknown at install: no resourceNames), and, with the fleet's git sweeps, list and watch
//     there for their cache, which restarts a sweep when its credential rotates;
//   - the /v1/k8s cluster plane: its registry read uncached and written by
//     clusters.register and deregister (the Cluster objects; their credential Secrets in the
//     operator's namespace), its audit Events in default;
//   - --gitops-sops-age-secret: get on that one Secret of the operator's namespace.
func capabilityNeeds(o InstallOptions) []Need {
	var needs []Need
	need := func(loops []string, where Where, group string, resources, verbs []string, why string, names ...string) {
		needs = append(needs, Need{Loops: loops, Where: where, Group: group, Resources: resources, Verbs: verbs, Names: names, Why: why})
	}
	clusters := fleetv1.GroupVersion(o.APIGroup).Group
	if o.FleetKinds || o.FleetSweeps {
		fl := []string{LoopKinds, LoopGitOps}
		need(fl, InCluster, clusters, []string{"clusters"}, verbsRead, "--fleet: the registrations, watched by the fleet's sweeps and Kind controllers")
		need(fl, InCluster, clusters, []string{"clusters/status"}, []string{"patch"}, "--fleet: a registration's condition Reached and status.registered (server-side apply)")
		need(fl, InHome, "", []string{"secrets"}, []string{"get"}, "--fleet: the registrations' credentials, Secrets fleet-<sha256 prefix> of the operator's namespace (derived names)")
	}
	if o.FleetSweeps {
		need([]string{LoopGitOps}, InHome, "", []string{"secrets"}, []string{"list", "watch"}, "--fleet: the fleet sweeps' cache of the operator namespace's Secrets (a credential's rotation restarts its sweep)")
	}
	if o.K8sPlanePort > 0 {
		plane := []string{LoopRun}
		need(plane, InCluster, clusters, []string{"clusters"}, []string{"get", "list", "create", "update", "delete"}, "the cluster plane: its registry, read uncached; clusters.register and deregister")
		need(plane, InHome, "", []string{"secrets"}, []string{"get", "create", "update", "delete"}, "the cluster plane: the credentials of the registrations, read by Reach, written by clusters.register, deleted by deregister")
		need(plane, InDefault, "", []string{"events"}, []string{"create"}, "the cluster plane's audit Events about the (cluster-scoped) registrations")
	}
	if o.SOPSAgeSecret != "" {
		need([]string{LoopGitOps}, InHome, "", []string{"secrets"}, []string{"get"}, "--gitops-sops-age-secret: the age keys of SOPS files, and no other Secret", o.SOPSAgeSecret)
	}
	return needs
}
