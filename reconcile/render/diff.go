package render

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// DiffResult is how one desired object compares with the cluster.
type DiffResult struct {
	Object apply.ObjRef
	// From is where the object, or the CR that builds it, was read.
	From string
	// Manager is the field manager the object is dry-run under: ManagerGitOps for the
	// objects read from files, ManagerKinds for the children a CR builds.
	Manager string
	// Action is Created (absent from the cluster), Updated (drifted), InSync or Failed.
	Action apply.Action
	// Diff is a unified diff of the live object against the dry-run result, for Created
	// and Updated; Secret values are masked.
	Diff string
	// Halt is set on the result of a CR that deliberately materializes nothing.
	Halt *kinds.Halt
	// Live and Desired are the compared objects of an Updated result, masked as Diff is (the
	// live object and the dry-run result), and the desired object of a Created one.
	Live, Desired *unstructured.Unstructured
	Err           error
}

// Drifted reports whether applying would change the cluster.
func (r DiffResult) Drifted() bool { return r.Action == apply.Created || r.Action == apply.Updated }

// Differ compares what render prints, and the CRs themselves, with a live cluster through
// server-side dry-run applies (fluxcd/pkg/ssa ResourceManager.Diff). It never writes.
type Differ struct {
	Client      client.Client
	Renderer    Renderer
	Concurrency int // input objects compared at once; 0 means DefaultConcurrency
}

// Diff compares every object of objs with the cluster and returns the results in input
// order: an object that is not a CR under ManagerGitOps; a CR under ManagerGitOps, then
// its children under ManagerKinds. The children reference the live CR's uid; when the CR
// does not exist yet they are all reported as Created without a dry-run (the apiserver
// refuses owner references without a uid).
func (d *Differ) Diff(ctx context.Context, objs []source.Object) []DiffResult {
	r := d.Renderer
	if r.Inputs == nil { // a build's inputs are the objects diffed with it, as in render
		for _, o := range objs {
			r.Inputs = append(r.Inputs, o.Obj)
		}
	}
	ns := &namespaceCache{known: map[string]bool{}}
	each := make([][]DiffResult, len(objs))
	apply.FanOut(len(objs), d.Concurrency, func(i int) { each[i] = d.diffObject(ctx, r, objs[i], ns) })
	var out []DiffResult
	for _, rs := range each {
		out = append(out, rs...)
	}
	return out
}

// DiffFromCluster is Diff of one CR read from the cluster (the deploy plane's live diff):
// its build reads its inputs from the cluster (ListInputs), as the Kind controller's does,
// instead of the objects diffed with it.
func (d *Differ) DiffFromCluster(ctx context.Context, o source.Object) []DiffResult {
	r, err := d.Renderer.FromCluster(ctx, d.Client, o.Obj)
	if err != nil {
		return []DiffResult{{Object: apply.RefOf(o.Obj), From: Location(o), Manager: kinds.ManagerKinds, Action: apply.Failed,
			Err: fmt.Errorf("%s: %w", Location(o), err)}}
	}
	return d.diffObject(ctx, r, o, &namespaceCache{known: map[string]bool{}})
}

