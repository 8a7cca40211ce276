// Package preview answers a pull request with what merging it would do: the objects of its
// changed files that the sweep would create, change, leave alone or refuse, the pods that
// would roll, the immutable fields and scope rules it runs into, the objects it removes from
// git (they would be Orphaned, never pruned), and the unified diff.
//
// Compute is pure: it reads the two revisions' objects, the server-side dry-run results of
// the head's (render.Differ, the diff `operator diff` prints) and the scope's refusals
// (gitops.Scope.Plan, the sweep's own rule) and decides. The shell (Previewer) reads the two
// snapshots, parses and builds only the changed files, dry-runs them and posts one check.
package preview

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
)

// MaxDiffBytes bounds the diff a preview carries (a GitHub check run's output text takes at
// most 65 535 characters; the summary and the fence need the rest).
const MaxDiffBytes = 60000

// Change is what the sweep would do to one object.
type Change string

// Changes.
const (
	Created   Change = "created"
	Changed   Change = "changed"
	Unchanged Change = "unchanged"
	Refused   Change = "refused"
	// Orphaned: declared at the base, no longer at the head; the sweep never deletes it.
	Orphaned Change = "orphaned"
)

// Refusal kinds: why an object is Refused.
const (
	RefusedScope     = "scope"     // the sweep's scope rule (gitops.Scope.Admit)
	RefusedImmutable = "immutable" // the dry-run: a field the apiserver will not change
	RefusedAPIServer = "apiserver" // the dry-run: any other refusal (validation, RBAC, admission)
	RefusedFile      = "file"      // the file or document is not a usable object
)

// Entry is one object of the preview.
type Entry struct {
	// Object is the object's API version, Kind, namespace and name; File where it (or the CR
	// building it) is declared ("" for a whole file refused).
	Object, File string
	Change       Change
	// Refusal and Reason are set on a Refused entry: RefusedScope with the scope rule
	// (gitops.Reason, e.g. ClusterScoped) and its words; RefusedImmutable or RefusedAPIServer
	// with the apiserver's message, quoted values masked (apply.PublicError).
	Refusal string
	Rule    gitops.Reason
	Reason  string
	// Diff is the object's unified diff (Created, Changed), Secret values masked.
	Diff string
}

// Roll is a workload whose pod template changes: its pods will be replaced.
type Roll struct {
	Object apply.ObjRef
	// Replicas is spec.replicas of the head (1 when unset); -1 for a DaemonSet (a pod per node).
	Replicas int32
	// Why names what changes: the containers whose image changes, else "pod template".
	Why string
}

// Input is what Compute decides from.
type Input struct {
	// Base and Head are the revisions' commit SHAs.
	Base, Head string
	// BaseObjects are the objects of the changed files at the base; HeadObjects the ones
	// the head's changed files declare.
	BaseObjects, HeadObjects []source.Object
	// DryRuns are the head's admitted objects and their children, dry-run against the live
	// cluster (render.Differ.Diff).
	DryRuns []render.DiffResult
	// Skips are the scope's refusals and the unusable files (gitops.Scope.Plan of the head's
	// objects).
	Skips []gitops.Skip
}

// Preview is what merging would do.
type Preview struct {
	Base, Head string
	// Entries are in head order (dry-run order), the refusals by scope and by file after
	// them, then the orphans.
	Entries []Entry
	Rolls   []Roll
	// Diff is the concatenated diffs, at most MaxDiffBytes; Omitted counts the objects whose
	// diff did not fit.
	Diff    string
	Omitted int
}

// Count returns how many entries have change c.
func (p Preview) Count(c Change) int {
	n := 0
	for _, e := range p.Entries {
		if e.Change == c {
			n++
		}
	}
	return n
}

// Refused reports whether anything would be refused: the check fails.
func (p Preview) Refused() bool { return p.Count(Refused) > 0 }

// RefusedBy returns the refused entries of refusal kind k.
func (p Preview) RefusedBy(k string) []Entry {
	var out []Entry
	for _, e := range p.Entries {
		if e.Change == Refused && e.Refusal == k {
			out = append(out, e)
		}
	}
	return out
}

