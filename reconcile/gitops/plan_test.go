package gitops

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/source"
)

// obj declares apiVersion/kind ns/name in file (document 1 unless doc is set).
func obj(file, apiVersion, kind, ns, name string) source.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return source.Object{File: file, Doc: 1, Obj: u}
}

func doc(o source.Object, d int) source.Object { o.Doc = d; return o }

func mustScope(t *testing.T, namespaces, subset []string) Scope {
	t.Helper()
	s, err := NewScope(namespaces, subset)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// applied renders applies as "file: Kind ns/name".
func applied(p Plan) []string {
	var out []string
	for _, a := range p.Applies {
		out = append(out, fmt.Sprintf("%s: %s %s/%s", a.File, a.Object.GetKind(), a.Object.GetNamespace(), a.Object.GetName()))
	}
	return out
}

type skip struct {
	File, Object string
	Reason       Reason
}

func skipped(p Plan) []skip {
	var out []skip
	for _, s := range p.Skips {
		out = append(out, skip{s.File, s.Object(), s.Reason})
	}
	return out
}

func TestPlan(t *testing.T) {
	app := func(file, ns, name string) source.Object { return obj(file, "hanzo.ai/v1", "App", ns, name) }
	cases := map[string]struct {
		reason     string
		namespaces []string
		subset     []string
		objs       []source.Object
		errs       []source.FileError
		crds       bool
		applies    []string
		skips      []skip
	}{
		"owned namespace only": {
			reason:     "the default scope owns one namespace; other namespaces are skipped and named",
			namespaces: []string{"hanzo"},
			objs:       []source.Object{app("a.yaml", "hanzo", "web"), app("b.yaml", "zen", "zen")},
			applies:    []string{"a.yaml: App hanzo/web"},
			skips:      []skip{{"b.yaml", "App zen/zen", ReasonNamespaceNotOwned}},
		},
		"namespaceless object refused even under *": {
			reason:     "the sweep never guesses a namespace",
			namespaces: []string{"*"},
			objs:       []source.Object{app("a.yaml", "", "web"), obj("r.yaml", "rbac.authorization.k8s.io/v1", "ClusterRole", "", "admin")},
			skips:      []skip{{"a.yaml", "App web", ReasonNoNamespace}, {"r.yaml", "ClusterRole admin", ReasonNoNamespace}},
		},
		"star owns every namespace": {
			namespaces: []string{"hanzo", "*"},
			objs:       []source.Object{app("a.yaml", "x", "a"), app("b.yaml", "y", "b")},
			applies:    []string{"a.yaml: App x/a", "b.yaml: App y/b"},
		},
		"vetted subset narrows": {
			reason:     "a bare name matches in any owned namespace, ns/name pins the pair",
			namespaces: []string{"a", "b"},
			subset:     []string{"web", "b/api"},
			objs: []source.Object{
				app("1.yaml", "a", "web"), app("2.yaml", "b", "web"),
				app("3.yaml", "a", "api"), app("4.yaml", "b", "api"),
				app("5.yaml", "c", "web"),
			},
			applies: []string{"1.yaml: App a/web", "2.yaml: App b/web", "4.yaml: App b/api"},
			skips: []skip{
				{"3.yaml", "App a/api", ReasonNotInApplyScope},
				{"5.yaml", "App c/web", ReasonNamespaceNotOwned},
			},
		},
		"same name in two namespaces is two objects": {
			namespaces: []string{"*"},
			objs:       []source.Object{app("a.yaml", "x", "web"), app("b.yaml", "y", "web")},
			applies:    []string{"a.yaml: App x/web", "b.yaml: App y/web"},
		},
		"duplicate declaration": {
			reason:     "the first declaration wins; the second is a named skip, whatever the version",
			namespaces: []string{"x"},
			objs:       []source.Object{app("a.yaml", "x", "web"), obj("b.yaml", "hanzo.ai/v2", "App", "x", "web")},
			applies:    []string{"a.yaml: App x/web"},
			skips:      []skip{{"b.yaml", "App x/web", ReasonDuplicate}},
		},
		"namespace admitted when owned": {
			reason:     "a Namespace is cluster-scoped; its own name is what must be owned",
			namespaces: []string{"hanzo"},
			objs: []source.Object{
				obj("ns.yaml", "v1", "Namespace", "", "hanzo"),
				obj("other.yaml", "v1", "Namespace", "", "zen"),
				obj("bad.yaml", "v1", "Namespace", "hanzo", "hanzo2"),
			},
			applies: []string{"ns.yaml: Namespace /hanzo"},
			skips: []skip{
				{"bad.yaml", "Namespace hanzo/hanzo2", ReasonClusterScopedWithNamespace},
				{"other.yaml", "Namespace zen", ReasonNamespaceNotOwned},
			},
		},
		"crd only with the opt-in": {
			reason:     "a CRD changes every namespace: even * does not admit it without --gitops-allow-crds",
			namespaces: []string{"*"},
			objs: []source.Object{
				obj("crd.yaml", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "apps.hanzo.ai"),
				obj("crd2.yaml", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "hanzo", "dbs.hanzo.ai"),
			},
			skips: []skip{
				{"crd.yaml", "CustomResourceDefinition apps.hanzo.ai", ReasonCRDNotAllowed},
				{"crd2.yaml", "CustomResourceDefinition hanzo/dbs.hanzo.ai", ReasonCRDNotAllowed},
			},
		},
		"crds then namespaces first": {
			reason:     "dependencies apply in the same sweep; the rest keep file order",
			namespaces: []string{"*"},
			crds:       true,
			objs: []source.Object{
				app("a.yaml", "hanzo", "web"),
				obj("b.yaml", "v1", "Namespace", "", "hanzo"),
				obj("c.yaml", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "apps.hanzo.ai"),
				obj("d.yaml", "v1", "ConfigMap", "hanzo", "cfg"),
				obj("e.yaml", "v1", "Namespace", "", "zen"),
			},
			applies: []string{
				"c.yaml: CustomResourceDefinition /apps.hanzo.ai",
				"b.yaml: Namespace /hanzo", "e.yaml: Namespace /zen",
				"a.yaml: App hanzo/web", "d.yaml: ConfigMap hanzo/cfg",
			},
		},
		"vetted subset applies to namespaces too": {
			namespaces: []string{"*"},
			subset:     []string{"web"},
			objs:       []source.Object{obj("ns.yaml", "v1", "Namespace", "", "hanzo")},
			skips:      []skip{{"ns.yaml", "Namespace hanzo", ReasonNotInApplyScope}},
		},
		"no name": {
			namespaces: []string{"x"},
			objs:       []source.Object{app("a.yaml", "x", "")},
			skips:      []skip{{"a.yaml", "App x/", ReasonNoName}},
		},
		"file errors become named skips": {
			reason:     "every file that yields nothing is accounted for, in file and document order",
			namespaces: []string{"x"},
			objs:       []source.Object{doc(app("m.yaml", "x", "kept"), 2)},
			errs: []source.FileError{
				{File: "m.yaml", Doc: 1, Err: source.ErrTypeless},
				{File: "bad.yaml", Doc: 1, Err: fmt.Errorf("%w: yaml: line 3: did not find expected key", source.ErrMalformed)},
				{File: "kustomization.yaml", Err: source.ErrKustomization},
			},
			applies: []string{"m.yaml: App x/kept"},
			skips: []skip{
				{"bad.yaml", "", ReasonUnparseable},
				{"kustomization.yaml", "", ReasonKustomization},
				{"m.yaml", "", ReasonTypeless},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := mustScope(t, tc.namespaces, tc.subset).WithCRDs(tc.crds).Plan(tc.objs, tc.errs)
			if diff := cmp.Diff(tc.applies, applied(p)); diff != "" {
				t.Errorf("%s\napplies (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.skips, skipped(p)); diff != "" {
				t.Errorf("%s\nskips (-want +got):\n%s", tc.reason, diff)
			}
			for _, s := range p.Skips {
				if s.File == "" || s.Message == "" || !strings.Contains(s.String(), s.File) {
					t.Errorf("skip does not explain itself: %#v", s)
				}
			}
		})
	}
}

func TestSkipMessagesAreActionable(t *testing.T) {
	p := mustScope(t, []string{"hanzo"}, []string{"web"}).Plan([]source.Object{
		obj("crs/zen.yaml", "hanzo.ai/v1", "App", "zen", "zen"),
		obj("crs/api.yaml", "hanzo.ai/v1", "App", "hanzo", "api"),
	}, nil)
	want := []string{
		"crs/api.yaml (document 1): App hanzo/api: not in the vetted subset; add hanzo/api to --gitops-apply-scope (GITOPS_APPLY_SCOPE)",
		"crs/zen.yaml (document 1): App zen/zen: namespace zen is not owned (owned: hanzo); add it to --gitops-namespaces (GITOPS_NAMESPACES)",
	}
	var got []string
	for _, s := range p.Skips {
		got = append(got, s.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skip messages (-want +got):\n%s", diff)
	}
}

// A file removed from git produces nothing at all: no entry, and no way to
// express a delete in the Plan's type.
func TestPlanNeverPrunes(t *testing.T) {
	s := mustScope(t, []string{"x"}, nil)
	before := s.Plan([]source.Object{obj("a.yaml", "v1", "ConfigMap", "x", "a"), obj("b.yaml", "v1", "ConfigMap", "x", "b")}, nil)
	after := s.Plan([]source.Object{obj("a.yaml", "v1", "ConfigMap", "x", "a")}, nil)
	if len(before.Applies) != 2 || len(after.Applies) != 1 || len(after.Skips) != 0 {
		t.Fatalf("after removing b.yaml: %v applies, %v skips", applied(after), after.Skips)
	}
	// The type itself: only Applies and Skips, and neither can say delete.
	var fields []string
	for _, typ := range []reflect.Type{reflect.TypeFor[Plan](), reflect.TypeFor[Apply](), reflect.TypeFor[Skip]()} {
		for f := range typ.Fields() {
			fields = append(fields, typ.Name()+"."+f.Name)
		}
	}
	for _, f := range fields {
		if l := strings.ToLower(f); strings.Contains(l, "delete") || strings.Contains(l, "prune") {
			t.Errorf("%s can express a delete", f)
		}
	}
}

func TestPlanDoesNotModifyObjects(t *testing.T) {
	o := obj("a.yaml", "v1", "ConfigMap", "x", "a")
	want := o.Obj.DeepCopy()
	_ = mustScope(t, []string{"x"}, nil).Plan([]source.Object{o}, nil)
	if diff := cmp.Diff(want.Object, o.Obj.Object); diff != "" {
		t.Errorf("Plan modified its input (-want +got):\n%s", diff)
	}
}

func TestPlanFromParse(t *testing.T) {
	snap := &source.Snapshot{Revision: "r", Files: []source.File{
		{Path: "crs/a.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\nfoo: bar\n")},
		{Path: "crs/k/kustomization.yaml", Data: []byte("resources: [https://example.com/x.yaml]\n")},
	}}
	p := mustScope(t, []string{"x"}, nil).Plan(source.Parse(snap))
	if diff := cmp.Diff([]string{"crs/a.yaml: ConfigMap x/a"}, applied(p)); diff != "" {
		t.Errorf("applies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]skip{{"crs/a.yaml", "", ReasonTypeless}, {"crs/k/kustomization.yaml", "", ReasonKustomization}}, skipped(p)); diff != "" {
		t.Errorf("skips (-want +got):\n%s", diff)
	}
}

// apiScopes answers as the apiserver's RESTMapping does for the kinds below;
// anything else is not known (yet).
func apiScopes(gvk schema.GroupVersionKind) Scoping {
	switch gvk.GroupKind().String() {
	case "ClusterRoleBinding.rbac.authorization.k8s.io", "ClusterRole.rbac.authorization.k8s.io",
		"MutatingWebhookConfiguration.admissionregistration.k8s.io", "StorageClass.storage.k8s.io", "PersistentVolume":
		return ScopeCluster
	case "ConfigMap", "Secret", "ServiceAccount", "Deployment.apps", "Lease.coordination.k8s.io", "RoleBinding.rbac.authorization.k8s.io":
		return ScopeNamespaced
	}
	return ScopeUnknown
}

// TestPlanScopesByTheAPI: whether a kind is cluster-scoped is the API's
// answer, never the manifest's: a ClusterRoleBinding to cluster-admin that
// declares an owned namespace (the apiserver would drop it and create the
// binding cluster-wide) is refused by name, as is one without a namespace.
func TestPlanScopesByTheAPI(t *testing.T) {
	crb := obj("rbac.yaml", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "probe", "pwn")
	hook := obj("hook.yaml", "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "probe", "pwn")
	bare := obj("pv.yaml", "v1", "PersistentVolume", "", "disk")
	cm := obj("cm.yaml", "v1", "ConfigMap", "probe", "ok")
	widget := obj("w.yaml", "example.com/v1", "Widget", "probe", "w") // its CRD may come in this snapshot
	objs := []source.Object{crb, hook, bare, cm, widget}
	for _, namespaces := range [][]string{{"probe"}, {"*"}} {
		p := mustScope(t, namespaces, nil).WithAPI(apiScopes).Plan(objs, nil)
		if diff := cmp.Diff([]string{"cm.yaml: ConfigMap probe/ok", "w.yaml: Widget probe/w"}, applied(p)); diff != "" {
			t.Errorf("%v: applies (-want +got):\n%s", namespaces, diff)
		}
		want := []skip{
			{"hook.yaml", "MutatingWebhookConfiguration probe/pwn", ReasonClusterScoped},
			{"pv.yaml", "PersistentVolume disk", ReasonClusterScoped},
			{"rbac.yaml", "ClusterRoleBinding probe/pwn", ReasonClusterScoped},
		}
		if diff := cmp.Diff(want, skipped(p)); diff != "" {
			t.Errorf("%v: skips (-want +got):\n%s", namespaces, diff)
		}
	}
	// The sweep decides the provisional kind again once it resolves.
	s := mustScope(t, []string{"probe"}, nil)
	if sk, ok := s.Admit(widget, ScopeCluster); ok || sk.Reason != ReasonClusterScoped {
		t.Errorf("Admit(cluster-scoped Widget) = %v %v, want refused as ClusterScoped", sk, ok)
	}
	if _, ok := s.Admit(widget, ScopeNamespaced); !ok {
		t.Error("Admit(namespaced Widget in an owned namespace) refused")
	}
}

// TestPlanNeverWritesTheOperator: "*" covers neither the system namespaces
// nor the operator's; naming the operator's namespace owns it, but its own
// objects stay refused; ownerReferences from git are refused.
func TestPlanNeverWritesTheOperator(t *testing.T) {
	self := Self{Namespace: "universe-system", Objects: []SelfObject{
		{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Name: "universe-operator"},
		{GroupKind: schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}},
		{GroupKind: schema.GroupKind{Kind: "Secret"}, Name: "universe-operator-webhook"},
	}}
	owned := obj("own.yaml", "v1", "ConfigMap", "apps", "owned")
	owned.Obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "0000"}})
	objs := []source.Object{
		obj("a.yaml", "v1", "ConfigMap", "kube-system", "x"),
		obj("b.yaml", "v1", "ConfigMap", "kube-public", "x"),
		obj("c.yaml", "coordination.k8s.io/v1", "Lease", "kube-node-lease", "node"),
		obj("d.yaml", "apps/v1", "Deployment", "universe-system", "universe-operator"),
		obj("e.yaml", "coordination.k8s.io/v1", "Lease", "universe-system", "universe-operator.hanzo.ai"),
		obj("f.yaml", "v1", "Secret", "universe-system", "universe-operator-webhook"),
		obj("g.yaml", "v1", "ConfigMap", "universe-system", "settings"),
		obj("h.yaml", "v1", "Namespace", "", "kube-system"),
		obj("i.yaml", "v1", "ConfigMap", "apps", "fine"),
		owned,
	}
	star, err := (Options{Namespaces: []string{"*"}}).Scope(self)
	if err != nil {
		t.Fatal(err)
	}
	p := star.WithAPI(apiScopes).Plan(objs, nil)
	if diff := cmp.Diff([]string{"i.yaml: ConfigMap apps/fine"}, applied(p)); diff != "" {
		t.Errorf("*: applies (-want +got):\n%s", diff)
	}
	for _, s := range p.Skips {
		if s.File != "own.yaml" && s.Reason != ReasonNamespaceNotOwned {
			t.Errorf("*: %s: %s, want NamespaceNotOwned", s.File, s.Reason)
		}
		if s.File == "own.yaml" && s.Reason != ReasonOwnerReferences {
			t.Errorf("ownerReferences: %s, want OwnerReferences", s.Reason)
		}
	}
	named, err := (Options{Namespaces: []string{"universe-system", "apps"}}).Scope(self)
	if err != nil {
		t.Fatal(err)
	}
	p = named.WithAPI(apiScopes).Plan(objs, nil)
	if diff := cmp.Diff([]string{"g.yaml: ConfigMap universe-system/settings", "i.yaml: ConfigMap apps/fine"}, applied(p)); diff != "" {
		t.Errorf("named: applies (-want +got):\n%s", diff)
	}
	got := map[string]Reason{}
	for _, s := range p.Skips {
		got[s.File] = s.Reason
	}
	for _, f := range []string{"d.yaml", "e.yaml", "f.yaml"} {
		if got[f] != ReasonOperatorObject {
			t.Errorf("named operator namespace: %s skipped as %q, want OperatorObject", f, got[f])
		}
	}
}

