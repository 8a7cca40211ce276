// Package source reads the universe repository: it resolves a branch head cheaply and
// returns an immutable snapshot of the files at that revision, from the GitHub REST API or
// from a go-git clone of any git server. A Source never talks to the cluster.
//
// The two implementations live in source/github and source/gitclone. Both
// keep only manifest candidates (.yaml and .yml files) below the configured
// path, and both count in Snapshot.Refetched what they had to transfer.
//
// Parse turns a Snapshot into objects, each recorded with the file and
// document it came from. It never drops a file silently: kustomization files,
// typeless documents and malformed files come back as FileErrors.
//
// Tokens are read from a file (TokenFile), kept in a Token that prints as
// "[REDACTED]" however it is formatted, reloaded on change, re-read when the
// host refuses them, and sent only in request headers.
package source
