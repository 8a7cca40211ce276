package gitops

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReasonOperatorIdentity: an object from git that would run as, or bind, the operator's
// own identity: a pod (or pod template) running as its ServiceAccount, a binding of its
// roles or to its ServiceAccount, a token Secret of its ServiceAccount, or one of its
// per-namespace Roles or RoleBindings.
const ReasonOperatorIdentity Reason = "OperatorIdentity"

// podSpecPaths are where each workload kind keeps the pod spec whose serviceAccountName
// the kubelet runs the pod as.
var podSpecPaths = map[schema.GroupKind][]string{
	{Kind: "Pod"}:                           {"spec"},
	{Kind: "ReplicationController"}:         {"spec", "template", "spec"},
	{Group: "apps", Kind: "Deployment"}:     {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}:    {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:      {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:     {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:           {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:       {"spec", "jobTemplate", "spec", "template", "spec"},
	{Group: "argoproj.io", Kind: "Rollout"}: {"spec", "template", "spec"},
}

const (
	rbacGroup            = "rbac.authorization.k8s.io"
	saTokenType          = "kubernetes.io/service-account-token" //nolint:gosec // G101: a Secret type name
	saNameAnnotation     = "kubernetes.io/service-account.name"
	groupAuthenticated   = "system:authenticated"
	groupServiceAccounts = "system:serviceaccounts"
)

// identity reports why obj, in namespace ns, would run as or bind the operator's
// identity, or "" when it would not. It is pure.
func (s Self) identity(obj *unstructured.Unstructured, ns string) string {
	if s.Namespace == "" || s.ServiceAccount == "" {
		return ""
	}
	gk := obj.GroupVersionKind().GroupKind()
	if path, ok := podSpecPaths[gk]; ok {
		spec, _, _ := unstructured.NestedMap(obj.Object, path...)
		for _, field := range []string{"serviceAccountName", "serviceAccount"} { // serviceAccount: the deprecated alias
			if sa, _ := spec[field].(string); ns == s.Namespace && sa == s.ServiceAccount {
				return fmt.Sprintf("its pods would run as the operator's ServiceAccount %s/%s (spec.%s); git may never run code with the operator's identity",
					s.Namespace, s.ServiceAccount, field)
			}
		}
		return ""
	}
	switch gk {
	case schema.GroupKind{Kind: "Secret"}:
		t, _, _ := unstructured.NestedString(obj.Object, "type")
		if ns == s.Namespace && t == saTokenType && obj.GetAnnotations()[saNameAnnotation] == s.ServiceAccount {
			return fmt.Sprintf("a %s Secret for the operator's ServiceAccount %s/%s: the token controller would write the operator's token into it",
				saTokenType, s.Namespace, s.ServiceAccount)
		}
	case schema.GroupKind{Group: rbacGroup, Kind: "Role"}:
		if slices.Contains(s.Roles, obj.GetName()) {
			return fmt.Sprintf("Role %s is one of the operator's own (installed in every namespace it owns); git may never write it", obj.GetName())
		}
	case schema.GroupKind{Group: rbacGroup, Kind: "RoleBinding"}, schema.GroupKind{Group: rbacGroup, Kind: "ClusterRoleBinding"}:
		if gk.Kind == "RoleBinding" && slices.Contains(s.Roles, obj.GetName()) {
			return fmt.Sprintf("RoleBinding %s is one of the operator's own (installed in every namespace it owns); git may never write it", obj.GetName())
		}
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		if kind == "ClusterRole" && slices.Contains(s.ClusterRoles, name) || kind == "Role" && slices.Contains(s.Roles, name) {
			return fmt.Sprintf("binds the operator's own %s %s; git may never grant the operator's permissions to anyone", kind, name)
		}
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		for _, sub := range subjects {
			m, _ := sub.(map[string]any)
			if who := s.names(m, ns); who != "" {
				return fmt.Sprintf("its subject %s includes the operator's ServiceAccount %s/%s; git may never grant the operator anything",
					who, s.Namespace, s.ServiceAccount)
			}
		}
	}
	return ""
}

// names reports the subject, rendered, when it includes the operator's ServiceAccount:
// the ServiceAccount itself (a RoleBinding's subject defaults to the binding's namespace),
// its user name, or a group every ServiceAccount of its namespace is in.
func (s Self) names(sub map[string]any, bindingNS string) string {
	kind, _ := sub["kind"].(string)
	name, _ := sub["name"].(string)
	subNS, _ := sub["namespace"].(string)
	user := "system:serviceaccount:" + s.Namespace + ":" + s.ServiceAccount
	switch kind {
	case "ServiceAccount":
		if subNS == "" {
			subNS = bindingNS
		}
		if subNS == s.Namespace && name == s.ServiceAccount {
			return "ServiceAccount " + subNS + "/" + name
		}
	case "User":
		if name == user {
			return "User " + name
		}
	case "Group":
		if name == groupAuthenticated || name == groupServiceAccounts || name == groupServiceAccounts+":"+s.Namespace {
			return "Group " + name
		}
	}
	return ""
}
