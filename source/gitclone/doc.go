// Package gitclone reads the universe repository from any git server with
// go-git, as a source.Source: HTTPS with basic or token authentication, or
// SSH with a private key checked against known_hosts.
//
// Resolve (source.RefResolver, for previews) reads another branch, a full ref such as
// refs/pull/7/head or a commit SHA: one ls-remote, then a depth-1 fetch of that ref alone
// into refs/preview/<ref without refs/>, so Snapshot then reads it from the clone. It never
// moves the followed branch's ref and prunes nothing; a SHA no ref advertises is fetched
// by SHA only where the server allows it.
//
// Head is one ls-remote; it transfers no objects. Snapshot of a revision
// already read does nothing; otherwise the first call makes a shallow
// (depth 1), single-branch, bare clone in the cache directory and later calls
// fetch into it, so an unchanged head costs one ls-remote and nothing else.
// Credentials travel only in the transport's headers (HTTP basic) or the
// SSH handshake, never in URLs, which are refused when they embed a password.
package gitclone
