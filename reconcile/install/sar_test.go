package install_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
)

// probe is one question to the apiserver's authorizer.
type probe struct {
	verb, group, resource, name, ns string
}

func (p probe) String() string {
	where := p.ns
	if where == "" {
		where = "(cluster)"
	}
	return fmt.Sprintf("%s %s/%s %q in %s", p.verb, p.group, p.resource, p.name, where)
}

// dangerous are grants a hostile tenant reaching the operator's identity would want.
var dangerous = []probe{
	{verb: "get", resource: "secrets"}, {verb: "list", resource: "secrets"}, {verb: "watch", resource: "secrets"},
	{verb: "delete", resource: "secrets"}, {verb: "update", resource: "secrets"},
	{verb: "create", resource: "pods/exec"}, {verb: "create", resource: "pods/attach"}, {verb: "create", resource: "pods/portforward"},
	{verb: "create", resource: "serviceaccounts/token"}, {verb: "create", resource: "serviceaccounts"}, {verb: "patch", resource: "serviceaccounts"},
	{verb: "impersonate", resource: "serviceaccounts", name: "default"}, {verb: "impersonate", resource: "serviceaccounts"},
	{verb: "impersonate", resource: "users"}, {verb: "impersonate", resource: "groups"},
	{verb: "bind", group: rbacv1.GroupName, resource: "clusterroles", name: "cluster-admin"},
	{verb: "bind", group: rbacv1.GroupName, resource: "clusterroles", name: "admin"},
	{verb: "bind", group: rbacv1.GroupName, resource: "clusterroles"},
	{verb: "escalate", group: rbacv1.GroupName, resource: "clusterroles"}, {verb: "escalate", group: rbacv1.GroupName, resource: "roles"},
	{verb: "bind", group: rbacv1.GroupName, resource: "roles"},
	{verb: "create", group: rbacv1.GroupName, resource: "roles"}, {verb: "patch", group: rbacv1.GroupName, resource: "roles"},
	{verb: "create", group: rbacv1.GroupName, resource: "rolebindings"}, {verb: "patch", group: rbacv1.GroupName, resource: "rolebindings"},
	{verb: "create", group: rbacv1.GroupName, resource: "clusterrolebindings"}, {verb: "create", group: rbacv1.GroupName, resource: "clusterroles"},
	{verb: "get", resource: "nodes"}, {verb: "create", resource: "nodes/proxy"}, {verb: "delete", resource: "namespaces"},
	{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
	{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
	{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
	{verb: "update", group: "certificates.k8s.io", resource: "certificatesigningrequests/approval"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases"}, {verb: "patch", resource: "configmaps", name: install.WebhookRelay},
	{verb: "create", resource: "configmaps"},
	{verb: "*", group: "*", resource: "*"},
}

// TestInstalledRBACIsTheNeedsTable installs the operator's RBAC on the real apiserver and
// asks SubjectAccessReview, as the operator's ServiceAccount, for every verb × resource ×
// namespace (two owned, one not, the operator's own, cluster scope) the needs table
// names, every name it names and another, and a set of dangerous grants: the answers
// equal the table in both directions — nothing it needs is denied, nothing beyond it is
// allowed. Then the attacks themselves, as the operator: a Secret and a RoleBinding to
// system:authenticated in a namespace it does not own are refused.
func TestInstalledRBACIsTheNeedsTable(t *testing.T) {
	cfg := rest.CopyConfig(testbed.APIServer(t))
	cfg.QPS, cfg.Burst = -1, 0
	admin, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scenarios := []struct {
		name string
		o    install.InstallOptions
	}{
		{"owned namespaces, every loop", install.InstallOptions{APIGroup: "sar-a.example", Namespace: "sar-a-op", Image: "x",
			Controllers: allLoops, OwnedNamespaces: []string{"sar-a-1", "sar-a-2"}}},
		{"owned namespaces, the git sweep as a ServiceAccount", install.InstallOptions{APIGroup: "sar-b.example", Namespace: "sar-b-op", Image: "x",
			OwnedNamespaces: []string{"sar-b-1", "sar-b-2", "sar-b-op"}, GitServiceAccount: "gitops"}},
		{"owned namespaces, the fleet, the cluster plane, SOPS keys", install.InstallOptions{APIGroup: "sar-d.example", Namespace: "sar-d-op", Image: "x",
			Controllers: []string{install.LoopKinds, install.LoopGitOps}, OwnedNamespaces: []string{"sar-d-1", "sar-d-2"},
			FleetKinds: true, FleetSweeps: true, K8sPlanePort: 8091, SOPSAgeSecret: "age-keys"}},
		{"every namespace (*)", install.InstallOptions{APIGroup: "sar-c.example", Namespace: "sar-c-op", Image: "x",
			Controllers: []string{install.LoopKinds, install.LoopGitOps, install.LoopImageUpdate, install.LoopTenants}, OwnedNamespaces: []string{"*"}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			o := sc.o
			stages, err := install.OperatorObjects(o, kinds.Builtin(), admin.RESTMapper())
			if err != nil {
				t.Fatal(err)
			}
			a := &apply.Applier{Client: admin, Manager: kinds.ManagerInstall}
			for _, stage := range stages[:2] { // the Namespaces, the RBAC and ServiceAccount
				if f := failures(a.Apply(ctx, stage)); len(f) > 0 {
					t.Fatalf("install failed:\n%s", strings.Join(f, "\n"))
				}
			}
			needs, err := install.Needs(o, kinds.Builtin(), admin.RESTMapper())
			if err != nil {
				t.Fatal(err)
			}
			prefix := strings.TrimSuffix(o.Namespace, "-op")
			namespaces := []string{prefix + "-1", prefix + "-2", prefix + "-unowned", o.Namespace, ""}
			if slices.ContainsFunc(needs, func(n install.Need) bool { return n.Where == install.InDefault }) {
				namespaces = append(namespaces, install.DefaultNamespace)
			}
			if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-unowned"}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
			seen := map[probe]bool{}
			var probes []probe
			add := func(p probe) {
				for _, ns := range namespaces {
					p.ns = ns
					if !seen[p] {
						seen[p] = true
						probes = append(probes, p)
					}
				}
			}
			for _, n := range needs {
				for _, res := range n.Resources {
					for _, v := range append(slices.Clone(verbs), n.Verbs...) {
						add(probe{verb: v, group: n.Group, resource: res})
						for _, name := range n.Names {
							add(probe{verb: v, group: n.Group, resource: res, name: name})
						}
						if len(n.Names) > 0 {
							add(probe{verb: v, group: n.Group, resource: res, name: "not-" + n.Names[0]})
						}
					}
				}
			}
			for _, p := range dangerous {
				add(p)
			}
			user := "system:serviceaccount:" + o.Namespace + ":" + install.OperatorName
			groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + o.Namespace, "system:authenticated"}
			var mu sync.Mutex
			var missing, extra []string
			apply.FanOut(len(probes), 16, func(i int) {
				p := probes[i]
				res, sub, _ := strings.Cut(p.resource, "/")
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: p.ns, Verb: p.verb, Group: p.group, Resource: res, Subresource: sub, Name: p.name}}}
				got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
				if err != nil {
					t.Errorf("%s: %v", p, err)
					return
				}
				want := slices.ContainsFunc(needs, func(n install.Need) bool {
					return n.Covers(p.verb, p.group, p.resource, p.name, p.ns, o.OwnedNamespaces, o.Namespace)
				})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case want && !got.Status.Allowed:
					missing = append(missing, p.String())
				case !want && got.Status.Allowed:
					extra = append(extra, p.String())
				}
			})
			slices.Sort(missing)
			slices.Sort(extra)
			t.Logf("%d probes: %d needs rows", len(probes), len(needs))
			if len(missing) > 0 {
				t.Errorf("%d needs of the table denied:\n%s", len(missing), strings.Join(missing, "\n"))
			}
			if len(extra) > 0 {
				t.Errorf("%d grants beyond the table:\n%s", len(extra), strings.Join(extra, "\n"))
			}
			if o.OwnsAll() {
				return
			}
			// The attacks, as the operator: nothing lands in a namespace it does not own.
			saCfg := rest.CopyConfig(cfg)
			saCfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
			sa, err := client.New(saCfg, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			unowned := prefix + "-unowned"
			attacks := []client.Object{
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted", Namespace: unowned}, StringData: map[string]string{"k": "v"}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everyone", Namespace: unowned},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: install.ClusterRoleName(o.APIGroup)},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everyone", Namespace: prefix + "-1"},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, // admin is aggregated, empty without a controller-manager
					Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}},
			}
			for _, obj := range attacks {
				if err := sa.Create(ctx, obj); !apierrors.IsForbidden(err) {
					t.Errorf("the operator's ServiceAccount created %T %s/%s: %v, want Forbidden", obj, obj.GetNamespace(), obj.GetName(), err)
				}
			}
		})
	}
}
