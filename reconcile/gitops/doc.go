// Package gitops holds the pure decisions of the git sweep and its HTTP
// trigger: Scope.Plan turns parsed manifests into what to apply and what to
// skip, and Webhook with Trigger turn a signed POST /reconcile into at most
// one extra sweep.
//
// # Never prune
//
// A Plan has applies and skips and nothing else: there is no delete anywhere
// in its type, so removing a file from git deletes nothing in the cluster.
//
// # Scope
//
// The sweep owns a set of namespaces (by default the operator's own; "*"
// means every namespace) and, optionally, a vetted subset of object names
// ("name" matches in every owned namespace, "ns/name" pins the pair). The
// namespace gate runs first, so the subset can only narrow. An object
// without metadata.namespace is refused: the sweep never guesses a
// namespace. Two cluster-scoped kinds are the exception, by design:
//
//   - a Namespace is admitted when the namespace it creates is owned, so an
//     owned namespace can be declared in git next to its content;
//   - a CustomResourceDefinition is admitted only when every namespace is
//     owned ("*"), because a CRD changes the API of all namespaces.
//
// Every other cluster-scoped kind (ClusterRole, StorageClass …) is refused.
// For the two admitted kinds only bare "name" entries of the vetted subset
// match, as they have no namespace to pin.
// Both admitted kinds are ordered first — CRDs, then Namespaces — so that the
// objects that depend on them apply in the same sweep. Every skip names the
// file, the object and the reason.
//
// # Webhook
//
// Webhook serves POST /reconcile. With a secret configured it accepts only
// bodies signed with HMAC-SHA256 under that secret, in one of these headers,
// checked in this order:
//
//	X-Hub-Signature-256: sha256=<hex>   GitHub (checked by go-github's ValidatePayload)
//	X-Gitea-Signature: <hex>            Gitea
//	X-Forgejo-Signature: <hex>          Forgejo
//	X-Signature-256: sha256=<hex>       anything else (generic HMAC)
//
// Unsigned or badly signed requests get 401, bodies over the cap 413, and
// accepted ones 202 at once: the sweep runs later, on the leader's loop. A
// burst of hooks coalesces, through Trigger, into at most one extra sweep.
//
// # Cadence
//
// Run calls the sweep at start, after every resync interval
// (Options.Interval: 45 s by default, never under 10 s) and when the Trigger
// fires; sweeps never overlap.
package gitops
