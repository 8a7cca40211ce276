package k8s

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// ClosedKinds is resources.*'s closed set: ops.Kinds and, at apiGroup, the namespaced
// universe Kinds of kinds/v1 (KMSSecret at kms.<apiGroup>, the chain family at its own
// group) at their storage version. apiGroup "" leaves the universe Kinds out.
func ClosedKinds(apiGroup string) ([]ops.Kind, error) {
	out := slices.Clone(ops.Kinds)
	if apiGroup == "" {
		return out, nil
	}
	crds, err := kinds.CRDs(apiGroup)
	if err != nil {
		return nil, fmt.Errorf("k8s plane: the universe Kinds at %s: %w", apiGroup, err)
	}
	names := map[string]bool{}
	for _, k := range v1.Kinds() {
		names[k.Name] = true
	}
	for _, crd := range crds {
		if !names[crd.Spec.Names.Kind] || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				out = append(out, ops.Kind{APIVersion: crd.Spec.Group + "/" + v.Name, Kind: crd.Spec.Names.Kind, Resource: crd.Spec.Names.Plural})
			}
		}
	}
	return out, nil
}

// kindOf resolves a request's apiVersion and kind in the closed set, never through
// discovery.
func (p *Plane) kindOf(apiVersion, kind string) (schema.GroupVersionResource, error) {
	for _, k := range p.kinds {
		if k.APIVersion == apiVersion && k.Kind == kind {
			gv, err := schema.ParseGroupVersion(k.APIVersion)
			if err != nil {
				return schema.GroupVersionResource{}, err
			}
			return gv.WithResource(k.Resource), nil
		}
	}
	return schema.GroupVersionResource{}, errorf(CodeForbidden, "%s %s is not in the closed set of kinds resources.* serve (see the plane's README); Secret never is: write a KMSSecret", apiVersion, kind)
}
