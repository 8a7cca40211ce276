package render

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/children"
	"github.com/openuniverse/operator/source"
)

// Change is what taking over a namespace would do to one child.
type Change string

// The changes, from none to the most.
const (
	ChangeInSync    Change = "in sync"         // already applied by this operator, equal
	ChangeOwnership Change = "field ownership" // equal, another operator's: only managedFields change
	ChangeLeftover  Change = "leftover"        // owned by the CR, not built, not ours: left in place
	ChangeCreate    Change = "create"          // not in the cluster
	ChangeConfigure Change = "configure"       // values change (diff)
	ChangeRecreate  Change = "recreate"        // immutable fields change and the CR asks to force
	ChangeDelete    Change = "delete"          // ours, no longer built: pruned
	ChangeFailed    Change = "failed"
)

// TakeoverResult is what taking over one child of one CR would do.
type TakeoverResult struct {
	CR     apply.ObjRef
	Object apply.ObjRef
	Change Change
	// Kept are the immutable fields whose live values the controller would keep.
	Kept []children.Kept
	// Writers are the managers that wrote the live object (field ownership, leftover).
	Writers []string
	// Diff is the unified diff of a configure (Secret values masked).
	Diff string
	// Halt is set, with no Object, on a CR that materializes nothing.
	Halt *kinds.Halt
	Err  error
}

// Changes reports whether the change writes more than managedFields.
func (r TakeoverResult) Changes() bool {
	switch r.Change {
	case ChangeCreate, ChangeConfigure, ChangeRecreate, ChangeDelete:
		return true
	}
	return false
}

// Takeover reports, for every CR of the Registry in namespace, what the Kind controller's
// first reconcile would do to its children: the same builder, the same immutable-field rule
// and the same prune rule, compared by server-side dry-run under ManagerKinds. It never
// writes. Kinds the cluster does not serve are skipped.
func (d *Differ) Takeover(ctx context.Context, namespace string) ([]TakeoverResult, error) {
	group := d.Renderer.APIGroup
	var out []TakeoverResult
	lists := map[schema.GroupVersionKind][]unstructured.Unstructured{}
	list := func(gvk schema.GroupVersionKind) ([]unstructured.Unstructured, bool, error) {
		if items, ok := lists[gvk]; ok {
			return items, true, nil
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := d.Client.List(ctx, l, client.InNamespace(namespace))
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("list %s in %s: %w", gvk.Kind, namespace, err)
		}
		lists[gvk] = l.Items
		return l.Items, true, nil
	}
	refs := make([]kinds.Ref, 0, len(d.Renderer.Registry))
	for ref := range d.Renderer.Registry {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, ref := range refs {
		e := d.Renderer.Registry[ref]
		if e.Placement.Record() {
			continue // the fleet's registry and the git path's status object build no children
		}
		crs, served, err := list(e.GroupVersionKind(group))
		if err != nil {
			return out, err
		}
		if !served {
			continue
		}
		for i := range crs {
			rs, err := d.takeoverCR(ctx, e, &crs[i], list)
			if err != nil {
				return out, err
			}
			out = append(out, rs...)
		}
	}
	return out, nil
}

//nolint:funlen // the takeover diff's phases in order, each a few lines
func (d *Differ) takeoverCR(ctx context.Context, e kinds.Entry, cr *unstructured.Unstructured,
	list func(schema.GroupVersionKind) ([]unstructured.Unstructured, bool, error)) ([]TakeoverResult, error) {
	crRef := apply.RefOf(cr)
	// its inputs as the controller reads them (a LuxNetwork's LuxChains)
	rd := d.Renderer.RenderFromCluster(ctx, d.Client, source.Object{Obj: cr, File: "cluster " + crRef.String()})
	switch {
	case rd.Err != nil:
		return []TakeoverResult{{CR: crRef, Object: crRef, Change: ChangeFailed, Err: rd.Err}}, nil
	case rd.Halt != nil:
		return []TakeoverResult{{CR: crRef, Halt: rd.Halt}}, nil // a Halt deletes nothing
	}
	force := children.Forced(cr.GetAnnotations())
	live := map[apply.ObjRef]*unstructured.Unstructured{}
	for _, child := range rd.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(child.GroupVersionKind())
		err := d.Client.Get(ctx, client.ObjectKeyFromObject(child), u)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", apply.RefOf(child), err)
		default:
			live[children.Unversioned(apply.RefOf(child))] = u
		}
	}
	desired, kept := rd.Objects, []children.Kept(nil)
	if !force {
		desired, kept = children.KeepImmutable(rd.Objects, live)
	}
	var out []TakeoverResult
	for _, child := range desired {
		ref := apply.RefOf(child)
		r := TakeoverResult{CR: crRef, Object: ref}
		for _, k := range kept {
			if k.Object == ref {
				r.Kept = append(r.Kept, k)
			}
		}
		l := live[children.Unversioned(ref)]
		if l == nil {
			r.Change = ChangeCreate
			out = append(out, r)
			continue
		}
		r.Writers = apply.Writers(l, kinds.ManagerKinds)
		rm := ssa.NewResourceManager(d.Client, nil, ssa.Owner{Field: kinds.ManagerKinds, Group: apply.FieldOwnerGroup})
		entry, liveObj, merged, err := rm.Diff(ctx, child.DeepCopy(), ssa.DefaultDiffOptions())
		switch {
		case err != nil && force && ssaerrors.IsImmutableError(err):
			r.Change = ChangeRecreate
		case err != nil:
			r.Change, r.Err = ChangeFailed, fmt.Errorf("dry-run %s: %w", ref, err)
		case entry.Action == ssa.ConfiguredAction:
			r.Change = ChangeConfigure
			r.Diff, err = unifiedDiff(ref, maskStringData(liveObj), maskStringData(merged))
			if err != nil {
				r.Change, r.Err = ChangeFailed, err
			}
		case entry.Action == ssa.CreatedAction:
			r.Change = ChangeCreate
		case apply.AppliedBy(l, kinds.ManagerKinds):
			r.Change = ChangeInSync
		default:
			r.Change = ChangeOwnership
		}
		out = append(out, r)
	}
	for _, gvk := range e.OwnedGVKs(d.Renderer.APIGroup) {
		items, served, err := list(gvk)
		if err != nil {
			return nil, err
		}
		if !served {
			continue
		}
		for _, ref := range children.Leftovers(desired, items, cr.GetUID(), kinds.ManagerKinds) {
			r := TakeoverResult{CR: crRef, Object: ref, Change: ChangeLeftover}
			for i := range items {
				if apply.RefOf(&items[i]) == ref {
					r.Writers = apply.Writers(&items[i], "")
				}
			}
			out = append(out, r)
		}
		for _, o := range children.Prunable(desired, items, cr.GetUID(), kinds.ManagerKinds) {
			out = append(out, TakeoverResult{CR: crRef, Object: apply.RefOf(o), Change: ChangeDelete})
		}
	}
	return out, nil
}

