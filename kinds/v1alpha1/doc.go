// Package v1alpha1 holds the legacy Go-operator Kinds that production clusters still store:
// HanzoService, HanzoDatastore and HanzoDNS at <universe>/v1alpha1.
//
// They are served as they were, except that the schemas carry no defaults: the apiserver
// stores what was sent and ToService, ToDatastore and ToDNS apply the old kubebuilder defaults
// while converting to the v1 specs the builders read. There is no conversion webhook. The
// legacy CRDs carry no short names, because hsvc, hds and hdns now name the v1 Kinds in the
// same group.
//
// +kubebuilder:object:generate=true
// +groupName=universe.placeholder
package v1alpha1
