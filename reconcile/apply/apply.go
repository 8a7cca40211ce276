package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Action is what an apply did to one object.
type Action string

// Actions, in the words of the drift log.
const (
	Created Action = "CREATE"
	Updated Action = "UPDATE"
	InSync  Action = "in-sync"
	Deleted Action = "DELETE"
	// Adopted: the object was as built but another manager's (the operator this one
	// replaces); it is now applied by this one too, values unchanged, nothing recreated.
	Adopted Action = "ADOPT"
	Failed  Action = "ERROR"
	Denied  Action = "DENIED"
)

// ObjRef names an object in logs, reports and JSON.
type ObjRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// RefOf returns the reference of obj.
func RefOf(obj *unstructured.Unstructured) ObjRef {
	gvk := obj.GroupVersionKind()
	return ObjRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String renders Kind/namespace/name (Kind/name for cluster-scoped objects).
func (r ObjRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// GroupKind returns the object's group and kind.
func (r ObjRef) GroupKind() schema.GroupKind { return schema.GroupKind{Group: r.Group, Kind: r.Kind} }

// Result is the outcome of applying one object.
type Result struct {
	Object ObjRef `json:"object"`
	Action Action `json:"action"`
	// DriftedBy names the field managers that had changed fields this apply took back.
	DriftedBy []string `json:"driftedBy,omitempty"`
	// AdoptedFrom names the managers that had written an Adopted object.
	AdoptedFrom []string `json:"adoptedFrom,omitempty"`
	// Message explains Failed and Denied; for Denied it names the missing RBAC grant.
	Message string `json:"message,omitempty"`
	Err     error  `json:"-"`
	// Path is the git path (see gitops.PathOf) whose file declared the object, omitted for
	// the root path "."; set by the git sweep only.
	Path string `json:"path,omitempty"`
	// Reason names why a git-sweep object was held or not applied (DependencyNotReady,
	// DependencyCycle, PathSuspended, ...); empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Health is the object's kstatus (Current, InProgress, Failed, Terminating, NotFound,
	// Unknown) from the git sweep's watch, with its message; set by the git sweep only.
	Health        string `json:"health,omitempty"`
	HealthMessage string `json:"healthMessage,omitempty"`
}

// Applier server-side applies objects through fluxcd/pkg/ssa under one field manager,
// object by object, so one bad object never stops the others.
type Applier struct {
	Client      client.Client
	Manager     string
	Concurrency int // objects applied at once; 0 means DefaultConcurrency
	// Adopt applies an object that is already as built but that Manager never applied
	// (another operator made it), so that Manager owns its fields from then on (Adopted).
	Adopt bool
}

// Apply applies objs and returns one Result per object, in the order given. Each object
// costs a get and a server-side dry-run; only drifted or new objects are then applied.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured) []Result {
	results, _ := a.apply(ctx, objs, false)
	return results
}

// ApplyForced is Apply that recreates an object whose immutable fields differ (ssa's Force).
func (a *Applier) ApplyForced(ctx context.Context, objs []*unstructured.Unstructured) []Result {
	results, _ := a.apply(ctx, objs, true)
	return results
}

// ApplyObserved is Apply that also returns each object as the apiserver has it after the
// apply (the apply's response, or the live object when it was in sync; nil on failure or
// after an adoption), for a caller that remembers what it applied. cached[i], when given
// and not nil, is object i as a watch cache shows it: the comparison starts from it instead
// of a get (a Kind controller's first reconcile after a start costs one dry-run per child,
// not two requests). A cache behind the apiserver costs at most an apply that changes
// nothing.
func (a *Applier) ApplyObserved(ctx context.Context, objs, cached []*unstructured.Unstructured) ([]Result, []*unstructured.Unstructured) {
	results := make([]Result, len(objs))
	lives := make([]*unstructured.Unstructured, len(objs))
	FanOut(len(objs), a.Concurrency, func(i int) {
		var c *unstructured.Unstructured
		if i < len(cached) {
			c = cached[i]
		}
		results[i], lives[i] = a.applyOne(ctx, objs[i], c, false)
	})
	return results, lives
}

func (a *Applier) apply(ctx context.Context, objs []*unstructured.Unstructured, force bool) ([]Result, []*unstructured.Unstructured) {
	results := make([]Result, len(objs))
	lives := make([]*unstructured.Unstructured, len(objs))
	FanOut(len(objs), a.Concurrency, func(i int) { results[i], lives[i] = a.applyOne(ctx, objs[i], nil, force) })
	return results, lives
}

func (a *Applier) applyOne(ctx context.Context, obj, cached *unstructured.Unstructured, force bool) (Result, *unstructured.Unstructured) {
	ref := RefOf(obj)
	var existing, applied *unstructured.Unstructured
	// Observe the live object ssa reads and the object the apply returns: the two sets of
	// managedFields are what drift attribution needs, at no extra request.
	c := interceptor.NewClient(withWatch(a.Client), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if u, ok := o.(*unstructured.Unstructured); ok && cached != nil && existing == nil && key == client.ObjectKeyFromObject(cached) {
				cached.DeepCopyInto(u)
				existing = cached.DeepCopy()
				return nil
			}
			err := c.Get(ctx, key, o, opts...)
			if u, ok := o.(*unstructured.Unstructured); ok && err == nil && existing == nil {
				existing = u.DeepCopy()
			}
			return err
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, o, p, opts...)
			if u, ok := o.(*unstructured.Unstructured); ok && err == nil && !isDryRun(opts) {
				applied = u.DeepCopy()
			}
			return err
		},
	})
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: a.Manager, Group: FieldOwnerGroup})
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	entry, err := rm.Apply(ctx, obj.DeepCopy(), opts)
	if err != nil {
		return failure(ref, err), nil
	}
	switch entry.Action {
	case ssa.CreatedAction:
		return Result{Object: ref, Action: Created}, applied
	case ssa.ConfiguredAction:
		return Result{Object: ref, Action: Updated, DriftedBy: DriftedBy(existing, applied, a.Manager)}, applied
	default:
		if a.Adopt && existing != nil && !AppliedBy(existing, a.Manager) {
			// as built, but another operator's: apply it once so its fields are ours (the
			// values are equal, so the apply changes nothing but managedFields); the live
			// object is not returned, so a caller reads it again before trusting it
			err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(a.Manager), client.ForceOwnership)
			if err != nil {
				return failure(ref, err), nil
			}
			return Result{Object: ref, Action: Adopted, AdoptedFrom: Writers(existing, a.Manager)}, nil
		}
		if applied != nil { // in sync in values, but the apply moved managedFields
			return Result{Object: ref, Action: InSync}, applied
		}
		return Result{Object: ref, Action: InSync}, existing
	}
}