// TakeoverSummary counts takeover results by change.
type TakeoverSummary map[Change]int

// CountTakeover counts rs (CRs that materialize nothing are not counted).
func CountTakeover(rs []TakeoverResult) TakeoverSummary {
	s := TakeoverSummary{}
	for _, r := range rs {
		if r.Halt == nil {
			s[r.Change]++
		}
	}
	return s
}

// ExitCode is 2 when any child failed, 1 when the takeover would change more than field
// ownership, else 0.
func (s TakeoverSummary) ExitCode() int {
	switch {
	case s[ChangeFailed] > 0:
		return 2
	case s[ChangeCreate]+s[ChangeConfigure]+s[ChangeRecreate]+s[ChangeDelete] > 0:
		return 1
	}
	return 0
}

func (s TakeoverSummary) String() string {
	var parts []string
	for _, c := range []Change{ChangeInSync, ChangeOwnership, ChangeLeftover, ChangeCreate, ChangeConfigure, ChangeRecreate, ChangeDelete, ChangeFailed} {
		parts = append(parts, fmt.Sprintf("%d %s", s[c], c))
	}
	return "takeover: " + strings.Join(parts, ", ")
}

// WriteTakeover prints one block per CR: a line per child with its change (and who wrote it),
// the immutable fields kept, and the diff of a configure; then the summary line.
func WriteTakeover(w io.Writer, rs []TakeoverResult) error {
	var b bytes.Buffer
	var last apply.ObjRef
	for _, r := range rs {
		if r.CR != last {
			fmt.Fprintf(&b, "► %s\n", qualified(r.CR))
			last = r.CR
		}
		if r.Halt != nil {
			fmt.Fprintf(&b, "  # materializes nothing: %s\n", r.Halt.Error())
			continue
		}
		line := fmt.Sprintf("  %-16s %s", r.Change, r.Object)
		switch r.Change {
		case ChangeOwnership:
			line += " (from " + strings.Join(r.Writers, ", ") + ")"
		case ChangeLeftover:
			line += " (written by " + strings.Join(r.Writers, ", ") + "; not applied by " + kinds.ManagerKinds + ", left in place)"
		case ChangeFailed:
			line += ": " + fmt.Sprint(r.Err)
		}
		b.WriteString(line + "\n")
		for _, k := range r.Kept {
			fmt.Fprintf(&b, "  %-16s %s\n", "kept immutable", k)
		}
		b.WriteString(r.Diff)
	}
	fmt.Fprintln(&b, CountTakeover(rs))
	_, err := w.Write(b.Bytes())
	return err
}
