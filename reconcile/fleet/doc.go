// Package fleet reaches the clusters of one universe: the cluster registry (the Cluster
// Kind, kinds/fleet), credential references derived from a registration, never stored in it,
// and Reach, the one entry point, which returns a Bound: the clients of one registered
// cluster behind a namespace gate that refuses, never narrows.
//
// The rules (reference: the fleet design note):
//   - a Cluster has no kubeconfig or credential field; its credential lives at
//     orgs/<org>/k8s/clusters/<name>/kubeconfig in a CredentialStore, derived from the
//     record, so an edited record cannot name another org's credential;
//   - the org comes from a Caller, made only from a validated source (the tenancy rule's
//     admission of a CR, or the git path's orgs/<org>/ scope), never from an argument of
//     Reach; an org with '/', '..' or over kinds.MaxOrgLength is refused (kinds.ValidOrg);
//   - a name is looked up in the caller's org only: any other answer is ErrNoCluster;
//   - the kubeconfig must be self-contained (no file paths, no exec or auth-provider
//     plugins) and point at the registration's endpoint; non-routable and link-local
//     apiservers are refused at dial time unless AllowNonRoutable (tests only);
//   - Bound.One, Bound.Scope and Bound.WholeCluster gate every namespaced operation: a
//     namespace outside the registration's bound is refused with an error naming the bound.
package fleet
