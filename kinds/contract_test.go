package kinds_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/fleet"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// fixtures is the fixture tree copied into this package (see its README.md).
var fixtures = filepath.Join("testdata", "fixtures")

// universes are the groups whose bundles are committed.
var universes = []string{"hanzo.ai", "lux.cloud", "zoo.cloud", "osage.cloud"}

type contract struct {
	Kinds map[string]struct {
		Family     string   `json:"family"`
		Plural     string   `json:"plural"`
		Singular   string   `json:"singular"`
		ShortNames []string `json:"shortNames"`
		SpecFields []string `json:"specFields"`
	} `json:"kinds"`
}

// kindContract is what the contract fixes for one Kind, plus the extensions we declare.
type kindContract struct {
	Group      string
	Plural     string
	Singular   string
	ShortNames []string
	SpecFields []string
	Status     bool
}

func readContract(t *testing.T) contract {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, "crds", "crd-contract.json"))
	if err != nil {
		t.Fatalf("read contract: %v", err)
	}
	var c contract
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("decode contract: %v", err)
	}
	return c
}

func topLevelExtensions(kind string) []string {
	var out []string
	for _, e := range kinds.Extensions {
		if e.Placement == kinds.PlacementCanonical && !strings.ContainsAny(e.Field, ".[") && contains(e.Kinds, kind) {
			out = append(out, e.Field)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func specSchema(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.JSONSchemaProps {
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

func specFields(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for name := range specSchema(crd).Properties {
		out = append(out, name)
	}
	return sorted(out)
}

// canonical returns the CRDs of the v1 Kinds: those served at their family's group.
func canonical(t *testing.T, group string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatalf("CRDs(%s): %v", group, err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range crds {
		crd := &crds[i]
		fam, ok := v1.FamilyOf(crd.Spec.Names.Kind)
		if ok && crd.Spec.Group == fam.Group(group) && crd.Spec.Versions[0].Name == "v1" {
			out[crd.Spec.Names.Kind] = crd
		}
	}
	return out
}

func TestCRDsMatchContract(t *testing.T) {
	c := readContract(t)
	for _, group := range universes {
		t.Run(group, func(t *testing.T) {
			got := map[string]kindContract{}
			for kind, crd := range canonical(t, group) {
				got[kind] = kindContract{
					Group:      crd.Spec.Group,
					Plural:     crd.Spec.Names.Plural,
					Singular:   crd.Spec.Names.Singular,
					ShortNames: sorted(crd.Spec.Names.ShortNames),
					SpecFields: specFields(crd),
					Status:     crd.Spec.Versions[0].Subresources != nil && crd.Spec.Versions[0].Subresources.Status != nil,
				}
			}
			want := map[string]kindContract{}
			for kind, k := range c.Kinds {
				want[kind] = kindContract{
					Group:      v1.Family(k.Family).Group(group),
					Plural:     k.Plural,
					Singular:   k.Singular,
					ShortNames: sorted(k.ShortNames),
					SpecFields: sorted(append(append([]string(nil), k.SpecFields...), topLevelExtensions(kind)...)),
					Status:     true,
				}
			}
			if len(want) != 34 {
				t.Fatalf("contract has %d Kinds, want 34", len(want))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("CRDs(%s) differ from crd-contract.json plus kinds.Extensions (-want +got):\n%s", group, diff)
			}
		})
	}
}

func TestCRDsShape(t *testing.T) {
	for _, group := range universes {
		crds, err := kinds.CRDs(group)
		if err != nil {
			t.Fatalf("CRDs(%s): %v", group, err)
		}
		for i := range crds {
			crd := &crds[i]
			if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
				t.Errorf("%s: name %q, want %q", crd.Spec.Names.Kind, crd.Name, want)
			}
			if crd.Spec.Names.Kind == fleet.Kind {
				if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
					t.Errorf("%s: scope %s, want Cluster (the fleet's registry)", crd.Name, crd.Spec.Scope)
				}
			} else if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
				t.Errorf("%s: scope %s, want Namespaced", crd.Name, crd.Spec.Scope)
			}
			if !contains(crd.Spec.Names.Categories, "universe") {
				t.Errorf("%s: categories %v lack universe", crd.Name, crd.Spec.Names.Categories)
			}
			if len(crd.Spec.Versions) != 1 || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
				t.Errorf("%s: want one served storage version, got %+v", crd.Name, crd.Spec.Versions)
			}
			if crd.Spec.Versions[0].Subresources == nil || crd.Spec.Versions[0].Subresources.Status == nil {
				t.Errorf("%s: no status subresource", crd.Name)
			}
			if strings.Contains(crd.Spec.Group, "placeholder") {
				t.Errorf("%s: placeholder group left", crd.Name)
			}
		}
	}
}

// TestLegacyCRDs pins the CRDs served besides the contract: the legacy v1alpha1 Kinds and the
// HIP-era placements, all at the universe group and without short names (those belong to the
// canonical Kinds).
func TestLegacyCRDs(t *testing.T) {
	const group = "lux.cloud"
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	canon := canonical(t, group)
	var got []string
	for i := range crds {
		crd := &crds[i]
		if c := canon[crd.Spec.Names.Kind]; c != nil && c.Name == crd.Name {
			continue
		}
		got = append(got, crd.Spec.Versions[0].Name+" "+crd.Name)
		if len(crd.Spec.Names.ShortNames) > 0 {
			t.Errorf("%s: short names %v collide with the canonical Kinds", crd.Name, crd.Spec.Names.ShortNames)
		}
	}
	want := []string{
		"v1 chains.lux.cloud", "v1 clusters.lux.cloud", "v1 explorers.lux.cloud", "v1 gitsyncs.lux.cloud", "v1alpha1 hanzodatastores.lux.cloud",
		"v1alpha1 hanzodnses.lux.cloud", "v1alpha1 hanzoservices.lux.cloud", "v1 indexers.lux.cloud",
		"v1 luxruntimes.lux.cloud", "v1 mpcs.lux.cloud", "v1 networks.lux.cloud", "v1 nodefleets.lux.cloud",
		"v1 subnets.lux.cloud", "v1 validators.lux.cloud",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("legacy CRDs (-want +got):\n%s", diff)
	}
}

// TestExtensionsExist checks that every declared extension is a field of the schema it names,
// so the list cannot drift from the types.
func TestExtensionsExist(t *testing.T) {
	crds, err := kinds.CRDs(kinds.DefaultAPIGroup)
	if err != nil {
		t.Fatal(err)
	}
	canon := canonical(t, kinds.DefaultAPIGroup)
	find := func(p kinds.Placement, kind string) *apiextensionsv1.CustomResourceDefinition {
		if p == kinds.PlacementCanonical {
			return canon[kind]
		}
		for i := range crds {
			crd := &crds[i]
			if crd.Spec.Names.Kind == kind && crd.Spec.Group == kinds.DefaultAPIGroup && (canon[kind] == nil || canon[kind].Name != crd.Name) &&
				(p == kinds.PlacementV1alpha1) == (crd.Spec.Versions[0].Name == "v1alpha1") {
				return crd
			}
		}
		return nil
	}
	for _, e := range kinds.Extensions {
		if e.Reason == "" {
			t.Errorf("extension %s has no reason", e.Field)
		}
		for _, kind := range e.Kinds {
			crd := find(e.Placement, kind)
			if crd == nil {
				t.Errorf("extension %s: no %s CRD for %s", e.Field, e.Placement, kind)
				continue
			}
			if !hasPath(specSchema(crd), e.Field) {
				t.Errorf("extension %s: not in the schema of %s", e.Field, crd.Name)
			}
		}
	}
}

func hasPath(s apiextensionsv1.JSONSchemaProps, path string) bool {
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		next, ok := s.Properties[name]
		if !ok {
			return false
		}
		s = next
		if list {
			if s.Items == nil || s.Items.Schema == nil {
				return false
			}
			s = *s.Items.Schema
		}
	}
	return true
}
