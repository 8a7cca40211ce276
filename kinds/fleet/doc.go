// Package fleet holds Cluster, the registry of the clusters one universe reaches: a
// cluster-scoped Kind at <universe>/v1, declared in git like every other CR.
//
// A Cluster has no kubeconfig or credential field, on purpose: the credential's location is
// derived from the record (orgs/<org>/k8s/clusters/<name>/kubeconfig, see reconcile/fleet), so
// no edit of a record can make it name another org's credential.
//
// +kubebuilder:object:generate=true
// +groupName=universe.placeholder
// +versionName=v1
package fleet
