package gitsync

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is the Kind of the git path's status object.
const Kind = "GitSync"

// GroupVersion returns the group version GitSync is served at in universe.
func GroupVersion(universe string) schema.GroupVersion {
	return schema.GroupVersion{Group: universe, Version: "v1"}
}

// AddToScheme registers GitSync at <universe>/v1.
func AddToScheme(s *runtime.Scheme, universe string) error {
	if universe == "" {
		return fmt.Errorf("register gitsync kinds: empty API group")
	}
	gv := GroupVersion(universe)
	s.AddKnownTypes(gv, &GitSync{}, &GitSyncList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}
