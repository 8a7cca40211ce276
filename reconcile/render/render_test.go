package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/dir"
)

// fixtureCRs is the one copy of the fixture CRs, kept in the kinds package.
var fixtureCRs = filepath.Join("..", "..", "kinds", "testdata", "fixtures", "crs")

func renderer(group string) render.Renderer {
	return render.Renderer{Registry: kinds.Builtin(), APIGroup: group}
}

// renderPath reads, parses and renders path the way `operator render` does.
func renderPath(t *testing.T, path string, stdin string) ([]render.Rendered, []source.FileError, string) {
	t.Helper()
	snap, err := dir.Read(path, strings.NewReader(stdin))
	if err != nil {
		t.Fatal(err)
	}
	objs, fileErrs := source.Parse(snap)
	rs := renderer(kinds.DefaultAPIGroup).Render(objs)
	var out bytes.Buffer
	if err := render.WriteYAML(&out, rs); err != nil {
		t.Fatal(err)
	}
	return rs, fileErrs, out.String()
}

// TestRender_Fixtures renders every fixture CR: the served ones through their builders, the
// Kinds this operator does not serve as errors naming file and object, and a plain object
// (gateway.hanzo.ai is no universe group) as itself. The output is one parseable,
// deterministic YAML stream.
func TestRender_Fixtures(t *testing.T) {
	rs, fileErrs, out := renderPath(t, fixtureCRs, "")
	if len(fileErrs) > 0 {
		t.Fatalf("file errors: %v", fileErrs)
	}
	var failed []string
	built, plain := 0, 0
	for _, rd := range rs {
		switch {
		case rd.Err != nil:
			failed = append(failed, rd.From.Obj.GetKind())
			if !strings.Contains(rd.Err.Error(), rd.From.File) || !strings.Contains(rd.Err.Error(), rd.From.Obj.GetName()) {
				t.Errorf("error does not name file and object: %v", rd.Err)
			}
		case rd.CR:
			built++
			if len(rd.Objects) == 0 && rd.Halt == nil {
				continue // Kinds that materialize nothing by design
			}
		default:
			plain++
		}
	}
	sort.Strings(failed)
	wantFailed := []string{"BaseApp", "HanzoGateway", "HanzoIngress", "HanzoMPC", "HanzoNetwork", "HanzoPlatform"}
	if diff := cmp.Diff(wantFailed, failed); diff != "" {
		t.Errorf("unserved fixture Kinds (-want +got):\n%s", diff)
	}
	if built < 30 || plain != 1 {
		t.Errorf("rendered %d CRs and %d plain objects, want >= 30 and 1", built, plain)
	}

	objs, err := ssautil.ReadObjects(strings.NewReader(out))
	if err != nil {
		t.Fatalf("output is not a YAML stream: %v", err)
	}
	n := 0
	for _, rd := range rs {
		n += len(rd.Objects)
	}
	if len(objs) != n || n < 60 {
		t.Errorf("output has %d objects, rendered %d", len(objs), n)
	}
	if _, _, again := renderPath(t, fixtureCRs, ""); again != out {
		t.Error("two renders of the same input differ")
	}
}

const renderInput = `
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
data:
  password: c3VwZXItc2VjcmV0LXZhbHVl
stringData:
  token: plain-token-value
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  mode: fast
---
apiVersion: hanzo.ai/v1alpha1
kind: HanzoService
metadata:
  name: web
  namespace: shop
spec:
  image:
    repository: registry.example/web
    tag: "1.0.0"
  replicas: 2
  ports:
  - name: http
    containerPort: 8080
---
apiVersion: bootno.de/v1
kind: LuxRuntime
metadata:
  name: mainnet
  namespace: shop
`

