package install_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/install"
)

// allLoops runs every loop install knows.
var allLoops = []string{install.LoopKinds, install.LoopGitOps, install.LoopImageUpdate, install.LoopTenants, install.LoopDrive, install.LoopAgents}

// grantsOf flattens rules to group/resource -> verbs, failing on a wildcard.
func grantsOf(t *testing.T, rules []rbacv1.PolicyRule) map[string][]string {
	t.Helper()
	grants := map[string][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g == "*" || res == "*" || slices.Contains(r.Verbs, "*") {
					t.Errorf("wildcard rule %+v", r)
				}
				grants[g+"/"+res] = append(grants[g+"/"+res], r.Verbs...)
			}
		}
	}
	return grants
}

func rbacObjects(t *testing.T, o install.InstallOptions) (*rbacv1.ClusterRole, map[string]*rbacv1.Role, []client.Object) {
	t.Helper()
	objs, err := install.RBAC(o, kinds.Builtin(), testrestmapper.TestOnlyStaticRESTMapper(clientgoscheme.Scheme))
	if err != nil {
		t.Fatal(err)
	}
	var cr *rbacv1.ClusterRole
	roles := map[string]*rbacv1.Role{}
	for _, obj := range objs {
		switch r := obj.(type) {
		case *rbacv1.ClusterRole:
			cr = r
		case *rbacv1.Role:
			roles[r.Namespace+"/"+r.Name] = r
		}
	}
	return cr, roles, objs
}

// TestRBACEveryNamespace checks the generated ClusterRole when every namespace is owned:
// every CR resource and its status, every child resource, no delete on any CR group, no
// wildcard, CRDs read only, bind on exactly the tenant ClusterRole.
func TestRBACEveryNamespace(t *testing.T) {
	o := install.InstallOptions{APIGroup: "lux.cloud", Namespace: "op", Controllers: allLoops}
	role, roles, _ := rbacObjects(t, o)
	if role.Name != "universe-operator.lux.cloud" || len(roles) != 1 || roles["op/universe-operator-leader-election"] == nil {
		t.Fatalf("ClusterRole %q, Roles %v: want the ClusterRole and the leader-election Role alone", role.Name, slices.Collect(maps.Keys(roles)))
	}
	grants := grantsOf(t, role.Rules)
	cases := map[string]struct {
		resource string
		want     []string
	}{
		"universe CR":         {"lux.cloud/services", []string{"get", "list", "watch", "get", "create", "patch"}},
		"universe status":     {"lux.cloud/services/status", []string{"get", "patch", "update"}},
		"legacy CR":           {"lux.cloud/hanzoservices", []string{"get", "list", "watch", "get", "create", "patch"}},
		"kms CR and child":    {"kms.lux.cloud/kmssecrets", []string{"get", "list", "watch", "get", "create", "patch", "delete"}},
		"chain CR":            {"bootno.de/networks", []string{"get", "list", "watch", "get", "create", "patch"}},
		"deployments":         {"apps/deployments", []string{"get", "list", "watch", "create", "patch", "delete", "get", "list", "watch", "create", "patch"}},
		"services":            {"/services", []string{"get", "list", "watch", "create", "patch", "delete", "get", "list", "watch", "create", "patch"}},
		"namespaces":          {"/namespaces", []string{"get", "list", "watch", "create", "patch"}},
		"pods":                {"/pods", []string{"get", "list", "watch", "create", "delete"}},
		"clone claims":        {"/persistentvolumeclaims", []string{"get", "list", "watch", "create", "delete"}},
		"volumesnapshots":     {"snapshot.storage.k8s.io/volumesnapshots", []string{"get", "list", "watch", "create", "delete"}},
		"replicasets":         {"apps/replicasets", []string{"get", "list", "watch"}},
		"crds: read only":     {"apiextensions.k8s.io/customresourcedefinitions", []string{"get", "list", "watch"}},
		"events":              {"/events", []string{"create", "patch", "list"}},
		"pods/log":            {"/pods/log", []string{"get"}},
		"events.k8s.io":       {"events.k8s.io/events", []string{"create", "patch"}},
		"no leases cluster":   {"coordination.k8s.io/leases", nil},
		"secrets: no list":    {"/secrets", []string{"get", "create", "patch", "get"}},
		"tokenreviews":        {"authentication.k8s.io/tokenreviews", []string{"create"}},
		"sars":                {"authorization.k8s.io/subjectaccessreviews", []string{"create"}},
		"no impersonation":    {"/serviceaccounts", nil},
		"no roles":            {"rbac.authorization.k8s.io/roles", nil},
		"no cluster bindings": {"rbac.authorization.k8s.io/clusterrolebindings", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, grants[tc.resource]); diff != "" {
				t.Errorf("verbs on %s (-want +got):\n%s", tc.resource, diff)
			}
		})
	}
	for _, group := range []string{"lux.cloud", "kms.lux.cloud", "bootno.de"} {
		for key, verbs := range grants {
			if key != "kms.lux.cloud/kmssecrets" && strings.HasPrefix(key, group+"/") && slices.Contains(verbs, "delete") {
				t.Errorf("delete granted on custom resource %s", key)
			}
		}
	}
	binds := 0
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "bind") || slices.Contains(r.Verbs, "escalate") {
			binds++
			if !slices.Equal(r.Resources, []string{"clusterroles"}) || !slices.Equal(r.ResourceNames, []string{"hanzo-cloud-platform-tenant"}) || !slices.Equal(r.Verbs, []string{"bind"}) {
				t.Errorf("bind not scoped to the tenant ClusterRole: %+v", r)
			}
		}
	}
	if binds != 1 {
		t.Errorf("%d rules grant bind, want 1", binds)
	}
	again, _, _ := rbacObjects(t, o)
	if diff := cmp.Diff(role.Rules, again.Rules); diff != "" {
		t.Errorf("rules not deterministic:\n%s", diff)
	}
}

