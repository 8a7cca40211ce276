package install

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/kinds"
)

// LuxNetworkCRDObjects returns the luxfi operator's lux.network/v1alpha1 CRDs (and
// secrets.lux.network KMSSecret) as `operator crds --lux-network-kinds` prints them, as
// objects to apply: install applies them with InstallOptions.LuxNetworkKinds. The
// ClusterRole covers their Kinds whether or not they are installed (see ClusterRole).
func LuxNetworkCRDObjects() ([]*unstructured.Unstructured, error) {
	crds, err := kinds.LuxNetworkCRDs()
	if err != nil {
		return nil, fmt.Errorf("lux.network CRDs: %w", err)
	}
	return crdObjects(crds)
}

// bundleCRDs are the CRDs Install applies for o, typed: the bundle of o.APIGroup, and the
// lux.network CRDs with o.LuxNetworkKinds. crdObject converts one for applying.
func bundleCRDs(o InstallOptions) ([]apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := kinds.CRDs(o.APIGroup)
	if err != nil {
		return nil, fmt.Errorf("crd bundle of %s: %w", o.APIGroup, err)
	}
	if !o.LuxNetworkKinds {
		return crds, nil
	}
	lux, err := kinds.LuxNetworkCRDs()
	if err != nil {
		return nil, fmt.Errorf("lux.network CRDs: %w", err)
	}
	return append(crds, lux...), nil
}

// crdObjects converts CRDs for applying, each annotated with its BundleDigestAnnotation.
func crdObjects(crds []apiextensionsv1.CustomResourceDefinition) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(crds))
	for i := range crds {
		u, err := crdObject(&crds[i])
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// crdObject converts one CRD for applying, annotated with its BundleDigestAnnotation: the
// digest of the converted object's JSON.
func crdObject(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	crd.SetGroupVersionKind(apiextensionsGVK)
	u, err := toUnstructured(crd)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(u.Object) // map keys sorted: stable
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[BundleDigestAnnotation] = hex.EncodeToString(sum[:16])
	u.SetAnnotations(ann)
	return u, nil
}
