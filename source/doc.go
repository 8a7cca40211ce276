// Package source reads the universe repository: it resolves a branch head cheaply and
// returns an immutable snapshot of the files at that revision, from the GitHub REST API or
// from a go-git clone of any git server. A Source never talks to the cluster.
package source
