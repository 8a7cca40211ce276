package source

import (
	"context"
	"path"
	"strings"
)

// Snapshot is the set of manifest files below the configured path at one
// revision. It is immutable: a Source may share Files and their Data with its
// cache and with later snapshots, so callers must never modify them.
type Snapshot struct {
	// Revision is the commit SHA the files were read at.
	Revision string
	// Files holds the manifest candidates (see IsManifest), sorted by Path.
	Files []File
	// Refetched counts the blobs that were not served from the Source's
	// cache for this snapshot; zero when nothing changed since the previous
	// one.
	Refetched int
}

// File is one file of a Snapshot.
type File struct {
	// Path is relative to the repository root, slash separated.
	Path string
	// BlobSHA is the git blob id of Data.
	BlobSHA string
	// Data is the file content; read only. Nil when Refused is set.
	Data []byte
	// Size is the size the host declared; 0 means len(Data).
	Size int64
	// Refused, when set, says why the Source did not read the file (a
	// symbolic link, a file over the size limit); Parse reports it by name.
	Refused error
}

// A Source reads the universe repository. Implementations serialise their
// calls, so one Source may be shared, and log through the logr.Logger in the
// context (logr.FromContextOrDiscard).
type Source interface {
	// Head returns the commit SHA the configured branch points to now. It is
	// cheap: a conditional request or an ls-remote.
	Head(ctx context.Context) (rev string, err error)
	// Snapshot returns the files at rev, a SHA returned by Head.
	Snapshot(ctx context.Context, rev string) (*Snapshot, error)
}

// A RefResolver reads revisions other than the configured branch's head, for previews.
type RefResolver interface {
	// Resolve returns the commit SHA ref names now and makes it readable: after it
	// returns, Snapshot(ctx, sha) succeeds. ref is a 40-hex commit SHA, a branch name,
	// or a full ref such as refs/pull/7/head (GitHub, Gitea) or refs/merge-requests/7/head (GitLab).
	Resolve(ctx context.Context, ref string) (sha string, err error)
}

// IsManifest reports whether the file at p may hold manifests: its name ends
// in .yaml or .yml. Sources include only such files in a Snapshot.
func IsManifest(p string) bool {
	ext := strings.ToLower(path.Ext(p))
	return ext == ".yaml" || ext == ".yml"
}

// isKustomization reports whether the file at p is a kustomize entry point,
// which the sweep never applies.
func isKustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// Under reports whether the slash separated path p lies below dir. An empty
// dir (or ".") is the repository root and holds every path.
func Under(p, dir string) bool {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir == "" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// CleanPath normalises a configured repository path: slash separated, no
// leading or trailing slash, "" for the root.
func CleanPath(p string) string {
	return strings.Trim(path.Clean("/"+p), "/")
}