// TestRender_Stdin renders a mixed stream: plain objects as themselves (normalized), the
// CR as its children, a Halt as a comment, and never a Secret value.
func TestRender_Stdin(t *testing.T) {
	rs, fileErrs, out := renderPath(t, "-", renderInput)
	if len(fileErrs) > 0 || len(render.Errors(rs)) > 0 {
		t.Fatalf("errors: %v %v", fileErrs, render.Errors(rs))
	}
	for _, secret := range []string{"c3VwZXItc2VjcmV0LXZhbHVl", "super-secret-value", "plain-token-value", "cGxhaW4tdG9rZW4tdmFsdWU="} {
		if strings.Contains(out, secret) {
			t.Errorf("output prints a secret value %q:\n%s", secret, out)
		}
	}
	objs, err := ssautil.ReadObjects(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var kindsOut []string
	for _, o := range objs {
		kindsOut = append(kindsOut, o.GetKind()+"/"+o.GetName())
		if o.GetKind() == "Secret" {
			want := map[string]any{"password": render.Mask, "token": render.Mask}
			if diff := cmp.Diff(want, o.Object["data"]); diff != "" {
				t.Errorf("masked Secret data (-want +got):\n%s", diff)
			}
			if _, ok := o.Object["stringData"]; ok {
				t.Error("stringData survived normalization")
			}
		}
	}
	if kindsOut[0] != "Namespace/shop" || kindsOut[1] != "Secret/db" || kindsOut[2] != "ConfigMap/settings" || kindsOut[3] != "Deployment/web" {
		t.Errorf("output order: %v", kindsOut)
	}
	if !strings.Contains(out, "# stdin.yaml (document 5): LuxRuntime/shop/mainnet materializes nothing: ") {
		t.Errorf("no Halt comment for LuxRuntime:\n%s", out)
	}
	for _, o := range objs[3:] {
		if refs := o.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "HanzoService" || refs[0].Name != "web" {
			t.Errorf("%s/%s: owner references %v", o.GetKind(), o.GetName(), refs)
		}
	}
}

// TestRender_BadFileDoesNotStopOthers: a malformed file and an unserved Kind are reported
// by name; the good file is still rendered.
func TestRender_BadFileDoesNotStopOthers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n")
	write("b/unserved.yaml", "apiVersion: hanzo.ai/v1\nkind: Nonesuch\nmetadata: {name: x, namespace: ns}\n")
	write("c/good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: ns}\n")
	write("c/notes.txt", "not a manifest")
	write(".git/objects.yaml", "kind: [\n")

	rs, fileErrs, out := renderPath(t, dir, "")
	if len(fileErrs) != 1 || !strings.Contains(fileErrs[0].Error(), "a/broken.yaml") {
		t.Errorf("file errors: %v", fileErrs)
	}
	errs := render.Errors(rs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "b/unserved.yaml") || !strings.Contains(errs[0].Error(), "Nonesuch/ns/x") {
		t.Errorf("render errors: %v", errs)
	}
	if !strings.Contains(out, "name: ok") {
		t.Errorf("good file not rendered:\n%s", out)
	}
}

func TestMaskSecret(t *testing.T) {
	obj := func(apiVersion, kind string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x"}}}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	cases := map[string]struct {
		in, want *unstructured.Unstructured
	}{
		"secret data and stringData": {
			in:   obj("v1", "Secret", map[string]any{"data": map[string]any{"a": "YQ=="}, "stringData": map[string]any{"b": "b"}, "type": "Opaque"}),
			want: obj("v1", "Secret", map[string]any{"data": map[string]any{"a": render.Mask}, "stringData": map[string]any{"b": render.Mask}, "type": "Opaque"}),
		},
		"empty secret": {
			in:   obj("v1", "Secret", nil),
			want: obj("v1", "Secret", nil),
		},
		"data that is not a map is masked whole": {
			in:   obj("v1", "Secret", map[string]any{"data": "cGFzc3dvcmQ=", "stringData": []any{"password"}}),
			want: obj("v1", "Secret", map[string]any{"data": render.Mask, "stringData": render.Mask}),
		},
		"last-applied-configuration dropped": {
			in: obj("v1", "Secret", map[string]any{"metadata": map[string]any{"name": "x", "annotations": map[string]any{
				"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"a":"c2VjcmV0"}}`, "team": "db"}}}),
			want: obj("v1", "Secret", map[string]any{"metadata": map[string]any{"name": "x", "annotations": map[string]any{"team": "db"}}}),
		},
		"configmap untouched": {
			in:   obj("v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "b"}}),
			want: obj("v1", "ConfigMap", map[string]any{"data": map[string]any{"a": "b"}}),
		},
		"other group's Secret untouched": {
			in:   obj("example.com/v1", "Secret", map[string]any{"data": map[string]any{"a": "b"}}),
			want: obj("example.com/v1", "Secret", map[string]any{"data": map[string]any{"a": "b"}}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := render.MaskSecret(tc.in)
			if diff := cmp.Diff(tc.want.Object, got.Object); diff != "" {
				t.Errorf("masked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, tc.in.Object); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}
