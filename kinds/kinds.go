package kinds

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/kinds/gitsync"
	"github.com/openuniverse/operator/kinds/hip"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

// DefaultAPIGroup is the universe group when none is chosen.
const DefaultAPIGroup = "hanzo.ai"

// Object is a typed custom resource; it has the method set of controller-runtime's
// client.Object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Family decides the API group of a Kind; see v1.Family.
type Family = v1.Family

// The families.
const (
	FamilyUniverse = v1.FamilyUniverse
	FamilyKMS      = v1.FamilyKMS
	FamilyChain    = v1.FamilyChain
)

// ValidateGroup reports whether group can be a universe API group: a DNS subdomain with at
// least one dot, other than the chain group.
func ValidateGroup(group string) error {
	if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
		return fmt.Errorf("invalid API group %q: %s", group, strings.Join(errs, "; "))
	}
	if !strings.Contains(group, ".") {
		return fmt.Errorf("invalid API group %q: must contain a dot", group)
	}
	if group == v1.ChainGroup || strings.HasSuffix(group, "."+v1.ChainGroup) {
		return fmt.Errorf("invalid API group %q: %s is the chain family's group", group, v1.ChainGroup)
	}
	return nil
}

// GroupVersions returns every group version served in universe group: <group>/v1,
// kms.<group>/v1, bootno.de/v1 and <group>/v1alpha1.
func GroupVersions(group string) []schema.GroupVersion {
	return append(v1.GroupVersions(group), v1alpha1.GroupVersion(group))
}

// AddToScheme registers every Kind served in universe group: the 34 v1 Kinds under their
// families' groups, the legacy v1alpha1 Kinds and the HIP-era placements at <group>/v1.
func AddToScheme(s *runtime.Scheme, group string) error {
	if err := ValidateGroup(group); err != nil {
		return err
	}
	for _, add := range []func(*runtime.Scheme, string) error{v1.AddToScheme, v1alpha1.AddToScheme, hip.AddToScheme, fleet.AddToScheme, gitsync.AddToScheme} {
		if err := add(s, group); err != nil {
			return err
		}
	}
	// The luxfi operator's Kinds are registered in every universe: their groups are fixed.
	return luxnetwork.AddToScheme(s)
}
