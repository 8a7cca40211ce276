package fleet

import (
	"context"

	"github.com/openuniverse/operator/source"
)

// View is the part of a universe repository that one target owns: the files TargetOf sends
// to it. One repository feeds the home cluster's sweep (View{Target: Target{}}) and one sweep
// per registered cluster, each planned and applied on its own, so one cluster's failure
// never blocks the others. A file whose path names a cluster with an invalid org or name
// goes to no cluster: the home view keeps it as a refused file, so the sweep reports it by
// name instead of dropping it.
type View struct {
	Source source.Source
	Target Target
}

var _ source.Source = View{}

// Head is the repository's head.
func (v View) Head(ctx context.Context) (string, error) { return v.Source.Head(ctx) }

// Snapshot is the repository's snapshot at rev with only the view's files.
func (v View) Snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	snap, err := v.Source.Snapshot(ctx, rev)
	if err != nil {
		return nil, err
	}
	return v.filter(snap), nil
}

func (v View) filter(snap *source.Snapshot) *source.Snapshot {
	out := &source.Snapshot{Revision: snap.Revision, Refetched: snap.Refetched}
	for _, f := range snap.Files {
		t, err := TargetOf(f.Path)
		switch {
		case err != nil && v.Target.Home():
			out.Files = append(out.Files, source.File{Path: f.Path, BlobSHA: f.BlobSHA, Size: f.Size, Refused: err})
		case err != nil:
		case t == v.Target:
			out.Files = append(out.Files, f)
		}
	}
	return out
}

// Targets returns the registered-cluster targets the files of snap name, in file order,
// each once: the sweeps a revision needs beside the home one.
func Targets(snap *source.Snapshot) []Target {
	seen := map[Target]bool{}
	var out []Target
	for _, f := range snap.Files {
		if t, err := TargetOf(f.Path); err == nil && !t.Home() && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
