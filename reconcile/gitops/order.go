package gitops

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// PathFile, in a directory of the repository, makes that directory (with its
// subdirectories that have none of their own) one git path: the unit that dependsOn
// orders, that health and orphans are reported by. Its only field is dependsOn, a list of
// other paths (directories holding a PathFile, or "." for the root). A directory without
// one belongs to the nearest ancestor's path; the root path "." holds the rest. The file
// itself is never applied.
const PathFile = ".universe.yaml"

// SyncWaveAnnotation is Argo CD's wave: within one path, objects apply wave by wave in
// numeric order (negative first, no annotation is wave 0), each wave once every object of
// the earlier ones is applied. The value must be an integer, as Argo CD requires.
const SyncWaveAnnotation = "argocd.argoproj.io/sync-wave"

// Reasons an object is held back or refused by the ordering.
const (
	// DependencyNotReady: a path it depends on (or an earlier wave of its own path) has an
	// object that failed, was denied, is held or is suspended with drift.
	ReasonDependencyNotReady Reason = "DependencyNotReady"
	// DependencyCycle: its path is on a dependsOn cycle (named), or depends on one.
	ReasonDependencyCycle Reason = "DependencyCycle"
	// DependencyNotFound: its path depends on a path no PathFile declares.
	ReasonDependencyNotFound Reason = "DependencyNotFound"
	// InvalidPathFile: its path's PathFile does not parse; none of the path applies.
	ReasonInvalidPathFile Reason = "InvalidPathFile"
	// InvalidSyncWave: the sync-wave annotation is not an integer.
	ReasonInvalidSyncWave Reason = "InvalidSyncWave"
	// PathSuspended: `operator suspend` holds a path containing its file.
	ReasonPathSuspended Reason = "PathSuspended"
)

// Held is the action of an object the ordering held back this sweep; Suspended of one
// whose path is suspended.
const (
	Held      apply.Action = "HELD"
	Suspended apply.Action = "SUSPENDED"
)

// PathSpec is one PathFile: the path it makes and what it depends on.
type PathSpec struct {
	Path      string   `json:"-"`
	DependsOn []string `json:"dependsOn,omitempty"`
	// Err is set when the file does not parse; the path is then refused whole.
	Err error `json:"-"`
}

// CleanPath is a repository directory in the form paths are compared: slash separated,
// no leading "./" or "/", no trailing "/", "." for the root.
func CleanPath(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// ParsePathSpec reads a PathFile at file (its directory is the path). Unknown fields are
// an error (a typo of dependsOn must not silently drop the order).
func ParsePathSpec(file string, data []byte) PathSpec {
	spec := PathSpec{Path: CleanPath(path.Dir(file))}
	var raw PathSpec
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		spec.Err = fmt.Errorf("%s: %w", file, err)
		return spec
	}
	for _, d := range raw.DependsOn {
		if d = CleanPath(d); d != spec.Path && !slices.Contains(spec.DependsOn, d) {
			spec.DependsOn = append(spec.DependsOn, d)
		} else if d == spec.Path {
			spec.Err = fmt.Errorf("%s: dependsOn names its own path %s", file, d)
		}
	}
	return spec
}

// SplitPathFiles takes the PathFiles out of a snapshot: the files to parse, and the specs.
func SplitPathFiles(snap *source.Snapshot) (*source.Snapshot, []PathSpec) {
	var specs []PathSpec
	files := make([]source.File, 0, len(snap.Files))
	for _, f := range snap.Files {
		if path.Base(f.Path) == PathFile {
			specs = append(specs, ParsePathSpec(f.Path, f.Data))
			continue
		}
		files = append(files, f)
	}
	if len(specs) == 0 {
		return snap, nil
	}
	out := *snap
	out.Files = files
	return &out, specs
}

// PathOf is the path a file belongs to: the nearest directory at or above it that holds
// a PathFile, else ".".
func PathOf(file string, paths map[string]bool) string {
	dir := CleanPath(path.Dir(file))
	for {
		if paths[dir] {
			return dir
		}
		if dir == "." {
			return "."
		}
		dir = CleanPath(path.Dir(dir))
	}
}

// SuspendedBy returns the suspended path that holds file (the file lies at or below it),
// or "".
func SuspendedBy(file string, suspended []string) string {
	dir := CleanPath(path.Dir(file))
	for _, s := range suspended {
		if s == "." || dir == s || strings.HasPrefix(dir, s+"/") {
			return s
		}
	}
	return ""
}

