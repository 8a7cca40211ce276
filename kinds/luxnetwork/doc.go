// Package luxnetwork holds the luxfi operator's Kinds as it serves them: lux.network/v1alpha1
// LuxNetwork, LuxChain, LuxIndexer, LuxExplorer, LuxGateway and LuxMPC, and
// secrets.lux.network/v1alpha1 KMSSecret. Their CRDs are the luxfi operator's own, unchanged
// (schema-light: spec and status preserve unknown fields, so the apiserver stores a CR exactly
// as written), embedded in package kinds.
//
// ToLuxRuntime converts a LuxNetwork into the canonical LuxRuntime that the one node builder
// materializes, plus the Takeover: what the luxfi operator's objects look like (selector,
// container name, Service shape, generated ConfigMaps), so that its networks are taken over
// in place. Defaults are the luxfi operator's serde defaults (src/crd.rs at 552ce16).
//
// +kubebuilder:object:generate=true
// +groupName=lux.network
package luxnetwork
