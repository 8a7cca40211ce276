package kinds_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestNoPublishedFieldLost walks the spec schemas of the CRDs clusters already run (the saved
// v0.6.21 bundle at hanzo.ai and the Go v1alpha1 CRDs we serve) next to ours for the same
// placement (and, for chain Kinds, the bootno.de one). Every field path must exist in ours with
// a compatible type, and ours may neither require a field the old schema did not nor close a
// set it left open, so no stored CR is pruned or rejected on upgrade. The only closed sets
// added are those Kubernetes itself enforces on the materialized objects.
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
		for _, target := range targets {
			s, ok := ours[target]
			if !ok {
				t.Errorf("%s: no CRD serves %s", kind, target)
				continue
			}
			for _, problem := range compare(v.Schema.OpenAPIV3Schema.Properties["spec"], *s, "spec") {
				t.Errorf("%s: %s", target, problem)
			}
		}
	}
}

// enforcedByKubernetes are fields whose closed set we add although the old schema was open:
// Kubernetes rejects any other value on the Deployment or Service they end up in.
var enforcedByKubernetes = map[string]bool{"pullPolicy": true, "protocol": true}

func schemaType(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
		return "any"
	}
	return s.Type
}

// compare returns what an object valid under old could lose or fail under ours.
func compare(old, ours apiextensionsv1.JSONSchemaProps, path string) []string {
	var out []string
	to, tn := schemaType(old), schemaType(ours)
	switch {
	case tn == "any":
		return nil
	case to == tn, tn == "int-or-string" && (to == "integer" || to == "string"):
	default:
		out = append(out, fmt.Sprintf("%s: type %s became %s", path, to, tn))
	}
	last := path[strings.LastIndexAny(path, ".]}")+1:]
	if len(ours.Enum) > 0 && !enforcedByKubernetes[last] && !enumWithin(old.Enum, ours.Enum) {
		out = append(out, fmt.Sprintf("%s: closed to %d values", path, len(ours.Enum)))
	}
	oldRequired := map[string]bool{}
	for _, r := range old.Required {
		oldRequired[r] = true
	}
	for _, r := range ours.Required {
		if !oldRequired[r] {
			out = append(out, fmt.Sprintf("%s.%s: newly required", path, r))
		}
	}
	names := make([]string, 0, len(old.Properties))
	for n := range old.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		next, ok := ours.Properties[n]
		if !ok {
			if ours.XPreserveUnknownFields == nil || !*ours.XPreserveUnknownFields {
				out = append(out, fmt.Sprintf("%s.%s: not in our schema; the apiserver would prune it", path, n))
			}
			continue
		}
		out = append(out, compare(old.Properties[n], next, path+"."+n)...)
	}
	if old.Items != nil && old.Items.Schema != nil {
		if ours.Items == nil || ours.Items.Schema == nil {
			out = append(out, path+"[]: items not in our schema")
		} else {
			out = append(out, compare(*old.Items.Schema, *ours.Items.Schema, path+"[]")...)
		}
	}
	if old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil && ours.AdditionalProperties != nil &&
		ours.AdditionalProperties.Schema != nil {
		out = append(out, compare(*old.AdditionalProperties.Schema, *ours.AdditionalProperties.Schema, path+"{}")...)
	}
	return out
}

// enumWithin reports whether old was closed and ours allows every value old allowed.
func enumWithin(old, ours []apiextensionsv1.JSON) bool {
	if len(old) == 0 {
		return false
	}
	allowed := map[string]bool{}
	for _, v := range ours {
		allowed[string(v.Raw)] = true
	}
	for _, v := range old {
		if string(v.Raw) != "null" && !allowed[string(v.Raw)] {
			return false
		}
	}
	return true
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
