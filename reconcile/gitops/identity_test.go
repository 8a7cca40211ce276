package gitops

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/source"
)

// TestPlanRefusesOperatorIdentity is the hostile tenant's attempt to run as, or bind, the
// operator's identity from git: each object is refused with ReasonOperatorIdentity, the
// harmless look-alikes (the same ServiceAccount name in another namespace, another role)
// are applied.
func TestPlanRefusesOperatorIdentity(t *testing.T) {
	self := Self{Namespace: "op", ServiceAccount: "universe-operator",
		ClusterRoles: []string{"universe-operator.hanzo.ai"}, Roles: []string{"universe-operator-leader-election", "universe-operator.hanzo.ai"}}
	scope := mustScope(t, []string{"op", "team"}, nil).WithSelf(self)
	template := func(kind, apiVersion, path, ns, sa string) string {
		spec := "serviceAccountName: " + sa
		parts := strings.Split(path, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			spec = parts[i] + ": {" + spec + "}"
		}
		return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata: {name: x, namespace: " + ns + "}\n" + spec
	}
	binding := func(kind, ns, roleKind, role, subjects string) string {
		meta := "{name: b, namespace: " + ns + "}"
		if ns == "" {
			meta = "{name: b}"
		}
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: " + kind + "\nmetadata: " + meta +
			"\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: " + roleKind + ", name: " + role + "}\nsubjects: " + subjects
	}
	cases := map[string]struct {
		manifest string
		refused  bool
	}{
		"pod as the operator":               {template("Pod", "v1", "spec", "op", "universe-operator"), true},
		"pod, deprecated serviceAccount":    {"apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: op}\nspec: {serviceAccount: universe-operator}", true},
		"deployment as the operator":        {template("Deployment", "apps/v1", "spec.template.spec", "op", "universe-operator"), true},
		"statefulset as the operator":       {template("StatefulSet", "apps/v1", "spec.template.spec", "op", "universe-operator"), true},
		"daemonset as the operator":         {template("DaemonSet", "apps/v1", "spec.template.spec", "op", "universe-operator"), true},
		"replicaset as the operator":        {template("ReplicaSet", "apps/v1", "spec.template.spec", "op", "universe-operator"), true},
		"job as the operator":               {template("Job", "batch/v1", "spec.template.spec", "op", "universe-operator"), true},
		"cronjob as the operator":           {template("CronJob", "batch/v1", "spec.jobTemplate.spec.template.spec", "op", "universe-operator"), true},
		"replicationcontroller":             {template("ReplicationController", "v1", "spec.template.spec", "op", "universe-operator"), true},
		"same SA name, another namespace":   {template("Deployment", "apps/v1", "spec.template.spec", "team", "universe-operator"), false},
		"another SA in the operator's ns":   {template("Deployment", "apps/v1", "spec.template.spec", "op", "web"), false},
		"binds the operator's ClusterRole":  {binding("RoleBinding", "team", "ClusterRole", "universe-operator.hanzo.ai", "[{kind: Group, name: system:authenticated}]"), true},
		"binds the operator's Role":         {binding("RoleBinding", "team", "Role", "universe-operator.hanzo.ai", "[{kind: User, name: mallory}]"), true},
		"cluster binding of its role":       {binding("ClusterRoleBinding", "", "ClusterRole", "universe-operator.hanzo.ai", "[{kind: User, name: mallory}]"), true},
		"grants the operator's SA":          {binding("RoleBinding", "team", "ClusterRole", "admin", "[{kind: ServiceAccount, name: universe-operator, namespace: op}]"), true},
		"grants it, namespace defaulted":    {binding("RoleBinding", "op", "ClusterRole", "admin", "[{kind: ServiceAccount, name: universe-operator}]"), true},
		"grants its user name":              {binding("RoleBinding", "team", "ClusterRole", "admin", "[{kind: User, name: 'system:serviceaccount:op:universe-operator'}]"), true},
		"grants its namespace's SAs":        {binding("RoleBinding", "team", "ClusterRole", "admin", "[{kind: Group, name: 'system:serviceaccounts:op'}]"), true},
		"grants every SA":                   {binding("RoleBinding", "team", "ClusterRole", "admin", "[{kind: Group, name: 'system:serviceaccounts'}]"), true},
		"SA of that name elsewhere":         {binding("RoleBinding", "team", "ClusterRole", "view", "[{kind: ServiceAccount, name: universe-operator}]"), false},
		"an ordinary binding":               {binding("RoleBinding", "team", "ClusterRole", "view", "[{kind: Group, name: 'system:serviceaccounts:team'}]"), false},
		"overwrites its per-namespace Role": {"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: universe-operator.hanzo.ai, namespace: team}\nrules: []", true},
		"its per-namespace RoleBinding":     {strings.Replace(binding("RoleBinding", "team", "ClusterRole", "view", "[]"), "name: b,", "name: universe-operator.hanzo.ai,", 1), true},
		"token Secret for the operator":     {"apiVersion: v1\nkind: Secret\nmetadata: {name: t, namespace: op, annotations: {kubernetes.io/service-account.name: universe-operator}}\ntype: kubernetes.io/service-account-token", true},
		"token Secret elsewhere":            {"apiVersion: v1\nkind: Secret\nmetadata: {name: t, namespace: team, annotations: {kubernetes.io/service-account.name: universe-operator}}\ntype: kubernetes.io/service-account-token", false},
		"opaque Secret":                     {"apiVersion: v1\nkind: Secret\nmetadata: {name: t, namespace: op, annotations: {kubernetes.io/service-account.name: universe-operator}}\ntype: Opaque", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			scoping := ScopeNamespaced
			if u.GetKind() == "ClusterRoleBinding" {
				scoping = ScopeCluster
			}
			skip, ok := scope.Admit(source.Object{File: "f.yaml", Doc: 1, Obj: u}, scoping)
			switch {
			case scoping == ScopeCluster:
				// the sweep never applies a ClusterRoleBinding (ClusterScoped); its
				// identity check still names the operator's role
				if ok || skip.Reason != ReasonClusterScoped || self.identity(u, "") == "" {
					t.Errorf("ClusterRoleBinding admitted (%v) or refused as %s, identity %q", ok, skip.Reason, self.identity(u, ""))
				}
			case tc.refused && (ok || skip.Reason != ReasonOperatorIdentity):
				t.Errorf("admitted (%v) or refused as %s: want %s", ok, skip.Reason, ReasonOperatorIdentity)
			case !tc.refused && !ok:
				t.Errorf("refused as %s (%s), want admitted", skip.Reason, skip.Message)
			case tc.refused && !strings.Contains(skip.String(), "f.yaml"):
				t.Errorf("skip %q does not name its file", skip)
			}
		})
	}
	if !ReasonOperatorIdentity.OutOfScope() {
		t.Error("OperatorIdentity is not counted out of scope")
	}
	// Without the identity (an older Self), the checks do not invent one.
	bare := mustScope(t, []string{"op"}, nil).WithSelf(Self{Namespace: "op"})
	u := &unstructured.Unstructured{}
	_ = yaml.Unmarshal([]byte(template("Pod", "v1", "spec", "op", "")), &u.Object)
	if _, ok := bare.Admit(source.Object{File: "f.yaml", Obj: u}, ScopeNamespaced); !ok {
		t.Error("a pod with no serviceAccountName refused without an operator identity")
	}
}
