package luxnetwork

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The groups and version the luxfi operator serves.
const (
	Group        = "lux.network"
	SecretsGroup = "secrets.lux.network" //nolint:gosec // G101: an API group name
	Version      = "v1alpha1"
)

// GroupVersion is lux.network/v1alpha1; SecretsGroupVersion is secrets.lux.network/v1alpha1.
var (
	GroupVersion        = schema.GroupVersion{Group: Group, Version: Version}
	SecretsGroupVersion = schema.GroupVersion{Group: SecretsGroup, Version: Version}
)

// AddToScheme registers the Kinds.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&LuxNetwork{}, &LuxNetworkList{},
		&LuxChain{}, &LuxChainList{},
		&LuxIndexer{}, &LuxIndexerList{},
		&LuxExplorer{}, &LuxExplorerList{},
		&LuxGateway{}, &LuxGatewayList{},
		&LuxMPC{}, &LuxMPCList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	s.AddKnownTypes(SecretsGroupVersion, &KMSSecret{}, &KMSSecretList{})
	metav1.AddToGroupVersion(s, SecretsGroupVersion)
	return nil
}