// Compute decides the preview. It is pure: it reads only in and never modifies its objects.
func Compute(in Input) Preview {
	p := Preview{Base: in.Base, Head: in.Head}
	for _, r := range in.DryRuns {
		e := Entry{Object: qualified(r.Object), File: r.From, Diff: r.Diff}
		switch r.Action {
		case apply.Created:
			e.Change = Created
		case apply.Updated:
			e.Change = Changed
			if roll, ok := rollOf(r); ok {
				p.Rolls = append(p.Rolls, roll)
			}
		case apply.InSync:
			e.Change = Unchanged
		default:
			e.Change, e.Refusal, e.Reason = Refused, RefusedAPIServer, publicReason(r.Err)
			if immutable(r.Err) {
				e.Refusal = RefusedImmutable
			}
		}
		p.Entries = append(p.Entries, e)
	}
	for _, s := range in.Skips {
		e := Entry{File: s.File, Change: Refused, Rule: s.Reason, Reason: s.Message, Refusal: RefusedFile}
		if s.Reason.OutOfScope() {
			e.Refusal = RefusedScope
		}
		if s.Kind != "" {
			e.Object = strings.TrimSpace(s.Kind + " " + strings.TrimPrefix(s.Namespace+"/"+s.Name, "/"))
		}
		p.Entries = append(p.Entries, e)
	}
	p.Entries = append(p.Entries, orphans(in.BaseObjects, in.HeadObjects)...)
	p.Diff, p.Omitted = boundedDiff(p.Entries, MaxDiffBytes)
	return p
}

// key identifies an object in git: its group, Kind, namespace and name.
type key struct {
	schema.GroupKind
	Namespace, Name string
}

func keyOf(u *unstructured.Unstructured) key {
	return key{GroupKind: u.GroupVersionKind().GroupKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// orphans are the base's objects the head no longer declares, in base order.
func orphans(base, head []source.Object) []Entry {
	declared := map[key]bool{}
	for _, o := range head {
		declared[keyOf(o.Obj)] = true
	}
	var out []Entry
	seen := map[key]bool{}
	for _, o := range base {
		k := keyOf(o.Obj)
		if declared[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Entry{Object: qualified(apply.RefOf(o.Obj)), File: o.File, Change: Orphaned,
			Reason: "no longer declared in git: the sweep leaves it in the cluster (Orphaned in GET /gitops), it never deletes"})
	}
	return out
}

var workloads = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true, {Group: "apps", Kind: "DaemonSet"}: true,
}

// rollOf reports a workload whose pod template the apply changes (live against the dry-run
// result, both defaulted by the apiserver, so only what the change sets differs).
func rollOf(r render.DiffResult) (Roll, bool) {
	gk := schema.GroupKind{Group: r.Object.Group, Kind: r.Object.Kind}
	if !workloads[gk] || r.Live == nil || r.Desired == nil {
		return Roll{}, false
	}
	live, _, _ := unstructured.NestedMap(r.Live.Object, "spec", "template")
	want, _, _ := unstructured.NestedMap(r.Desired.Object, "spec", "template")
	if equality.Semantic.DeepEqual(live, want) {
		return Roll{}, false
	}
	roll := Roll{Object: r.Object, Replicas: 1, Why: "pod template"}
	if gk.Kind == "DaemonSet" {
		roll.Replicas = -1
	} else if n, ok, _ := unstructured.NestedInt64(r.Desired.Object, "spec", "replicas"); ok {
		roll.Replicas = int32(n) //nolint:gosec // spec.replicas is an int32 field
	}
	if images := imageChanges(live, want); len(images) > 0 {
		roll.Why = strings.Join(images, ", ")
	}
	return roll, true
}

// imageChanges names each container whose image differs: "web: a → b".
func imageChanges(live, want map[string]any) []string {
	images := func(t map[string]any) map[string]string {
		out := map[string]string{}
		for _, f := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(t, "spec", f)
			for _, c := range cs {
				m, ok := c.(map[string]any)
				if !ok {
					continue
				}
				name, _ := m["name"].(string)
				img, _ := m["image"].(string)
				out[name] = img
			}
		}
		return out
	}
	a, b := images(live), images(want)
	var out []string
	for name, img := range b {
		if old, ok := a[name]; ok && old != img {
			out = append(out, fmt.Sprintf("%s: %s → %s", name, old, img))
		}
	}
	sort.Strings(out)
	return out
}

// immutable reports a dry-run refused for changing a field the apiserver keeps.
func immutable(err error) bool {
	if err == nil {
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if strings.Contains(c.Message, "field is immutable") {
				return true
			}
		}
	}
	return strings.Contains(err.Error(), "field is immutable")
}

// publicReason is err's text with the apiserver's quoted values masked.
func publicReason(err error) string {
	if err == nil {
		return "failed"
	}
	return apply.PublicError(err).Error()
}