func (d *Differ) diffObject(ctx context.Context, r Renderer, o source.Object, namespaces *namespaceCache) []DiffResult {
	from := Location(o)
	if _, ok := r.Registry.Lookup(o.Obj.GroupVersionKind(), r.APIGroup); !ok {
		rd := r.RenderOne(o)
		if rd.Err != nil {
			return []DiffResult{{Object: apply.RefOf(o.Obj), From: from, Manager: kinds.ManagerGitOps, Action: apply.Failed, Err: rd.Err}}
		}
		return []DiffResult{d.diffOne(ctx, rd.Objects[0], from, kinds.ManagerGitOps, namespaces)}
	}

	cr := o.Obj.DeepCopy()
	if err := normalize.Unstructured(cr); err != nil {
		return []DiffResult{{Object: apply.RefOf(cr), From: from, Manager: kinds.ManagerGitOps, Action: apply.Failed,
			Err: fmt.Errorf("%s: normalize %s: %w", from, apply.RefOf(cr), err)}}
	}
	out := []DiffResult{d.diffOne(ctx, cr, from, kinds.ManagerGitOps, namespaces)}

	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(cr.GroupVersionKind())
	err := d.Client.Get(ctx, client.ObjectKeyFromObject(cr), live)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return append(out, DiffResult{Object: apply.RefOf(cr), From: from, Manager: kinds.ManagerKinds, Action: apply.Failed,
			Err: fmt.Errorf("%s: look up live %s for its children's owner uid: %w", from, apply.RefOf(cr), err)})
	default:
		withUID := o
		withUID.Obj = o.Obj.DeepCopy()
		withUID.Obj.SetUID(live.GetUID())
		o = withUID
	}
	rd := r.RenderOne(o)
	switch {
	case rd.Err != nil:
		return append(out, DiffResult{Object: apply.RefOf(cr), From: from, Manager: kinds.ManagerKinds, Action: apply.Failed, Err: rd.Err})
	case rd.Halt != nil:
		out[0].Halt = rd.Halt
		return out
	}
	for _, child := range rd.Objects {
		if live == nil {
			out = append(out, created(child, from, kinds.ManagerKinds))
			continue
		}
		out = append(out, d.diffOne(ctx, child, from, kinds.ManagerKinds, namespaces))
	}
	return out
}

// diffOne dry-runs obj under manager. An object whose namespace does not exist yet is
// Created without a dry-run, which would fail.
func (d *Differ) diffOne(ctx context.Context, obj *unstructured.Unstructured, from, manager string, namespaces *namespaceCache) DiffResult {
	ref := apply.RefOf(obj)
	fail := func(err error) DiffResult {
		return DiffResult{Object: ref, From: from, Manager: manager, Action: apply.Failed, Err: err}
	}
	if ns := obj.GetNamespace(); ns != "" {
		exists, err := namespaces.exists(ctx, d.Client, ns)
		if err != nil {
			return fail(fmt.Errorf("%s: %s: look up namespace %s: %w", from, ref, ns, err))
		}
		if !exists {
			return created(obj, from, manager)
		}
	}
	rm := ssa.NewResourceManager(d.Client, nil, ssa.Owner{Field: manager, Group: apply.FieldOwnerGroup})
	entry, liveObj, merged, err := rm.Diff(ctx, obj.DeepCopy(), ssa.DefaultDiffOptions())
	if err != nil {
		return fail(fmt.Errorf("%s: dry-run %s: %w", from, ref, err))
	}
	switch entry.Action {
	case ssa.CreatedAction:
		return created(obj, from, manager)
	case ssa.ConfiguredAction:
		// ssa masks changed Secret data as "*** (before)"/"*** (after)"; stringData never
		// survives a dry-run, but mask it should it ever.
		text, err := unifiedDiff(ref, maskStringData(liveObj), maskStringData(merged))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", from, err))
		}
		return DiffResult{Object: ref, From: from, Manager: manager, Action: apply.Updated, Diff: text,
			Live: maskStringData(liveObj), Desired: maskStringData(merged)}
	default:
		return DiffResult{Object: ref, From: from, Manager: manager, Action: apply.InSync}
	}
}

// namespaceCache remembers which namespaces exist, for the length of one Diff.
type namespaceCache struct {
	mu    sync.Mutex
	known map[string]bool
}

func (n *namespaceCache) exists(ctx context.Context, c client.Client, name string) (bool, error) {
	n.mu.Lock()
	exists, ok := n.known[name]
	n.mu.Unlock()
	if ok {
		return exists, nil
	}
	err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
	switch {
	case apierrors.IsNotFound(err):
		exists = false
	case err != nil:
		return false, err
	default:
		exists = true
	}
	n.mu.Lock()
	n.known[name] = exists
	n.mu.Unlock()
	return exists, nil
}

