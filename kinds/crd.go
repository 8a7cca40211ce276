package kinds

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The groups the CRDs are generated under; CRDs replaces them. The HIP-era placements need
// their own, or controller-gen would merge them with the canonical chain Kinds.
const (
	PlaceholderGroup    = "universe.placeholder"
	HIPPlaceholderGroup = "hip." + PlaceholderGroup
)

// generatedDirs maps each directory of generated CRDs to its placeholder group.
var generatedDirs = []struct{ dir, placeholder string }{
	{"crd/v1", PlaceholderGroup},
	{"crd/v1alpha1", PlaceholderGroup},
	{"crd/hip", HIPPlaceholderGroup},
	{"crd/fleet", PlaceholderGroup},
	{"crd/gitsync", PlaceholderGroup},
}

// The generated CRDs, one directory per Go package (see generate.go).
//
//go:embed crd/v1/*.yaml crd/v1alpha1/*.yaml crd/hip/*.yaml crd/fleet/*.yaml crd/gitsync/*.yaml
var generated embed.FS

// The luxfi operator's CRDs, unchanged (crd/luxnetwork/README.md).
//
//go:embed crd/luxnetwork/*.yaml
var luxNetworkCRDs embed.FS

// LuxNetworkCRDs returns the CRDs of the lux.network/v1alpha1 Kinds and the
// secrets.lux.network/v1alpha1 KMSSecret, sorted by name, exactly as the luxfi operator
// serves them. The caller owns the returned CRDs.
func LuxNetworkCRDs() ([]apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(luxNetworkCRDs, "crd/luxnetwork/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := luxNetworkCRDs.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path.Base(f), err)
		}
		out = append(out, crd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// LuxNetworkBundle is the luxfi CRD files as one YAML stream, each document starting with
// "---", byte for byte as shipped: what `operator crds --lux-network-kinds` appends.
func LuxNetworkBundle() ([]byte, error) {
	files, err := fs.Glob(luxNetworkCRDs, "crd/luxnetwork/*.yaml")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, f := range files {
		data, err := luxNetworkCRDs.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

// CRDs returns the CustomResourceDefinitions served in universe group, sorted by name. The
// universe Kinds, the legacy v1alpha1 Kinds and the HIP-era placements get <group>, the kms
// family kms.<group> and the chain family bootno.de; spec.group and metadata.name are the only
// fields that change with the group. The caller owns the returned CRDs: they are decoded
// anew on each call from JSON converted once (crdSources), so that the parsed schemas
// (~33 MiB as typed objects, 48 CRDs) do not stay live for the life of the process. Kept,
// `operator up` swept its objects with them live, and its install alone peaked at 74 MiB
// of anonymous memory, against 45 without them.
func CRDs(group string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	if err := ValidateGroup(group); err != nil {
		return nil, err
	}
	src, err := crdSources()
	if err != nil {
		return nil, err
	}
	out := make([]apiextensionsv1.CustomResourceDefinition, len(src))
	for i, c := range src {
		crd := &out[i]
		if err := json.Unmarshal(c.json, crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path.Base(c.file), err)
		}
		crd.Spec.Group = c.family.Group(group)
		crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// crdSource is one embedded generated CRD as JSON, checked once (strictly, its group the
// placeholder), with the family that decides its group.
type crdSource struct {
	file   string
	json   []byte
	family Family
}

// crdSources converts the embedded generated CRDs from YAML to JSON once and keeps only
// the JSON (~3 MB): the conversion is two thirds of a parse, and the parsed schemas (~33
// MiB as typed objects) are not kept (CRDs).
var crdSources = sync.OnceValues(func() ([]crdSource, error) {
	var out []crdSource
	for _, g := range generatedDirs {
		files, err := fs.Glob(generated, g.dir+"/*.yaml")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", g.dir, err)
		}
		for _, f := range files {
			crd, js, err := readCRD(f, g.placeholder)
			if err != nil {
				return nil, err
			}
			family := FamilyUniverse
			if g.dir == "crd/v1" {
				fam, ok := v1.FamilyOf(crd.Spec.Names.Kind)
				if !ok {
					return nil, fmt.Errorf("%s: kind %s has no family", f, crd.Spec.Names.Kind)
				}
				family = fam
			}
			out = append(out, crdSource{file: f, json: js, family: family})
		}
	}
	return out, nil
})

// readCRD reads one generated CRD strictly and returns it with its JSON.
func readCRD(name, placeholder string) (apiextensionsv1.CustomResourceDefinition, []byte, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	data, err := generated.ReadFile(name)
	if err != nil {
		return crd, nil, fmt.Errorf("read %s: %w", name, err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return crd, nil, fmt.Errorf("decode %s: %w", path.Base(name), err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, &crd)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...) // an unknown or duplicate field
	}
	if err != nil {
		return crd, nil, fmt.Errorf("decode %s: %w", path.Base(name), err)
	}
	if crd.Spec.Group != placeholder {
		return crd, nil, fmt.Errorf("%s: group %q, want the placeholder %q", name, crd.Spec.Group, placeholder)
	}
	return crd, js, nil
}

// Bundle returns the CRDs of universe group as one YAML stream, each document starting with
// "---". It is what `operator crds --api-group <group>` prints.
func Bundle(group string) ([]byte, error) {
	crds, err := CRDs(group)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i := range crds {
		doc, err := Manifest(&crds[i])
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(doc)
	}
	return b.Bytes(), nil
}

// Manifest renders one CRD as YAML without status or creationTimestamp.
func Manifest(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", crd.Name, err)
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", crd.Name, err)
	}
	return out, nil
}
