package fleet

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is the Kind of the registry.
const Kind = "Cluster"

// GroupVersion returns the group version Cluster is served at in universe.
func GroupVersion(universe string) schema.GroupVersion {
	return schema.GroupVersion{Group: universe, Version: "v1"}
}

// AddToScheme registers Cluster at <universe>/v1.
func AddToScheme(s *runtime.Scheme, universe string) error {
	if universe == "" {
		return fmt.Errorf("register fleet kinds: empty API group")
	}
	gv := GroupVersion(universe)
	s.AddKnownTypes(gv, &Cluster{}, &ClusterList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
