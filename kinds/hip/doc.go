// Package hip holds the HIP-era placements of the chain Kinds: MPC, Network, Chain,
// Validator, Subnet, Indexer and Explorer at <universe>/v1, where the HIPs (0413-0419) and the
// v0.6 bundles put them before the chain family moved to bootno.de, plus LuxRuntime and
// NodeFleet, which the v0.6 bundles also served there.
//
// They are served so that such CRs keep working, with schemas that accept the HIP shapes
// (Network.networkID as a string, Network.validators as an object, Chain.chain.vmID and
// subnetID), and converted in Go to the canonical v1 Kinds by ToMPC, ToNetwork, ToChain,
// ToIndexer, ToExplorer, ToLuxRuntime, ToNodeFleet and SubnetChains. Validator builds
// nothing (nor does the canonical one), so it needs no conversion. Subnet has no canonical
// Kind; its chains convert to Chain specs. The CRDs carry no short names, which belong to the
// canonical Kinds.
//
// +kubebuilder:object:generate=true
// +groupName=hip.universe.placeholder
// +versionName=v1
package hip
