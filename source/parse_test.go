package source

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParse(t *testing.T) {
	type obj struct {
		File      string
		Doc       int
		Kind      string
		Namespace string
		Name      string
	}
	type ferr struct {
		File string
		Doc  int
		Is   error
	}
	cases := map[string]struct {
		reason string
		files  map[string]string
		want   []obj
		errs   []ferr
	}{
		"multi-document": {
			reason: "every document of a file becomes an object, in order; empty ones are ignored",
			files: map[string]string{"a.yaml": `---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: ns}
---
# only a comment
---
apiVersion: hanzo.ai/v1
kind: App
metadata:
  name: two
  namespace: ns
spec:
  replicas: 3
...
`},
			want: []obj{{"a.yaml", 1, "ConfigMap", "ns", "one"}, {"a.yaml", 3, "App", "ns", "two"}},
		},
		"yml and yaml only": {
			reason: ".yml counts (the reference loop missed it); other extensions are not read",
			files: map[string]string{
				"b.yml":     "apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
				"c.json":    `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"c"}}`,
				"README.md": "# hi",
			},
			want: []obj{{"b.yml", 1, "Namespace", "", "b"}},
		},
		"kustomization built, a Kustomization document elsewhere named": {
			reason: "a kustomization.yaml directory is built, its files not read again; a Kustomization kind in another file is named",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [a.yaml]\nnamespace: ns\n",
				"app/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
				"k.yaml":                 "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
			},
			want: []obj{{"app/kustomization.yaml", 1, "ConfigMap", "ns", "a"}},
			errs: []ferr{{"k.yaml", 1, ErrKustomization}},
		},
		"typeless document skipped, the rest of the file kept": {
			reason: "a document without apiVersion or kind is reported and its siblings applied",
			files: map[string]string{"t.yaml": `foo: bar
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, namespace: ns}
---
- a list
---
kind: ConfigMap
`},
			want: []obj{{"t.yaml", 2, "ConfigMap", "ns", "kept"}},
			errs: []ferr{{"t.yaml", 1, ErrTypeless}, {"t.yaml", 3, ErrTypeless}, {"t.yaml", 4, ErrTypeless}},
		},
		"malformed file costs only itself": {
			reason: "a syntax error rejects the whole file, and other files are still parsed",
			files: map[string]string{
				"bad.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: y}\n",
				"good.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: good}\n",
			},
			want: []obj{{"good.yaml", 1, "Namespace", "", "good"}},
			errs: []ferr{{"bad.yaml", 1, ErrMalformed}},
		},
		"tabs are malformed": {
			reason: "yaml that does not decode is reported, not panicked on",
			files:  map[string]string{"tab.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n\tname: t\n"},
			errs:   []ferr{{"tab.yaml", 1, ErrMalformed}},
		},
		"list expanded": {
			reason: "a List document applies its items, as kubectl does",
			files: map[string]string{"l.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: one, namespace: ns}
- foo: bar
- apiVersion: v1
  kind: Namespace
  metadata: {name: two}
`},
			want: []obj{{"l.yaml", 1, "ConfigMap", "ns", "one"}, {"l.yaml", 1, "Namespace", "", "two"}},
			errs: []ferr{{"l.yaml", 1, ErrTypeless}},
		},
		"empty file": {
			reason: "an empty file holds no objects and is no error",
			files:  map[string]string{"empty.yaml": ""},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &Snapshot{Revision: "r"}
			for _, p := range slices.Sorted(maps.Keys(tc.files)) {
				s.Files = append(s.Files, File{Path: p, Data: []byte(tc.files[p])})
			}
			objs, errs := Parse(s)
			var got []obj
			for _, o := range objs {
				got = append(got, obj{o.File, o.Doc, o.Obj.GetKind(), o.Obj.GetNamespace(), o.Obj.GetName()})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nobjects (-want +got):\n%s", tc.reason, diff)
			}
			var gotErrs []ferr
			for _, e := range errs {
				var is error
				for _, sentinel := range []error{ErrKustomization, ErrTypeless, ErrMalformed} {
					if errors.Is(e, sentinel) {
						is = sentinel
					}
				}
				gotErrs = append(gotErrs, ferr{e.File, e.Doc, is})
				if e.Error() == "" {
					t.Errorf("empty message for %s", e.File)
				}
			}
			if diff := cmp.Diff(tc.errs, gotErrs, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("%s\nfile errors (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParseKeepsIntegers(t *testing.T) {
	s := &Snapshot{Files: []File{{Path: "a.yaml", Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\nspec: {replicas: 3}\n")}}}
	objs, errs := Parse(s)
	if len(errs) != 0 || len(objs) != 1 {
		t.Fatalf("Parse = %d objects, %v", len(objs), errs)
	}
	if got := objs[0].Obj.Object["spec"].(map[string]any)["replicas"]; got != int64(3) {
		t.Errorf("replicas = %#v, want int64(3) as the apiserver decodes it", got)
	}
}

func TestFileErrorMessage(t *testing.T) {
	cases := map[string]struct {
		err  FileError
		want string
	}{
		"whole file": {FileError{File: "crs/k.yaml", Err: ErrKustomization}, "crs/k.yaml: a Kustomization document outside a kustomization.yaml is not built"},
		"document":   {FileError{File: "crs/a.yaml", Doc: 2, Err: ErrTypeless}, "crs/a.yaml (document 2): document has no apiVersion or kind"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnder(t *testing.T) {
	cases := map[string]struct {
		p, dir string
		want   bool
	}{
		"root":        {"a/b.yaml", "", true},
		"dot root":    {"a/b.yaml", ".", true},
		"inside":      {"crs/x/b.yaml", "crs", true},
		"trailing":    {"crs/b.yaml", "/crs/", true},
		"prefix only": {"crsx/b.yaml", "crs", false},
		"outside":     {"other/b.yaml", "crs", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Under(tc.p, tc.dir); got != tc.want {
				t.Errorf("Under(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.want)
			}
		})
	}
}

// The parse cache parses a file again only when its blob id changed (or it has none), and
// the limits still count every file.
func TestParseCacheReparsesChangedBlobsOnly(t *testing.T) {
	cm := func(name, v string) []byte {
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: ns}\ndata: {k: " + v + "}\n")
	}
	snap := func(b string) *Snapshot {
		return &Snapshot{Files: []File{
			{Path: "a.yaml", BlobSHA: "a1", Data: cm("a", "1")},
			{Path: "b.yaml", BlobSHA: b, Data: cm("b", b)},
			{Path: "bad.yaml", BlobSHA: "x1", Data: []byte("kind: [\n")},
			{Path: "c.yaml", Data: cm("c", "1")}, // no blob id: never cached
		}}
	}
	var c ParseCache
	first, firstErrs := c.Parse(snap("b1"), Limits{})
	second, secondErrs := c.Parse(snap("b2"), Limits{})
	if len(first) != 3 || len(second) != 3 || len(firstErrs) != 1 || len(secondErrs) != 1 {
		t.Fatalf("parsed %d and %d objects, %d and %d errors; want 3 and 1 each", len(first), len(second), len(firstErrs), len(secondErrs))
	}
	if first[0].Obj != second[0].Obj {
		t.Error("a.yaml did not change but was parsed again")
	}
	if first[1].Obj == second[1].Obj {
		t.Error("b.yaml changed but its old object was reused")
	}
	if v, _, _ := unstructured.NestedString(second[1].Obj.Object, "data", "k"); v != "b2" {
		t.Errorf("b.yaml after the change: data.k %q, want b2", v)
	}
	if first[2].Obj == second[2].Obj {
		t.Error("c.yaml has no blob id and must be parsed every time")
	}
	want, wantErrs := ParseLimited(snap("b2"), Limits{})
	if len(want) != len(second) || !errors.Is(secondErrs[0].Err, ErrMalformed) || len(wantErrs) != 1 {
		t.Errorf("the cache disagrees with ParseLimited: %d objects, errors %v and %v", len(want), secondErrs, wantErrs)
	}
	limited, errs := c.Parse(snap("b2"), Limits{Files: 2})
	if len(limited) != 2 || len(errs) != 2 || !errors.Is(errs[0].Err, ErrTooManyFiles) || !errors.Is(errs[1].Err, ErrTooManyFiles) {
		t.Errorf("under a 2-file limit: %d objects and errors %v; want a.yaml and b.yaml, the other two refused", len(limited), errs)
	}
}
