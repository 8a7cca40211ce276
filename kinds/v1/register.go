package v1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Version is the API version of every Kind in this package.
const Version = "v1"

// ChainGroup is the API group of the chain family in every universe.
const ChainGroup = "bootno.de"

// Family decides the API group of a Kind.
type Family string

// The families.
const (
	// FamilyUniverse Kinds are served at the universe group chosen at install time.
	FamilyUniverse Family = "universe"
	// FamilyKMS Kinds are served at kms.<universe>.
	FamilyKMS Family = "kms"
	// FamilyChain Kinds are served at bootno.de whatever the universe.
	FamilyChain Family = "chain"
)

// Group returns the API group of family f in the universe group universe.
func (f Family) Group(universe string) string {
	switch f {
	case FamilyKMS:
		return "kms." + universe
	case FamilyChain:
		return ChainGroup
	default:
		return universe
	}
}

// Kind describes one Kind of this package: its name, family and constructors.
//
// +kubebuilder:object:generate=false
type Kind struct {
	Name    string
	Family  Family
	New     func() runtime.Object
	NewList func() runtime.Object
}

// Kinds returns the 34 Kinds of the contract, sorted by name.
func Kinds() []Kind {
	return []Kind{
		{"AgentDeployment", FamilyUniverse, func() runtime.Object { return &AgentDeployment{} }, func() runtime.Object { return &AgentDeploymentList{} }},
		{"App", FamilyUniverse, func() runtime.Object { return &App{} }, func() runtime.Object { return &AppList{} }},
		{"Base", FamilyUniverse, func() runtime.Object { return &Base{} }, func() runtime.Object { return &BaseList{} }},
		{"BitcoinRuntime", FamilyChain, func() runtime.Object { return &BitcoinRuntime{} }, func() runtime.Object { return &BitcoinRuntimeList{} }},
		{"Chain", FamilyChain, func() runtime.Object { return &Chain{} }, func() runtime.Object { return &ChainList{} }},
		{"DNS", FamilyUniverse, func() runtime.Object { return &DNS{} }, func() runtime.Object { return &DNSList{} }},
		{"Datastore", FamilyUniverse, func() runtime.Object { return &Datastore{} }, func() runtime.Object { return &DatastoreList{} }},
		{"DocDB", FamilyUniverse, func() runtime.Object { return &DocDB{} }, func() runtime.Object { return &DocDBList{} }},
		{"EthereumRuntime", FamilyChain, func() runtime.Object { return &EthereumRuntime{} }, func() runtime.Object { return &EthereumRuntimeList{} }},
		{"Explorer", FamilyChain, func() runtime.Object { return &Explorer{} }, func() runtime.Object { return &ExplorerList{} }},
		{"Function", FamilyUniverse, func() runtime.Object { return &Function{} }, func() runtime.Object { return &FunctionList{} }},
		{"Gateway", FamilyUniverse, func() runtime.Object { return &Gateway{} }, func() runtime.Object { return &GatewayList{} }},
		{"IAM", FamilyUniverse, func() runtime.Object { return &IAM{} }, func() runtime.Object { return &IAMList{} }},
		{"ImageUpdate", FamilyUniverse, func() runtime.Object { return &ImageUpdate{} }, func() runtime.Object { return &ImageUpdateList{} }},
		{"Indexer", FamilyChain, func() runtime.Object { return &Indexer{} }, func() runtime.Object { return &IndexerList{} }},
		{"Ingress", FamilyUniverse, func() runtime.Object { return &Ingress{} }, func() runtime.Object { return &IngressList{} }},
		{"KMS", FamilyUniverse, func() runtime.Object { return &KMS{} }, func() runtime.Object { return &KMSList{} }},
		{"KMSSecret", FamilyKMS, func() runtime.Object { return &KMSSecret{} }, func() runtime.Object { return &KMSSecretList{} }},
		{"KV", FamilyUniverse, func() runtime.Object { return &KV{} }, func() runtime.Object { return &KVList{} }},
		{"LLM", FamilyUniverse, func() runtime.Object { return &LLM{} }, func() runtime.Object { return &LLMList{} }},
		{"LuxRuntime", FamilyChain, func() runtime.Object { return &LuxRuntime{} }, func() runtime.Object { return &LuxRuntimeList{} }},
		{"MPC", FamilyChain, func() runtime.Object { return &MPC{} }, func() runtime.Object { return &MPCList{} }},
		{"ManagedDatabase", FamilyUniverse, func() runtime.Object { return &ManagedDatabase{} }, func() runtime.Object { return &ManagedDatabaseList{} }},
		{"Network", FamilyChain, func() runtime.Object { return &Network{} }, func() runtime.Object { return &NetworkList{} }},
		{"NodeFleet", FamilyChain, func() runtime.Object { return &NodeFleet{} }, func() runtime.Object { return &NodeFleetList{} }},
		{"Observability", FamilyUniverse, func() runtime.Object { return &Observability{} }, func() runtime.Object { return &ObservabilityList{} }},
		{"Queue", FamilyUniverse, func() runtime.Object { return &Queue{} }, func() runtime.Object { return &QueueList{} }},
		{"S3", FamilyUniverse, func() runtime.Object { return &S3{} }, func() runtime.Object { return &S3List{} }},
		{"SPA", FamilyUniverse, func() runtime.Object { return &SPA{} }, func() runtime.Object { return &SPAList{} }},
		{"SQL", FamilyUniverse, func() runtime.Object { return &SQL{} }, func() runtime.Object { return &SQLList{} }},
		{"Service", FamilyUniverse, func() runtime.Object { return &Service{} }, func() runtime.Object { return &ServiceList{} }},
		{"SolanaRuntime", FamilyChain, func() runtime.Object { return &SolanaRuntime{} }, func() runtime.Object { return &SolanaRuntimeList{} }},
		{"Static", FamilyUniverse, func() runtime.Object { return &Static{} }, func() runtime.Object { return &StaticList{} }},
		{"Validator", FamilyChain, func() runtime.Object { return &Validator{} }, func() runtime.Object { return &ValidatorList{} }},
	}
}

// FamilyOf returns the family of kind, and false when kind is not a Kind of this package.
func FamilyOf(kind string) (Family, bool) {
	for _, k := range Kinds() {
		if k.Name == kind {
			return k.Family, true
		}
	}
	return "", false
}

// GroupVersions returns the group versions this package serves in universe: the universe,
// kms and chain groups at v1.
func GroupVersions(universe string) []schema.GroupVersion {
	return []schema.GroupVersion{
		{Group: FamilyUniverse.Group(universe), Version: Version},
		{Group: FamilyKMS.Group(universe), Version: Version},
		{Group: FamilyChain.Group(universe), Version: Version},
	}
}

// AddToScheme registers every Kind of this package under its family's group in universe.
func AddToScheme(s *runtime.Scheme, universe string) error {
	if universe == "" {
		return fmt.Errorf("register v1 kinds: empty API group")
	}
	for _, gv := range GroupVersions(universe) {
		metav1.AddToGroupVersion(s, gv)
	}
	for _, k := range Kinds() {
		gv := schema.GroupVersion{Group: k.Family.Group(universe), Version: Version}
		s.AddKnownTypeWithName(gv.WithKind(k.Name), k.New())
		s.AddKnownTypeWithName(gv.WithKind(k.Name+"List"), k.NewList())
	}
	return nil
}