// qualified names ref with its API version: hanzo.ai/v1/Service/demo/web.
func qualified(ref apply.ObjRef) string {
	gv := ref.Version
	if ref.Group != "" {
		gv = ref.Group + "/" + gv
	}
	return gv + "/" + ref.String()
}

// boundedDiff concatenates the entries' diffs, whole ones only, up to max bytes, and counts
// those left out.
func boundedDiff(es []Entry, maxBytes int) (string, int) {
	var b strings.Builder
	omitted := 0
	for _, e := range es {
		if e.Diff == "" {
			continue
		}
		if b.Len()+len(e.Diff) > maxBytes {
			omitted++
			continue
		}
		b.WriteString(e.Diff)
	}
	return b.String(), omitted
}

// Summary is the one line of the check's title and of a commit status's description:
// "create 1, change 2, unchanged 40, refuse 1, orphan 0; rolls Deployment demo/web (3 pods)".
func (p Preview) Summary() string {
	s := fmt.Sprintf("create %d, change %d, unchanged %d, refuse %d, orphan %d",
		p.Count(Created), p.Count(Changed), p.Count(Unchanged), p.Count(Refused), p.Count(Orphaned))
	if len(p.Rolls) > 0 {
		names := make([]string, 0, len(p.Rolls))
		for _, r := range p.Rolls {
			names = append(names, r.Object.String()+" ("+pods(r.Replicas)+")")
		}
		s += "; rolls " + strings.Join(names, ", ")
	}
	if sc := p.RefusedBy(RefusedScope); len(sc) > 0 {
		s += "; scope refuses " + sc[0].Object + " (" + string(sc[0].Rule) + ")"
	}
	return s
}

func pods(n int32) string {
	switch {
	case n < 0:
		return "one pod per node"
	case n == 1:
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// Report is the check's summary in Markdown: the counts, the pods that will roll, each
// refusal (immutable fields, scope rules, the apiserver, files) and the orphans.
func (p Preview) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Preview of %s against the live cluster (base %s): %s.\n", short(p.Head), short(p.Base), p.Summary())
	if len(p.Rolls) > 0 {
		b.WriteString("\n**Pods that will roll**\n\n")
		for _, r := range p.Rolls {
			fmt.Fprintf(&b, "- %s: %s, %s\n", r.Object, pods(r.Replicas), r.Why)
		}
	}
	for _, g := range []struct{ kind, title string }{
		{RefusedImmutable, "Immutable fields (the apiserver refuses the change; delete and recreate, or revert)"},
		{RefusedScope, "Refused by the scope (the sweep will not apply them)"},
		{RefusedAPIServer, "Refused by the apiserver (dry-run)"},
		{RefusedFile, "Unusable files and documents"},
	} {
		es := p.RefusedBy(g.kind)
		if len(es) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n**%s**\n\n", g.title)
		for _, e := range es {
			what := e.Object
			if what == "" {
				what = e.File
			} else if e.File != "" {
				what += " (" + e.File + ")"
			}
			if e.Rule != "" {
				fmt.Fprintf(&b, "- %s: rule %s: %s\n", what, e.Rule, e.Reason)
			} else {
				fmt.Fprintf(&b, "- %s: %s\n", what, e.Reason)
			}
		}
	}
	var orphaned []string
	for _, e := range p.Entries {
		if e.Change == Orphaned {
			orphaned = append(orphaned, fmt.Sprintf("- %s (%s)", e.Object, e.File))
		}
	}
	if len(orphaned) > 0 {
		b.WriteString("\n**Removed from git (left in the cluster, Orphaned; never pruned)**\n\n" + strings.Join(orphaned, "\n") + "\n")
	}
	return b.String()
}

// Details is the unified diff, fenced for Markdown, with a line naming the objects whose
// diff did not fit.
func (p Preview) Details() string {
	if p.Diff == "" {
		return "No object would change."
	}
	out := "```diff\n" + strings.ReplaceAll(p.Diff, "```", "` ` `") + "```\n"
	if p.Omitted > 0 {
		out += fmt.Sprintf("\n%d more objects' diffs do not fit here; `operator preview` prints them all.\n", p.Omitted)
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Check is the one check the preview posts on the head commit, named context/preview
// (commitstatus.PreviewContext): failure when anything would be refused. Its title is the
// summary line, its summary the report, its text the diff.
func (p Preview) Check(context string) commitstatus.Check {
	return commitstatus.Check{SHA: p.Head, Name: commitstatus.PreviewContext(context), Failed: p.Refused(),
		Title: p.Summary(), Summary: p.Report(), Text: p.Details()}
}
