package gitops

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestSweepAsTenantServiceAccount is Flux's multi-tenancy lockdown as an attack: the
// tenant's ServiceAccount may write ConfigMaps in its namespace and nothing else, and its
// commit also declares a Secret and a RoleBinding granting itself cluster-admin. With
// --gitops-service-account the sweep applies as that ServiceAccount: both ConfigMaps
// land, the Secret and the RoleBinding are Denied by file and object and do not exist,
// and the next sweep finds the ConfigMaps in sync through the ServiceAccount's own watch.
// The operator's identity (here the apiserver's admin) would have written all of them.
func TestSweepAsTenantServiceAccount(t *testing.T) {
	const ns, sa = "as-tenant", "gitops"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps-only", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps-only"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	src := newMemSource(map[string][]byte{
		"crs/ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + ", labels: {team: a}}\n"),
		"crs/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: allowed, namespace: " + ns + "}\ndata: {k: v}\n"),
		"crs/mixed.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: also-allowed, namespace: " + ns + "}\ndata: {k: v}\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata: {name: planted, namespace: " + ns + "}\nstringData: {k: v}\n---\n" +
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: escalate, namespace: " + ns + "}\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
			"subjects: [{kind: ServiceAccount, name: " + sa + ", namespace: " + ns + "}]\n"),
	})
	opts := DefaultOptions()
	opts.ServiceAccount = sa
	sw, err := NewSweeper(cfg, src, mustScope(t, []string{ns}, nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sw.syncWait = 5 * time.Second
	r := sw.Sweep(ctx)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	byName := map[string]apply.Result{}
	for _, res := range r.Results {
		byName[res.Object.Name] = res
	}
	if a := byName[ns].Action; a != apply.Updated { // the operator's own write: it existed, git adds a label
		t.Errorf("Namespace: %s, want Updated", a)
	}
	for _, name := range []string{"allowed", "also-allowed"} {
		if byName[name].Action != apply.Created {
			t.Errorf("%s: %s %s, want Created", name, byName[name].Action, byName[name].Message)
		}
	}
	for _, name := range []string{"planted", "escalate"} {
		res := byName[name]
		if res.Action != apply.Denied || !strings.Contains(res.Message, "system:serviceaccount:"+ns+":"+sa) {
			t.Errorf("%s: %s %q, want Denied naming the ServiceAccount", name, res.Action, res.Message)
		}
		if f := r.Files[res.Object]; f != "crs/mixed.yaml" {
			t.Errorf("%s: file %q, want crs/mixed.yaml", name, f)
		}
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "planted"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Secret exists (%v)", err)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "escalate"}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the RoleBinding exists (%v)", err)
	}
	r = sw.Sweep(ctx)
	if r.Summary.InSync != 3 || r.Summary.Denied != 2 {
		t.Errorf("second sweep: %+v, want 3 in sync (watched as the ServiceAccount) and the 2 denied again", r.Summary)
	}
}