// Step is a set of objects applied together: one wave of one path.
type Step struct {
	Path string
	Wave int
	// Items index the plan's applies.
	Items []int
	// Needs index the steps that must be ready first: the earlier waves of Path, and every
	// step of the paths Path depends on (directly or not).
	Needs []int
	// Refused, when set, holds the whole step whatever its needs (a cycle, a missing
	// dependency, a bad PathFile), with Message.
	Refused Reason
	Message string
}

// Order is the plan's applies in steps: paths in dependency order (ties by name), each
// path's waves in numeric order.
type Order struct {
	Steps []Step
	// Paths maps each apply (by index) to its path.
	Paths []string
}

// OrderPlan orders applies by path and wave. An object whose wave annotation is not an
// integer becomes a skip (InvalidSyncWave, naming file and object) and is left out of
// every step. Without PathFiles or waves the result is one step holding everything, so
// the applies stay as concurrent as before. It is pure.
func OrderPlan(applies []Apply, specs []PathSpec) (Order, []Skip) {
	byPath := map[string]PathSpec{}
	declared := map[string]bool{}
	for _, sp := range specs {
		byPath[sp.Path] = sp
		declared[sp.Path] = true
	}
	o := Order{Paths: make([]string, len(applies))}
	var skips []Skip
	type pw struct {
		path string
		wave int
	}
	members := map[pw][]int{}
	waves := map[string][]int{}
	for i, a := range applies {
		p := PathOf(a.File, declared)
		o.Paths[i] = p
		wave := 0
		if v, ok := a.Object.GetAnnotations()[SyncWaveAnnotation]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				skips = append(skips, objectSkip(source.Object{File: a.File, Doc: a.Doc, Obj: a.Object}, ReasonInvalidSyncWave,
					fmt.Sprintf("annotation %s is %q, not an integer (Argo CD's rule); fix it to order this object", SyncWaveAnnotation, v)))
				o.Paths[i] = ""
				continue
			}
			wave = n
		}
		k := pw{p, wave}
		if _, ok := members[k]; !ok {
			waves[p] = append(waves[p], wave)
		}
		members[k] = append(members[k], i)
	}
	// Paths with objects, plus every declared path (a dependency may have none).
	all := map[string]bool{}
	for p := range waves {
		all[p] = true
	}
	for p := range declared {
		all[p] = true
	}
	refused := refusals(byPath, all)
	stepsOf := map[string][]int{}
	for _, p := range topoOrder(byPath, all) {
		ws := waves[p]
		slices.Sort(ws)
		for j, w := range ws {
			st := Step{Path: p, Wave: w, Items: members[pw{p, w}]}
			if j > 0 {
				st.Needs = append(st.Needs, stepsOf[p]...)
			}
			for _, d := range closure(byPath, p) {
				st.Needs = append(st.Needs, stepsOf[d]...)
			}
			slices.Sort(st.Needs)
			st.Needs = slices.Compact(st.Needs)
			if r, ok := refused[p]; ok {
				st.Refused, st.Message = r.reason, r.msg
			}
			stepsOf[p] = append(stepsOf[p], len(o.Steps))
			o.Steps = append(o.Steps, st)
		}
	}
	return o, skips
}

type refusal struct {
	reason Reason
	msg    string
}

