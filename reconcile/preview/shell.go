package preview

import (
	"context"
	"path"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

// Previewer is the shell: it parses and builds the changed files of two snapshots and
// dry-runs the head's against the live cluster, then calls Compute.
type Previewer struct {
	// Differ dry-runs, with the real builders (render.Renderer), under the sweep's field
	// managers: the path `operator diff` takes.
	Differ *render.Differ
	// Scope is the sweep's (gitops.Options.Scope); Mapper answers cluster- or namespace-scope
	// as the sweep asks it (the apiserver's RESTMapping, never the manifest).
	Scope  gitops.Scope
	Mapper meta.RESTMapper
	// Limits are the sweep's parse limits (zero: the defaults).
	Limits source.Limits
}

// Preview previews merging head onto base: only the files that differ between them (and
// the whole of a kustomization directory one of them lies in) are parsed and built.
func (p *Previewer) Preview(ctx context.Context, base, head *source.Snapshot) Preview {
	b, h := ChangedFiles(base, head)
	baseObjs, _ := source.ParseLimited(b, p.Limits)
	headObjs, headErrs := source.ParseLimited(h, p.Limits)
	scoping := map[schema.GroupVersionKind]gitops.Scoping{}
	plan := p.Scope.WithAPI(func(gvk schema.GroupVersionKind) gitops.Scoping {
		sc, ok := scoping[gvk]
		if !ok {
			sc = gitops.ScopeUnknown
			if m, err := p.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				sc = gitops.MappingScope(m)
			}
			scoping[gvk] = sc
		}
		return sc
	}).Plan(headObjs, headErrs)
	admitted := make([]source.Object, 0, len(plan.Applies))
	for _, a := range plan.Applies {
		admitted = append(admitted, source.Object{File: a.File, Doc: a.Doc, Obj: a.Object})
	}
	return Compute(Input{
		Base: base.Revision, Head: head.Revision, BaseObjects: baseObjs, HeadObjects: headObjs,
		DryRuns: p.Differ.Diff(ctx, admitted), Skips: plan.Skips,
	})
}

// ChangedFiles returns base and head narrowed to the files that differ (by blob SHA, or present
// in one only); a changed file below a kustomization directory brings the directory's
// files, as the build reads them together.
func ChangedFiles(base, head *source.Snapshot) (*source.Snapshot, *source.Snapshot) {
	blobs := map[string]string{}
	for _, f := range base.Files {
		blobs[f.Path] = f.BlobSHA
	}
	changed := map[string]bool{}
	for _, f := range head.Files {
		if sha, ok := blobs[f.Path]; !ok || sha != f.BlobSHA || f.BlobSHA == "" {
			changed[f.Path] = true
		}
		delete(blobs, f.Path)
	}
	for p := range blobs {
		changed[p] = true
	}
	var dirs []string
	for _, s := range []*source.Snapshot{base, head} {
		for _, f := range s.Files {
			if !kustomization(f.Path) {
				continue
			}
			dir := path.Dir(f.Path)
			if dir == "." {
				dir = ""
			}
			for c := range changed {
				if source.Under(c, dir) {
					dirs = append(dirs, dir)
					break
				}
			}
		}
	}
	keep := func(s *source.Snapshot) *source.Snapshot {
		out := &source.Snapshot{Revision: s.Revision}
		for _, f := range s.Files {
			in := changed[f.Path]
			for _, d := range dirs {
				in = in || source.Under(f.Path, d)
			}
			if in {
				out.Files = append(out.Files, f)
			}
		}
		return out
	}
	return keep(base), keep(head)
}

func kustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}