// TestPlanRefusesFleetRegistrations: a Cluster of the universe group (the fleet's
// registry) in a tenant's path is refused, with a message saying where registrations
// live; another group's Cluster is an ordinary cluster-scoped refusal.
func TestPlanRefusesFleetRegistrations(t *testing.T) {
	reg := obj("orgs/acme/web/cluster.yaml", "hanzo.ai/v1", "Cluster", "acme-web", "mine")
	other := obj("orgs/acme/web/other.yaml", "example.com/v1", "Cluster", "acme-web", "x")
	self := Self{Namespace: "universe-system", Registry: schema.GroupKind{Group: "hanzo.ai", Kind: "Cluster"}}
	s, err := (Options{Namespaces: []string{"acme-web"}}).Scope(self)
	if err != nil {
		t.Fatal(err)
	}
	p := s.WithAPI(func(schema.GroupVersionKind) Scoping { return ScopeCluster }).Plan([]source.Object{reg, other}, nil)
	if len(p.Applies) != 0 || len(p.Skips) != 2 {
		t.Fatalf("plan: %+v", p)
	}
	for _, sk := range p.Skips {
		points := strings.Contains(sk.Message, "registrations live as Cluster objects of the operator's own cluster") &&
			strings.Contains(sk.Message, "orgs/<org>/clusters/<name>/")
		if sk.Reason != ReasonClusterScoped || points != (sk.File == reg.File) {
			t.Errorf("%s: %s %q", sk.File, sk.Reason, sk.Message)
		}
	}
}
