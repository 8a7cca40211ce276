package kinds_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestNoPublishedFieldLost walks the spec schemas of the CRDs clusters already run (the saved
// v0.6.21 bundle at hanzo.ai and the Go v1alpha1 CRDs we serve) and requires every field path
// to exist in our CRD for the same placement, so no stored CR is pruned on upgrade. Chain Kinds
// of the old bundle must also fit their canonical bootno.de CRD.
func TestNoPublishedFieldLost(t *testing.T) {
	ours := map[string]*apiextensionsv1.JSONSchemaProps{}
	crds, err := kinds.CRDs("hanzo.ai")
	if err != nil {
		t.Fatal(err)
	}
	for i := range crds {
		v := crds[i].Spec.Versions[0]
		s := v.Schema.OpenAPIV3Schema.Properties["spec"]
		ours[crds[i].Spec.Group+"/"+v.Name+"/"+crds[i].Spec.Names.Kind] = &s
	}
	old := readOldCRDs(t, "bundle-v0.6.21-all-hanzo.ai.yaml", "v1alpha1__hanzo.ai_hanzoservices.yaml",
		"v1alpha1__hanzo.ai_hanzodatastores.yaml", "v1alpha1__hanzo.ai_hanzodnses.yaml")
	for _, crd := range old {
		kind := crd.Spec.Names.Kind
		v := crd.Spec.Versions[0]
		targets := []string{"hanzo.ai/" + v.Name + "/" + kind}
		if fam, ok := v1.FamilyOf(kind); ok && fam == v1.FamilyChain {
			targets = append(targets, "bootno.de/v1/"+kind)
		}
		var paths []string
		collect(v.Schema.OpenAPIV3Schema.Properties["spec"], "spec", &paths)
		for _, target := range targets {
			s, ok := ours[target]
			if !ok {
				t.Errorf("%s: no CRD serves %s", kind, target)
				continue
			}
			for _, p := range paths {
				if !covers(s, p[len("spec"):]) {
					t.Errorf("%s: %s of the published schema is not in ours; the apiserver would prune it", target, p)
				}
			}
		}
	}
}

func readOldCRDs(t *testing.T, files ...string) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(fixtures, "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if len(bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---")))) == 0 {
				continue
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal(doc, &crd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, crd)
		}
	}
	if len(out) != 31 {
		t.Fatalf("read %d published CRDs, want 28 + 3", len(out))
	}
	return out
}

// collect appends every property path below s, with [] for items and {} for map values.
func collect(s apiextensionsv1.JSONSchemaProps, prefix string, out *[]string) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := prefix + "." + n
		*out = append(*out, p)
		collect(s.Properties[n], p, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		collect(*s.Items.Schema, prefix+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		collect(*s.AdditionalProperties.Schema, prefix+"{}", out)
	}
}

// covers reports whether path (".a[].b{}.c") is kept by schema s: it exists, or a schema on
// the way preserves unknown fields.
func covers(s *apiextensionsv1.JSONSchemaProps, path string) bool {
	for path != "" {
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(s.Properties) == 0 {
			return true
		}
		switch {
		case path[0] == '[':
			if s.Items == nil || s.Items.Schema == nil {
				return false
			}
			s, path = s.Items.Schema, path[2:]
		case path[0] == '{':
			if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
				return s.XIntOrString || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields)
			}
			s, path = s.AdditionalProperties.Schema, path[2:]
		default:
			name := path[1:]
			if i := indexAny(name, ".[{"); i >= 0 {
				name, path = name[:i], name[i:]
			} else {
				path = ""
			}
			next, ok := s.Properties[name]
			if !ok {
				return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
			}
			s = &next
		}
	}
	return true
}

func indexAny(s, chars string) int {
	for i := range len(s) {
		if bytes.IndexByte([]byte(chars), s[i]) >= 0 {
			return i
		}
	}
	return -1
}
