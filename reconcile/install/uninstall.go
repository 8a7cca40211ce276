package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// UninstallOptions say what `operator uninstall` removes.
type UninstallOptions struct {
	// APIGroup and Namespace name the install to remove, as install was given them.
	APIGroup, Namespace string
	// CRDs also deletes the CRDs install applied (the bundle of APIGroup, and the
	// lux.network CRDs when install applied them), refusing while any of their CRs exists.
	CRDs bool
}

// OwnKinds are the Kinds of the objects install applies besides the CRDs and the
// Namespace, in delete order: the workloads first, so the operator stops before its RBAC
// goes. A test checks that every Kind OperatorObjects returns is here.
var OwnKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Version: "v1", Kind: "ServiceAccount"},
}

// Kept is an object uninstall found and left, and why.
type Kept struct {
	Object apply.ObjRef
	Reason string
}

// UninstallReport is what Uninstall did.
type UninstallReport struct {
	// Deleted are the objects deleted (Action Deleted) or that failed to be (Failed, Denied).
	Deleted []apply.Result
	// Kept are the objects found and left on purpose.
	Kept []Kept
}

// RemainingCRsError refuses to delete CRDs while CRs of them exist: deleting a CRD deletes
// every CR of it, and with them the data their controllers manage.
type RemainingCRsError struct {
	// CRs names them, Kind/namespace/name, at most crListLimit per CRD; More counts the rest.
	CRs  []string
	More int
}

func (e *RemainingCRsError) Error() string {
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("uninstall --crds: refused, %d CRs of these CRDs still exist (%s%s): deleting a CRD deletes them; delete them first, or uninstall without --crds",
		len(e.CRs)+e.More, strings.Join(e.CRs, ", "), more)
}

// crListLimit bounds the CRs named per CRD.
const crListLimit = 20

// Uninstall deletes the operator's own objects: those of OwnKinds in o.Namespace (and the
// cluster-scoped ones of o.APIGroup) that carry install's labels AND were applied by
// install's field manager, and nothing else: an object with the labels that install did
// not apply, and anything in the namespace it did not create (the Secrets, the Lease), is
// left. The Namespace is kept: it holds the Secrets install mounts, which are not its own.
// With o.CRDs, and only when no CR of them exists (a *RemainingCRsError names them, and
// nothing is deleted then), it deletes the CRDs install applied; the CRDs every universe
// shares (the chain family, lux.network) are kept while another universe's install exists.
func (i Installer) Uninstall(ctx context.Context, o UninstallOptions) (UninstallReport, error) {
	var rep UninstallReport
	if err := kinds.ValidateGroup(o.APIGroup); err != nil {
		return rep, err
	}
	if o.Namespace == "" {
		return rep, errors.New("uninstall: namespace is required")
	}
	var crds []*unstructured.Unstructured
	if o.CRDs {
		var err error
		if crds, err = i.uninstallableCRDs(ctx, o, &rep); err != nil {
			return rep, err
		}
		if err := i.checkNoCRs(ctx, crds); err != nil {
			return rep, err
		}
	}
	owned, err := i.ownedNamespaces(ctx, o)
	if err != nil {
		return rep, err
	}
	for _, gvk := range OwnKinds {
		objs, err := i.own(ctx, o, gvk, owned)
		if err != nil {
			return rep, err
		}
		for _, obj := range objs {
			if !appliedByInstall(obj) {
				rep.Kept = append(rep.Kept, Kept{Object: apply.RefOf(obj), Reason: "carries install's labels but was not applied by " + kinds.ManagerInstall})
				continue
			}
			rep.Deleted = append(rep.Deleted, i.delete(ctx, obj))
		}
	}
	ns := &unstructured.Unstructured{}
	ns.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err := i.Client.Get(ctx, client.ObjectKey{Name: o.Namespace}, ns); err == nil {
		rep.Kept = append(rep.Kept, Kept{Object: apply.RefOf(ns), Reason: "holds the Secrets install mounts and the Lease, which are not install's; delete it yourself"})
	}
	for _, crd := range crds {
		rep.Deleted = append(rep.Deleted, i.delete(ctx, crd))
	}
	return rep, nil
}

