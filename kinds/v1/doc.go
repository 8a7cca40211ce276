// Package v1 holds the v1 custom resource types of the three Kind families: the universe
// family (served at the API group chosen at install time, hanzo.ai by default), the kms family
// (kms.<universe>) and the chain family (bootno.de for every universe).
//
// The field names follow crd-contract.json and wire-contract.md. Where real CRs and the
// contract spell a field differently, both spellings are declared and a method picks the one
// that is set (KMSSecretRef.Host, AutoscalingSpec.TargetCPU); kinds.Extensions lists every
// such field with its reason. Schemas carry validation but no defaults, so the apiserver stores
// exactly what a client sent; defaults belong to the builders.
//
// The CRDs are generated from these types under a placeholder group (see package kinds) and
// rewritten per family; AddToScheme registers the types under the real groups.
//
// +kubebuilder:object:generate=true
// +groupName=universe.placeholder
package v1
