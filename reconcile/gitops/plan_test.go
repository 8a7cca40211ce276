package gitops

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
		"crd only under star": {
			reason:     "a CRD changes every namespace",
			namespaces: []string{"hanzo"},
			objs:       []source.Object{obj("crd.yaml", "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "apps.hanzo.ai")},
			skips:      []skip{{"crd.yaml", "CustomResourceDefinition apps.hanzo.ai", ReasonClusterWideNotOwned}},
		},
		"crds then namespaces first": {
			reason:     "dependencies apply in the same sweep; the rest keep file order",
			namespaces: []string{"*"},
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
			p := mustScope(t, tc.namespaces, tc.subset).Plan(tc.objs, tc.errs)
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
		{Path: "crs/kustomization.yaml", Data: []byte("resources: []\n")},
	}}
	p := mustScope(t, []string{"x"}, nil).Plan(source.Parse(snap))
	if diff := cmp.Diff([]string{"crs/a.yaml: ConfigMap x/a"}, applied(p)); diff != "" {
		t.Errorf("applies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]skip{{"crs/a.yaml", "", ReasonTypeless}, {"crs/kustomization.yaml", "", ReasonKustomization}}, skipped(p)); diff != "" {
		t.Errorf("skips (-want +got):\n%s", diff)
	}
}
