package kinds_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
)

// The -update flag (bundle_test.go) also rewrites the goldens of TestGolden.

// goldenCase is one CR built by the golden and dry-run tests: every fixture CR whose Kind is
// served, plus the testdata inputs for Kinds and shapes the fixtures lack.
type goldenCase struct {
	Name   string // for t.Run
	Golden string // path of the golden file
	Obj    *unstructured.Unstructured
	// Inputs are the other documents of the same input file: what a build that reads
	// Context.Inputs (a LuxNetwork its LuxChains) finds beside it, as `operator render` does.
	Inputs []*unstructured.Unstructured
}

// ctx is the build Context of the case.
func (c goldenCase) ctx() kinds.Context {
	return kinds.Context{APIGroup: kinds.DefaultAPIGroup, Inputs: c.Inputs}
}

// goldenCases returns the fixture CRs and testdata/<kind>/*.in.yaml, each with a uid derived
// from its name (builders need one for owner references) and a namespace (HIP examples omit
// it; the apiserver always has one).
func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	var out []goldenCase
	_, served := servedFixtures(t)
	for _, f := range served {
		base := strings.TrimSuffix(strings.ReplaceAll(f.File, string(filepath.Separator), "-"), ".yaml")
		kind := strings.ToLower(f.Obj.GetKind())
		out = append(out, goldenCase{
			Name:   f.File,
			Golden: filepath.Join("testdata", kind, base+".golden.yaml"),
			Obj:    f.Obj,
		})
	}
	ins, err := filepath.Glob(filepath.Join("testdata", "*", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		docs := decodeStream(t, in)
		for i, u := range docs {
			golden := strings.TrimSuffix(in, ".in.yaml")
			if i > 0 {
				golden += fmt.Sprintf("-%d", i)
			}
			out = append(out, goldenCase{Name: in + fmt.Sprintf("#%d", i), Golden: golden + ".golden.yaml", Obj: u, Inputs: docs})
		}
	}
	for i := range out {
		u := out[i].Obj.DeepCopy()
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		sum := sha256.Sum256([]byte(u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()))
		h := fmt.Sprintf("%x", sum[:16])
		u.SetUID(types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]))
		out[i].Obj = u
	}
	return out
}

func decodeStream(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
	return out
}

// render encodes a build result: one YAML document per object, or the Halt.
func renderBuild(objs []*unstructured.Unstructured, err error) ([]byte, error) {
	var b bytes.Buffer
	if err != nil {
		h, ok := kinds.AsHalt(err)
		if !ok {
			return nil, err
		}
		fmt.Fprintf(&b, "# halt: phase=%s reason=%s\n# %s\n", h.Phase, h.Reason, h.Message)
		return b.Bytes(), nil
	}
	if len(objs) == 0 {
		b.WriteString("# no objects\n")
	}
	for _, o := range objs {
		doc, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(doc)
	}
	return b.Bytes(), nil
}

// TestGolden builds every fixture CR and testdata input and compares the objects with the
// golden files; -update rewrites them.
func TestGolden(t *testing.T) {
	reg := kinds.Builtin()
	seen := map[string]bool{}
	for _, c := range goldenCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			if seen[c.Golden] {
				t.Fatalf("two cases write %s", c.Golden)
			}
			seen[c.Golden] = true
			got, err := renderBuild(reg.Build(c.Obj, c.ctx()))
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(c.Golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(c.Golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(c.Golden)
			if err != nil {
				t.Fatalf("read golden (run with -update): %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s (-golden +built):\n%s", c.Golden, diff)
			}
		})
	}
	if *update {
		return
	}
	// No stale goldens: every golden file belongs to a case.
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.golden.yaml"))
	var stale []string
	for _, f := range files {
		if !seen[f] {
			stale = append(stale, f)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("golden files without a case: %v", stale)
	}
}

// TestGoldenCoversEveryKind: every Registry entry has at least one golden case.
func TestGoldenCoversEveryKind(t *testing.T) {
	reg := kinds.Builtin()
	covered := map[kinds.Ref]bool{}
	for _, c := range goldenCases(t) {
		e, ok := reg.Lookup(c.Obj.GroupVersionKind(), kinds.DefaultAPIGroup)
		if !ok {
			t.Errorf("%s: no entry serves %s", c.Name, c.Obj.GroupVersionKind())
			continue
		}
		covered[kinds.Ref{Placement: e.Placement, Kind: e.Kind}] = true
	}
	var missing []string
	for ref := range reg {
		if !covered[ref] {
			missing = append(missing, ref.String())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("Kinds without a golden case: %v", missing)
	}
}