// refusals names, for each path, why its order cannot be honoured: a bad PathFile, a
// dependency no PathFile declares, a cycle through it, or a dependency refused itself.
func refusals(byPath map[string]PathSpec, all map[string]bool) map[string]refusal {
	out := map[string]refusal{}
	for _, p := range slices.Sorted(maps.Keys(all)) {
		sp := byPath[p]
		if sp.Err != nil {
			out[p] = refusal{ReasonInvalidPathFile, "path " + p + ": its " + PathFile + " is not valid (its skip says why); nothing of the path applies"}
			continue
		}
		for _, d := range sp.DependsOn {
			if _, ok := byPath[d]; !ok && d != "." {
				out[p] = refusal{ReasonDependencyNotFound, fmt.Sprintf("path %s depends on %s, which no %s declares", p, d, PathFile)}
				break
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(all)) {
		if _, ok := out[p]; ok {
			continue
		}
		if cyc := cycleFrom(byPath, p); cyc != nil {
			out[p] = refusal{ReasonDependencyCycle, "dependsOn cycle " + strings.Join(cyc, " → ") + ": refused, nothing of it applies until the cycle is broken"}
		}
	}
	// A path depending on a refused one is held with the reason named.
	for changed := true; changed; {
		changed = false
		for _, p := range slices.Sorted(maps.Keys(all)) {
			if _, ok := out[p]; ok {
				continue
			}
			for _, d := range closure(byPath, p) {
				if r, ok := out[d]; ok {
					out[p] = refusal{r.reason, fmt.Sprintf("path %s depends on %s: %s", p, d, r.msg)}
					changed = true
					break
				}
			}
		}
	}
	return out
}

// cycleFrom returns a dependsOn cycle that passes through p (p first and last), or nil.
func cycleFrom(byPath map[string]PathSpec, p string) []string {
	var walk func(cur string, trail []string, seen map[string]bool) []string
	walk = func(cur string, trail []string, seen map[string]bool) []string {
		for _, d := range byPath[cur].DependsOn {
			if d == p {
				return append(slices.Clone(trail), d)
			}
			if seen[d] {
				continue
			}
			seen[d] = true
			if c := walk(d, append(trail, d), seen); c != nil {
				return c
			}
		}
		return nil
	}
	return walk(p, []string{p}, map[string]bool{p: true})
}

// closure is every path p depends on, directly or not, sorted (p excluded).
func closure(byPath map[string]PathSpec, p string) []string {
	seen := map[string]bool{p: true}
	var out []string
	stack := slices.Clone(byPath[p].DependsOn)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
		stack = append(stack, byPath[d].DependsOn...)
	}
	slices.Sort(out)
	return out
}

// topoOrder lists paths dependencies first, ties by name; paths on a cycle come last, by
// name (they are refused anyway).
func topoOrder(byPath map[string]PathSpec, all map[string]bool) []string {
	var out []string
	done := map[string]bool{}
	names := slices.Sorted(maps.Keys(all))
	for progress := true; progress; {
		progress = false
		for _, p := range names {
			if done[p] {
				continue
			}
			ready := true
			for _, d := range byPath[p].DependsOn {
				if all[d] && !done[d] {
					ready = false
					break
				}
			}
			if ready {
				done[p] = true
				out = append(out, p)
				progress = true
			}
		}
	}
	for _, p := range names {
		if !done[p] {
			out = append(out, p)
		}
	}
	return out
}

// Ready reports whether a result lets the objects that need it proceed: applied (created,
// updated, in sync, adopted), or suspended and in sync, and healthy (kstatus Current)
// where its health is known (see HealthKnown; without a synced watch, applied is ready).
// It is pure.
func Ready(r apply.Result) bool {
	return appliedOK(r) && (!HealthKnown(r.Health) || r.Health == string(kstatus.CurrentStatus))
}

func appliedOK(r apply.Result) bool {
	switch r.Action {
	case apply.Created, apply.Updated, apply.InSync, apply.Adopted:
		return true
	case Suspended:
		return !strings.Contains(r.Message, suspendedDrift)
	}
	return false
}

// Hold decides whether step i of o is held, given the results so far (indexed like the
// applies, each with the health observed of it): its refusal, else the first object of a
// needed step that is not Ready, named with its action or, applied but not healthy, its
// health. It is pure.
func Hold(o Order, i int, results []apply.Result) (Reason, string) {
	st := o.Steps[i]
	if st.Refused != "" {
		return st.Refused, st.Message
	}
	for _, n := range st.Needs {
		need := o.Steps[n]
		for _, j := range need.Items {
			if r := results[j]; r.Action != "" && !Ready(r) { // "": refused by the scope, a skip
				what := fmt.Sprintf("path %s", need.Path)
				if need.Path == st.Path {
					what = fmt.Sprintf("wave %d of path %s", need.Wave, need.Path)
				}
				if appliedOK(r) {
					msg := fmt.Sprintf("held: %s is not healthy (%s %s", what, r.Object, r.Health)
					if r.HealthMessage != "" {
						msg += ": " + r.HealthMessage
					}
					return ReasonDependencyNotReady, msg + ")"
				}
				return ReasonDependencyNotReady, fmt.Sprintf("held: %s is not ready (%s %s)", what, r.Object, r.Action)
			}
		}
	}
	return "", ""
}