// withWatch adapts a client without Watch (a manager's client) to the interceptor; ssa
// never watches.
func withWatch(c client.Client) client.WithWatch {
	if w, ok := c.(client.WithWatch); ok {
		return w
	}
	return noWatch{c}
}

type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported by this client")
}

func isDryRun(opts []client.PatchOption) bool {
	po := &client.PatchOptions{}
	po.ApplyOptions(opts)
	return len(po.DryRun) > 0
}

// MissingGrant describes the RBAC rule the operator needs to verb ref.
func MissingGrant(ref ObjRef, verb string) string {
	group := ref.Group
	if group == "" {
		group = `""`
	}
	scope := "cluster-wide"
	if ref.Namespace != "" {
		scope = "in namespace " + ref.Namespace
	}
	return fmt.Sprintf("forbidden: grant verbs [get patch] on apiGroup %s kind %s %s (failed verb: %s)", group, ref.Kind, scope, verb)
}

// DriftedBy names the field managers whose changes an apply took back: managers that, on
// the live object before the apply, owned fields that manager owns after it and that they
// no longer own (a forced apply takes over only fields whose value differed; equal values
// stay shared). It reads only managedFields, so it names a controller, kubectl or a
// person's tool exactly as the apiserver recorded it. Status writes are ignored; writes
// through /scale count (kubectl scale).
func DriftedBy(before, after *unstructured.Unstructured, manager string) []string {
	if before == nil || after == nil {
		return nil
	}
	return driftedBy(before.GetManagedFields(), after.GetManagedFields(), manager)
}

// driftedBy is DriftedBy over the managedFields of the two objects.
func driftedBy(before, after []metav1.ManagedFieldsEntry, manager string) []string {
	afterSets := managedSets(after)
	ours, ok := afterSets[manager]
	if !ok {
		return nil
	}
	var out []string
	for m, had := range managedSets(before) {
		if m == manager {
			continue
		}
		lost := had
		if still, ok := afterSets[m]; ok {
			lost = had.Difference(still)
		}
		if !lost.Intersection(ours).Empty() {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// managedSets returns the fields each manager owns, through the main resource or a
// subresource that writes the spec (kubectl scale writes spec.replicas through /scale);
// status writes are never drift.
func managedSets(entries []metav1.ManagedFieldsEntry) map[string]*fieldpath.Set {
	sets := map[string]*fieldpath.Set{}
	for _, e := range entries {
		if e.Subresource == "status" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
			continue
		}
		if prev, ok := sets[e.Manager]; ok {
			s = prev.Union(s)
		}
		sets[e.Manager] = s
	}
	return sets
}