// created is the result of an object the cluster does not have: its whole body, masked,
// as added lines.
func created(obj *unstructured.Unstructured, from, manager string) DiffResult {
	ref := apply.RefOf(obj)
	text, err := unifiedDiff(ref, nil, MaskSecret(obj))
	if err != nil {
		return DiffResult{Object: ref, From: from, Manager: manager, Action: apply.Failed, Err: fmt.Errorf("%s: %w", from, err)}
	}
	return DiffResult{Object: ref, From: from, Manager: manager, Action: apply.Created, Diff: text, Desired: MaskSecret(obj)}
}

// unifiedDiff renders live (nil: absent) against desired as a unified diff of their YAML,
// without status and the metadata the apiserver owns.
func unifiedDiff(ref apply.ObjRef, live, desired *unstructured.Unstructured) (string, error) {
	a, err := diffYAML(live)
	if err != nil {
		return "", fmt.Errorf("encode live %s: %w", ref, err)
	}
	b, err := diffYAML(desired)
	if err != nil {
		return "", fmt.Errorf("encode desired %s: %w", ref, err)
	}
	ud := difflib.UnifiedDiff{
		A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "live/" + qualified(ref), ToFile: "desired/" + qualified(ref), Context: 3,
	}
	if live == nil {
		ud.A, ud.FromFile = nil, "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(ud)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", ref, err)
	}
	return text, nil
}

// qualified names ref with its API version, as CRs and their children can share a Kind
// and a name: hanzo.ai/v1/Service/demo/web next to v1/Service/demo/web.
func qualified(ref apply.ObjRef) string {
	gv := ref.Version
	if ref.Group != "" {
		gv = ref.Group + "/" + gv
	}
	return gv + "/" + ref.String()
}

func diffYAML(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	obj = obj.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	out, err := yaml.Marshal(obj.Object)
	return string(out), err
}

// maskStringData masks a Secret's stringData only: ssa already replaced changed data values
// with "*** (before)" / "*** (after)", which MaskSecret would flatten.
func maskStringData(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return maskSecretFields(obj, "stringData")
}

// DiffSummary counts the results of a diff.
type DiffSummary struct {
	Objects, InSync, Created, Updated, Failed int
}

// Drifted is the number of objects an apply would change.
func (s DiffSummary) Drifted() int { return s.Created + s.Updated }

func (s DiffSummary) String() string {
	return fmt.Sprintf("%d objects: %d in sync, %d drifted (%d to create, %d to update), %d failed",
		s.Objects, s.InSync, s.Drifted(), s.Created, s.Updated, s.Failed)
}

// ExitCode is the exit status of `operator diff`, as flux diff's: 2 when any object
// failed, else 1 when any drifted, else 0.
func (s DiffSummary) ExitCode() int {
	switch {
	case s.Failed > 0:
		return 2
	case s.Drifted() > 0:
		return 1
	}
	return 0
}

// CountDiffs counts rs.
func CountDiffs(rs []DiffResult) DiffSummary {
	s := DiffSummary{Objects: len(rs)}
	for _, r := range rs {
		switch r.Action {
		case apply.InSync:
			s.InSync++
		case apply.Created:
			s.Created++
		case apply.Updated:
			s.Updated++
		default:
			s.Failed++
		}
	}
	return s
}

// WriteDiff prints one block per drifted object (a header line and its unified diff), a
// comment line per CR that materializes nothing, and the summary line. Errors are the
// caller's to print.
func WriteDiff(w io.Writer, rs []DiffResult) error {
	var b bytes.Buffer
	for _, r := range rs {
		if r.Halt != nil {
			fmt.Fprintf(&b, "# %s: %s materializes nothing: %s\n", r.From, r.Object, r.Halt.Error())
		}
		if !r.Drifted() {
			continue
		}
		verb := "drifted"
		if r.Action == apply.Created {
			verb = "would be created"
		}
		fmt.Fprintf(&b, "► %s %s (%s, field manager %s)\n", qualified(r.Object), verb, r.From, r.Manager)
		b.WriteString(r.Diff)
	}
	fmt.Fprintln(&b, CountDiffs(rs))
	_, err := w.Write(b.Bytes())
	return err
}
