// Package image is the ImageUpdate loop: it lists an image repository's tags
// (go-containerregistry), chooses the newest one its policy allows (Select: semver ranges,
// regex with an extract group, the -amd64 tag shapes and the arch guard, forward only, never a
// tag recorded as a failed upgrade), rewrites only that tag's bytes in the universe repo's
// file (Rewrite) and commits it through the source write path, which re-applies the edit
// when another writer moved the branch. After a push it starts the operator's git sweep at
// once, so tag → commit → applied → Ready is one loop.
//
// Policy, selection, the rewriter and the status summary are pure; Reconciler is the shell.
// The package imports no reconcile: cmd/operator injects the writers and the sweep trigger.
package image
