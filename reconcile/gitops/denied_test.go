package gitops

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestSweepReportsDenialsApart: under an identity that may not write
// Secrets, the Secret is reported Denied with the grant it lacks, an invalid
// object fails alone, and a kind the sweep may not watch is still applied
// (through the get-and-dry-run path) while the rest go on.
func TestSweepReportsDenialsApart(t *testing.T) {
	const ns = "denied-test"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	all := []string{"get", "list", "watch", "patch", "create"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "namespaces"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "patch", "create"}},
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitops-limited"}, Rules: rules},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "gitops-limited"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "gitops-limited"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "gitops-limited", APIGroup: "rbac.authorization.k8s.io"}},
		},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	limited := rest.CopyConfig(cfg)
	limited.Impersonate = rest.ImpersonationConfig{UserName: "gitops-limited"}
	src := newMemSource(map[string][]byte{
		"crs/ns.yaml":     []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"crs/bad.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: " + ns + "}\ndata: {Not A Valid Key!: x}\n"),
		"crs/secret.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: denied, namespace: " + ns + "}\nstringData: {k: v}\n"),
		"crs/sa.yaml":     []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: unwatched, namespace: " + ns + "}\n"),
		"crs/good.yaml":   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good, namespace: " + ns + "}\ndata: {k: v}\n"),
	})
	scope := mustScope(t, []string{ns}, nil)
	sw, err := NewSweeper(limited, src, scope, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sw.syncWait = time.Second
	r := sw.Sweep(ctx)
	want := Summary{Files: 5, Refetched: 5, Created: 3, Errors: 1, Denied: 1, Applied: 5}
	got := r.Summary
	got.Health = HealthCounts{} // health comes from the watches, asserted by TestSweepHealth
	if got != want {
		t.Errorf("summary: %+v, want %+v", r.Summary, want)
	}
	byName := map[string]apply.Result{}
	for _, res := range r.Results {
		byName[res.Object.Name] = res
	}
	if d := byName["denied"]; d.Action != apply.Denied || !strings.Contains(d.Message, "grant verbs [get patch] on apiGroup \"\" kind Secret in namespace "+ns) {
		t.Errorf("Secret: %+v, want Denied naming the missing grant", d)
	}
	if b := byName["bad"]; b.Action != apply.Failed || !strings.Contains(b.Message, "Not A Valid Key!") {
		t.Errorf("invalid ConfigMap: %+v, want Failed naming the bad key", b)
	}
	for _, name := range []string{ns, "good", "unwatched"} {
		if byName[name].Action != apply.Created {
			t.Errorf("%s: %+v, want Created", name, byName[name])
		}
	}
	// The next sweep retries only what failed, and the unwatched kind, whose
	// state the sweep cannot know.
	r = sw.Sweep(ctx)
	if r.Summary.Applied != 3 || r.Summary.InSync != 3 {
		t.Errorf("second sweep: %+v, want 3 applied (bad, denied, unwatched) and 3 in sync", r.Summary)
	}
}