// TestRBACOwnedNamespaces: with owned namespaces the ClusterRole holds cluster-scoped
// reads and reviews alone (nothing namespaced, no bind), each owned namespace gets the
// Role, Namespaces are created and patched by name only; with --gitops-service-account
// the git path's own grants go and impersonate on that ServiceAccount alone comes in.
func TestRBACOwnedNamespaces(t *testing.T) {
	o := install.InstallOptions{APIGroup: "lux.cloud", Namespace: "op", Controllers: []string{install.LoopKinds, install.LoopGitOps}, OwnedNamespaces: []string{"b", "a", "a"}}
	role, roles, objs := rbacObjects(t, o)
	if len(objs) != 8 { // ClusterRole and binding, 3 Roles and bindings
		t.Errorf("%d RBAC objects, want 8", len(objs))
	}
	clusterScoped := map[string]bool{"/namespaces": true, "apiextensions.k8s.io/customresourcedefinitions": true,
		"authentication.k8s.io/tokenreviews": true, "authorization.k8s.io/subjectaccessreviews": true}
	for key := range grantsOf(t, role.Rules) {
		if !clusterScoped[key] {
			t.Errorf("the ClusterRole grants %s, which is namespaced: it belongs in the owned namespaces' Roles", key)
		}
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "create") && r.Resources[0] == "namespaces" && !slices.Equal(r.ResourceNames, []string{"a", "b"}) {
			t.Errorf("namespaces created by %v, want the owned a, b", r.ResourceNames)
		}
	}
	for _, ns := range []string{"a", "b"} {
		r := roles[ns+"/universe-operator.lux.cloud"]
		if r == nil {
			t.Fatalf("no Role in owned namespace %s: %v", ns, slices.Collect(maps.Keys(roles)))
		}
		g := grantsOf(t, r.Rules)
		if g["lux.cloud/services"] == nil || g["apps/deployments"] == nil || !slices.Contains(g["/secrets"], "create") {
			t.Errorf("Role in %s lacks the CRs, children or git's Secrets: %v", ns, g)
		}
		if g["rbac.authorization.k8s.io/rolebindings"] != nil || g["rbac.authorization.k8s.io/clusterroles"] != nil {
			t.Errorf("Role in %s grants RoleBindings or bind without the tenants loop", ns)
		}
	}
	o.GitServiceAccount = "gitops"
	_, roles, _ = rbacObjects(t, o)
	g := grantsOf(t, roles["a/universe-operator.lux.cloud"].Rules)
	if slices.Contains(g["/secrets"], "create") || slices.Contains(g["/secrets"], "get") {
		t.Errorf("impersonating, the operator still writes Secrets itself: %v", g["/secrets"])
	}
	if !slices.Equal(g["/serviceaccounts"], []string{"impersonate"}) {
		t.Errorf("serviceaccounts %v, want impersonate", g["/serviceaccounts"])
	}
	for _, r := range roles["a/universe-operator.lux.cloud"].Rules {
		if slices.Contains(r.Verbs, "impersonate") && !slices.Equal(r.ResourceNames, []string{"gitops"}) {
			t.Errorf("impersonate on %v, want the one ServiceAccount gitops", r.ResourceNames)
		}
	}
}
