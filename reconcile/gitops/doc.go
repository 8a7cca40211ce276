// Package gitops is the git sweep: it reads the universe repository and
// server-side applies the objects it declares, never deleting any. Its pure
// decisions are Scope.Plan (what to apply, what to skip and why), Stale with
// Fingerprint (the idle check) and Tally; Sweeper is the thin shell that
// reads git, applies, reports and serves GET /gitops, and Webhook with
// Trigger turn a signed POST /reconcile into at most one extra sweep.
//
// # A sweep
//
//	Head ─► unchanged, and no applied object moved? ─► done: no apiserver request
//	     ─► Snapshot ─► Parse ─► Plan ─► apply the stale objects ─► Report
//
// Objects are applied under the field manager universe-operator-gitops with
// a forced server-side apply, kind-agnostic through a discovery RESTMapper:
// CRDs and Namespaces first, then, once changed CRDs are established and the
// mapper reset, everything else. One object failing never stops the others;
// a 403 is reported apart (Denied) with the RBAC grant that is missing.
//
// # Free when idle
//
// The sweep keeps a metadata-only watch on every resource (per owned
// namespace) it applied to, and records, per object, the digest of what it
// applied and the fingerprint of what the apiserver returned. An object is
// applied again only when git changed it, its last apply failed, or the
// watch shows it moved (Stale): so a sweep with an unchanged head and no
// drift sends the apiserver nothing, ten changed files cost ten requests,
// and a cold sync costs one request per object, classified from the
// response (reconcile.Applier.ApplyKnown). The fingerprint ignores status
// writes, so the Kind controllers reporting status cost the sweep nothing.
// A watch event that moves an applied object fires the Trigger, so an
// out-of-band edit or delete is corrected at once, naming the field managers
// that had changed it. Kinds the sweep may not watch are applied every sweep
// through the get-and-dry-run path of reconcile.Applier.Apply.
//
// # Report
//
// Every sweep logs one line per object (Created object / Reverted drift,
// with driftedBy / In sync at V(1) / Apply denied, with the grant / Apply
// failed), one per skip, and a summary (files, refetched, created, updated,
// inSync, errors, denied, skipped, outOfScope); counts it in Prometheus
// (universe_operator_gitops_*) on controller-runtime's registry; and keeps
// it for GET /gitops. Nothing logged or reported carries a token or the
// content of an object.
//
// # Never prune
//
// A Plan has applies and skips and nothing else: there is no delete anywhere
// in its type, so removing a file from git deletes nothing in the cluster.
// With Options.State the sweep keeps an inventory of what it applied (a
// bounded ConfigMap, NextInventory) and reports what git no longer declares
// as Orphaned, with the revision that removed it; deleting is the CLI's
// (operator orphans --delete), never the sweep's.
//
// # Order and suspend
//
// A directory holding PathFile is a path; OrderPlan orders paths by
// dependsOn and each path's objects by Argo CD's sync wave, and Hold holds a
// step whose needs are not Ready. Paths listed in the suspend ConfigMap are
// not applied and reported Suspended, with their drift.
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
//	X-Hub-Signature-256: sha256=<hex>   GitHub
//	X-Gitea-Signature: <hex>            Gitea
//	X-Forgejo-Signature: <hex>          Forgejo
//	X-Signature-256: sha256=<hex>       anything else (generic HMAC)
//	X-Gitlab-Token: <secret>            GitLab (the secret itself, compared in constant time)
//
// Unsigned or badly signed requests get 401, bodies over the cap 413, and
// accepted ones 202 at once: the sweep runs later, on the leader's loop. A
// burst of hooks coalesces, through Trigger, into at most one extra sweep.
//
// A pull request event (GitHub's, Gitea's or Forgejo's pull_request, GitLab's
// Merge Request Hook), verified the same way, never fires a sweep: it goes to
// Webhook.PullRequests, the preview's queue (ParsePullRequest reads it), or is
// acknowledged and ignored when there is none.
//
// # Cadence
//
// Run calls the sweep at start, after every resync interval
// (Options.Interval: 45 s by default, never under 10 s) and when the Trigger
// fires; sweeps never overlap.
package gitops
