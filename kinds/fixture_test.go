package kinds_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
)

// fixtureCR is one CR of fixtures/crs.
type fixtureCR struct {
	File string // relative to fixtures/crs
	Obj  *unstructured.Unstructured
}

// readFixtureCRs returns every CR under fixtures/crs, in file order.
func readFixtureCRs(t *testing.T) []fixtureCR {
	t.Helper()
	root := filepath.Join(fixtures, "crs")
	var out []fixtureCR
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s doc %d: %v", rel, i, err)
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(js); err != nil {
				t.Fatalf("%s doc %d: %v", rel, i, err)
			}
			out = append(out, fixtureCR{File: rel, Obj: u})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read fixtures: %v", err)
	}
	if len(out) == 0 {
		t.Fatalf("no fixture CRs under %s", root)
	}
	return out
}

// notServed are the fixture Kinds this operator does not serve: Go v1alpha1 Kinds outside
// issue 3's legacy set.
var notServed = []string{
	"gateway.hanzo.ai/v1alpha1, Kind=GatewayConfig",
	"hanzo.ai/v1alpha1, Kind=BaseApp",
	"hanzo.ai/v1alpha1, Kind=HanzoGateway",
	"hanzo.ai/v1alpha1, Kind=HanzoIngress",
	"hanzo.ai/v1alpha1, Kind=HanzoMPC",
	"hanzo.ai/v1alpha1, Kind=HanzoNetwork",
	"hanzo.ai/v1alpha1, Kind=HanzoPlatform",
}

// servedFixtures splits the fixtures into those whose Kind is served at hanzo.ai and checks
// that the rest is exactly notServed.
func servedFixtures(t *testing.T) (*runtime.Scheme, []fixtureCR) {
	t.Helper()
	s := runtime.NewScheme()
	if err := kinds.AddToScheme(s, kinds.DefaultAPIGroup); err != nil {
		t.Fatal(err)
	}
	var served []fixtureCR
	skipped := map[string]bool{}
	for _, f := range readFixtureCRs(t) {
		gvk := f.Obj.GroupVersionKind()
		if s.Recognizes(gvk) {
			served = append(served, f)
			continue
		}
		skipped[gvk.String()] = true
	}
	var got []string
	for k := range skipped {
		got = append(got, k)
	}
	sort.Strings(got)
	if diff := cmp.Diff(notServed, got); diff != "" {
		t.Errorf("fixture Kinds not served (-want +got):\n%s", diff)
	}
	return s, served
}

// TestFixturesDecodeStrictly decodes every served fixture into its Go type, rejecting unknown
// fields: the Go types know every field the CRD schemas accept for real CRs.
func TestFixturesDecodeStrictly(t *testing.T) {
	s, served := servedFixtures(t)
	if len(served) < 30 {
		t.Fatalf("only %d served fixtures", len(served))
	}
	for _, f := range served {
		t.Run(f.File, func(t *testing.T) {
			obj, err := s.New(f.Obj.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			js, err := f.Obj.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			strict, err := sigsjson.UnmarshalStrict(js, obj)
			if err != nil {
				t.Fatalf("decode %s into %T: %v", f.Obj.GroupVersionKind().Kind, obj, err)
			}
			for _, e := range strict {
				t.Errorf("decode %s into %T: %v", f.Obj.GroupVersionKind().Kind, obj, e)
			}
		})
	}
}