// own lists the objects of gvk install would have applied for o: by install's labels, in
// o.Namespace, or, cluster-scoped, named for o.APIGroup; the Role and RoleBinding
// DefaultRoleName(o.APIGroup) in DefaultNamespace (the cluster plane's audit Events); and the
// Role and RoleBinding RoleName(o.APIGroup) of each owned namespace whose RoleBinding binds
// this install's ServiceAccount (owned lists those namespaces, read before any delete).
func (i Installer) own(ctx context.Context, o UninstallOptions, gvk schema.GroupVersionKind, owned []string) ([]*unstructured.Unstructured, error) {
	out, err := i.ownIn(ctx, o, gvk, o.Namespace)
	if err != nil || (gvk.Kind != "Role" && gvk.Kind != "RoleBinding") {
		return out, err
	}
	for _, ns := range owned {
		if ns == o.Namespace {
			continue
		}
		in, err := i.ownIn(ctx, o, gvk, ns)
		if err != nil {
			return out, err
		}
		for _, obj := range in {
			if obj.GetName() == RoleName(o.APIGroup) || ns == DefaultNamespace && obj.GetName() == DefaultRoleName(o.APIGroup) {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// ownedNamespaces are the namespaces besides o.Namespace where install bound this install's
// ServiceAccount with its RoleBindings (the owned namespaces' RoleName, the cluster plane's
// DefaultRoleName in DefaultNamespace), found by install's labels across the cluster.
func (i Installer) ownedNamespaces(ctx context.Context, o UninstallOptions) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBindingList"})
	if err := i.Client.List(ctx, list, client.MatchingLabels{kinds.LabelName: OperatorName, kinds.LabelManagedBy: kinds.ManagerInstall}); err != nil {
		return nil, fmt.Errorf("list RoleBindings: %w", err)
	}
	var out []string
	for n := range list.Items {
		rb := &list.Items[n]
		if rb.GetNamespace() == o.Namespace || rb.GetName() != RoleName(o.APIGroup) && rb.GetName() != DefaultRoleName(o.APIGroup) {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		if slices.ContainsFunc(subjects, func(s any) bool {
			m, _ := s.(map[string]any)
			return m["kind"] == "ServiceAccount" && m["name"] == OperatorName && m["namespace"] == o.Namespace
		}) && !slices.Contains(out, rb.GetNamespace()) {
			out = append(out, rb.GetNamespace())
		}
	}
	sort.Strings(out)
	return out, nil
}

// ownIn lists the objects of gvk with install's labels in ns (cluster-scoped: named for
// o.APIGroup).
func (i Installer) ownIn(ctx context.Context, o UninstallOptions, gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	sel := client.MatchingLabels{kinds.LabelName: OperatorName, kinds.LabelManagedBy: kinds.ManagerInstall}
	cluster := gvk.Kind == "ClusterRole" || gvk.Kind == "ClusterRoleBinding"
	opts := []client.ListOption{sel}
	if !cluster {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := i.Client.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	var out []*unstructured.Unstructured
	for n := range list.Items {
		obj := &list.Items[n]
		if cluster && obj.GetName() != OperatorName+"."+o.APIGroup {
			continue // another universe's
		}
		obj.SetGroupVersionKind(gvk)
		out = append(out, obj)
	}
	return out, nil
}

// appliedByInstall reports whether install's field manager applied obj.
func appliedByInstall(obj *unstructured.Unstructured) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == kinds.ManagerInstall && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// delete deletes obj, at the resourceVersion it was read at (so an object replaced since is
// not deleted), its dependents in the background.
func (i Installer) delete(ctx context.Context, obj *unstructured.Unstructured) apply.Result {
	r := apply.Result{Object: apply.RefOf(obj), Action: apply.Deleted}
	err := i.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: ptrTo(obj.GetUID()), ResourceVersion: ptrTo(obj.GetResourceVersion())})
	switch {
	case err == nil, apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		r.Action, r.Message, r.Err = apply.Denied, err.Error(), err
	default:
		r.Action, r.Message, r.Err = apply.Failed, err.Error(), err
	}
	return r
}

func ptrTo[T any](v T) *T { return &v }

// uninstallableCRDs returns the live CRDs install applied for o.APIGroup (its bundle, the
// lux.network CRDs), keeping those another manager applied too and, while another
// universe's install exists, those every universe's bundle shares.
func (i Installer) uninstallableCRDs(ctx context.Context, o UninstallOptions, rep *UninstallReport) ([]*unstructured.Unstructured, error) {
	bundle, err := CRDObjects(o.APIGroup)
	if err != nil {
		return nil, err
	}
	lux, err := LuxNetworkCRDObjects()
	if err != nil {
		return nil, err
	}
	others, err := i.otherUniverses(ctx, o.APIGroup)
	if err != nil {
		return nil, err
	}
	own := map[string]bool{o.APIGroup: true, "kms." + o.APIGroup: true}
	var out []*unstructured.Unstructured
	for _, want := range append(bundle, lux...) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(apiextensionsGVK)
		if err := i.Client.Get(ctx, client.ObjectKey{Name: want.GetName()}, live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("get CRD %s: %w", want.GetName(), err)
		}
		live.SetGroupVersionKind(apiextensionsGVK)
		group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
		switch {
		case !appliedByInstall(live):
			rep.Kept = append(rep.Kept, Kept{Object: apply.RefOf(live), Reason: "not applied by " + kinds.ManagerInstall})
		case !own[group] && len(others) > 0:
			rep.Kept = append(rep.Kept, Kept{Object: apply.RefOf(live), Reason: "shared with the install of " + strings.Join(others, ", ")})
		default:
			out = append(out, live)
		}
	}
	return out, nil
}

// otherUniverses are the API groups of the other installs on the cluster, read from their
// ClusterRoles (OperatorName.<group>, with install's labels).
func (i Installer) otherUniverses(ctx context.Context, group string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleList"})
	if err := i.Client.List(ctx, list, client.MatchingLabels{kinds.LabelName: OperatorName, kinds.LabelManagedBy: kinds.ManagerInstall}); err != nil {
		return nil, fmt.Errorf("list ClusterRoles: %w", err)
	}
	var out []string
	for _, cr := range list.Items {
		if g, ok := strings.CutPrefix(cr.GetName(), OperatorName+"."); ok && g != group {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkNoCRs lists the CRs of every CRD (in its storage version) and refuses when any
// exists.
func (i Installer) checkNoCRs(ctx context.Context, crds []*unstructured.Unstructured) error {
	e := &RemainingCRsError{}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		version := servedVersion(crd)
		if version == "" {
			continue // serves nothing: holds nothing a client can list
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind + "List"})
		if err := i.Client.List(ctx, list, client.Limit(crListLimit)); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue // not served yet: nothing stored
			}
			return fmt.Errorf("list %s.%s: %w", kind, group, err)
		}
		for _, cr := range list.Items {
			e.CRs = append(e.CRs, apply.RefOf(&cr).String())
		}
		if rest := list.GetRemainingItemCount(); rest != nil {
			e.More += int(*rest)
		} else if list.GetContinue() != "" {
			e.More++ // at least one more
		}
	}
	if len(e.CRs) > 0 {
		slices.Sort(e.CRs)
		return e
	}
	return nil
}

// servedVersion is the CRD's storage version if served, else its first served version.
func servedVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	first := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		storage, _ := m["storage"].(bool)
		if served && storage {
			return name
		}
		if served && first == "" {
			first = name
		}
	}
	return first
}
