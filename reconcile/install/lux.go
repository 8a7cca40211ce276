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

// installCRDs are the CRDs Install applies for o: the bundle of o.APIGroup, and the
// lux.network CRDs with o.LuxNetworkKinds.
func installCRDs(o InstallOptions) ([]*unstructured.Unstructured, error) {
	crds, err := CRDObjects(o.APIGroup)
	if err != nil || !o.LuxNetworkKinds {
		return crds, err
	}
	lux, err := LuxNetworkCRDObjects()
	if err != nil {
		return nil, err
	}
	return append(crds, lux...), nil
}

// crdObjects converts CRDs for applying, each annotated with its BundleDigestAnnotation.
func crdObjects(crds []apiextensionsv1.CustomResourceDefinition) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(crds))
	for i := range crds {
		crds[i].SetGroupVersionKind(apiextensionsGVK)
		u, err := toUnstructured(&crds[i])
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
		out = append(out, u)
	}
	return out, nil
}
