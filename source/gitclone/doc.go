// Package gitclone reads the universe repository from any git server with
// go-git, as a source.Source: HTTPS with basic or token authentication, or
// SSH with a private key checked against known_hosts.
//
// Head is one ls-remote; it transfers no objects. Snapshot of a revision
// already read does nothing; otherwise the first call makes a shallow
// (depth 1), single-branch, bare clone in the cache directory and later calls
// fetch into it, so an unchanged head costs one ls-remote and nothing else.
// Credentials travel only in the transport's headers (HTTP basic) or the
// SSH handshake, never in URLs, which are refused when they embed a password.
package gitclone
