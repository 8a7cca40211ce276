package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Version is the API version of the legacy Kinds.
const Version = "v1alpha1"

// GroupVersion returns the group version of the legacy Kinds in universe.
func GroupVersion(universe string) schema.GroupVersion {
	return schema.GroupVersion{Group: universe, Version: Version}
}

// AddToScheme registers HanzoService, HanzoDatastore and HanzoDNS at <universe>/v1alpha1.
func AddToScheme(s *runtime.Scheme, universe string) error {
	if universe == "" {
		return fmt.Errorf("register v1alpha1 kinds: empty API group")
	}
	gv := GroupVersion(universe)
	s.AddKnownTypes(gv,
		&HanzoService{}, &HanzoServiceList{},
		&HanzoDatastore{}, &HanzoDatastoreList{},
		&HanzoDNS{}, &HanzoDNSList{},
	)
	metav1.AddToGroupVersion(s, gv)
	return nil
}
