package hip

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion returns the group version of the HIP-era placements in universe.
func GroupVersion(universe string) schema.GroupVersion {
	return schema.GroupVersion{Group: universe, Version: "v1"}
}

// AddToScheme registers the pre-bootno.de placements at <universe>/v1.
func AddToScheme(s *runtime.Scheme, universe string) error {
	if universe == "" {
		return fmt.Errorf("register HIP-era kinds: empty API group")
	}
	gv := GroupVersion(universe)
	s.AddKnownTypes(gv,
		&MPC{}, &MPCList{},
		&Network{}, &NetworkList{},
		&Chain{}, &ChainList{},
		&Validator{}, &ValidatorList{},
		&Subnet{}, &SubnetList{},
		&Indexer{}, &IndexerList{},
		&Explorer{}, &ExplorerList{},
		&LuxRuntime{}, &LuxRuntimeList{},
		&NodeFleet{}, &NodeFleetList{},
	)
	metav1.AddToGroupVersion(s, gv)
	return nil
}
