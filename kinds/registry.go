package kinds

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Context is everything a builder may know beyond the CR itself.
type Context struct {
	// APIGroup is the universe group the CR is served in (hanzo.ai, lux.cloud, ...). It decides
	// the owner references' apiVersion and the group of KMSSecret children.
	APIGroup string
	// Inputs are the objects of the kinds the Entry lists in Inputs, in the CR's namespace, as
	// the shell read them (the controller from its cache, `operator render` from the other
	// documents it reads). A builder reads only those kinds and says what it assumes when one
	// is missing; they are values, so the build stays pure.
	Inputs []*unstructured.Unstructured
	// AllowUnverifiedSeed lets a LuxNetwork's seed restore unpack an archive that has neither
	// expectedHash nor a checksum published beside it (<url>.sha256), into an empty data dir
	// only. A shell sets it only where it reports the SeedRestoreUnverified Warning condition
	// and Event (StatusFields.Warnings); unset, such a restore stops the pod.
	AllowUnverifiedSeed bool
	// StaticServerImage is the pinned image (a tag other than latest, or a digest) that serves
	// a Static's ConfigMap; empty is DefaultStaticServerImage.
	StaticServerImage string
	// Loops are the `operator run --controllers` loops this process runs. A Kind a loop acts
	// for (Entry.Loop) says whether its loop is enabled here; empty (the CLIs, which run no
	// loop) is none.
	Loops []string
}

// LoopEnabled reports whether this process runs the loop name (Loops).
func (c Context) LoopEnabled(name string) bool { return slices.Contains(c.Loops, name) }

// InputsOf returns the inputs of kind gk in namespace ns.
func (c Context) InputsOf(gk schema.GroupKind, ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range c.Inputs {
		if u.GroupVersionKind().GroupKind() == gk && u.GetNamespace() == ns {
			out = append(out, u)
		}
	}
	return out
}

// Observed is what the controller observed of a CR's children, for Entry.Status.
type Observed struct {
	// Phase is the phase the controller computed; Ready is its Ready condition.
	Phase v1.Phase
	Ready bool
	// ReadyReplicas are the main workload's ready replicas.
	ReadyReplicas int32
}

// StatusFields are a Kind's own status fields, beyond the shared ones.
type StatusFields struct {
	// Phase, when set, replaces the computed phase (in the Kind's own vocabulary).
	Phase v1.Phase
	// Fields are written under .status next to the shared fields.
	Fields map[string]any
	// NotMaterialized lists the spec fields the build accepts without acting on them, each
	// with why; the controller reports them in the FieldsNotMaterialized condition.
	NotMaterialized []string
	// Warnings are Warning conditions the controller sets (Status True, the Reason as Type)
	// and reports once as Warning Events while they hold; see ReasonSeedRestoreUnverified.
	Warnings []Warning
}

// Warning is a condition a build accepts with a caveat the CR's status must show.
type Warning struct {
	Reason, Message string
}

// ReasonSeedRestoreUnverified: a LuxNetwork's seed archive has no expectedHash, so the restore
// verifies it against <url>.sha256 when one is published and, only when Context.
// AllowUnverifiedSeed is set, unpacks it unverified into an empty data dir otherwise.
const ReasonSeedRestoreUnverified = "SeedRestoreUnverified"

// WarningReasons are the reasons a Warning may carry: the controller removes the condition of
// each one a build no longer reports.
var WarningReasons = []string{ReasonSeedRestoreUnverified}

func (c Context) validate() error {
	return ValidateGroup(c.APIGroup)
}

// BuildFunc turns a CR into the objects it materializes. It is pure: no client, environment,
// clock or randomness; the same CR and Context give the same objects in the same order.
type BuildFunc func(cr Object, c Context) ([]*unstructured.Unstructured, error)

// Ref names an Entry of the Registry. Kind alone is ambiguous: the HIP-era placements serve
// MPC, Network, Chain, Validator, Indexer and Explorer at <universe>/v1 next to the canonical
// chain-family Kinds at bootno.de/v1.
type Ref struct {
	Placement Placement
	Kind      string
}

func (r Ref) String() string {
	if r.Placement == PlacementCanonical {
		return r.Kind
	}
	return string(r.Placement) + "/" + r.Kind
}

// Entry is one served Kind: how to make a typed CR, how to build it, and which child Kinds it
// owns (for watches and garbage collection).
type Entry struct {
	Kind      string
	Family    Family
	Placement Placement
	// New returns an empty typed CR.
	New func() Object
	// Build materializes a CR of this Kind. A deliberate "nothing to materialize" for a reason
	// the CR's status must show (an unknown App role, a delegated role) is a *Halt error.
	Build BuildFunc
	// Owns lists the GVKs of the children Build can emit. The universe-relative ones (the
	// KMSSecret child) are written in the placeholder group; read them with OwnedGVKs.
	Owns []schema.GroupVersionKind
	// Workloads are the kinds the main workload can have (the child whose replicas the CR's
	// status reports and whose pods explain why it is not ready): the first built child of
	// one of these kinds is it. Empty for a Kind that runs no pods itself.
	Workloads []schema.GroupKind
	// Loop names the `operator run --controllers` loop that acts for this Kind outside the
	// object graph (AgentDeployment: agents). When that loop runs it owns the CR's status
	// and the Kind controller is not started for the Kind; Build halts (Pending,
	// HandledByLoop) saying "handled by the <loop> loop" and whether Context.Loops enables it.
	Loop string
	// ServiceSpec, for the Service-shaped Kinds, returns the CR's ServiceSpec, whose Image
	// points into the CR (the upgrade machine sets the image of a copy through it: *Image =),
	// or nil when this CR does not build through the Service path (an App of another role).
	// Nil for other Kinds.
	ServiceSpec func(cr Object) *v1.ServiceSpec
	// Inputs are the GVKs of other objects Build reads from Context.Inputs (a LuxNetwork reads
	// the LuxChains that name it). The controller lists them in the CR's namespace and
	// reconciles the namespace's CRs of this Kind when one of them changes.
	Inputs []schema.GroupVersionKind
	// External names the operator that owns this Kind's status (the luxfi KMSSecret: the
	// secrets.lux.network KMS operator). No Kind controller runs for it, so this operator
	// never writes a status another operator writes; Build still says what it does (render).
	External string
	// Status, when set, returns the Kind's own status fields from the CR and what was
	// observed (the luxfi Kinds report what the luxfi operator reported). Pure.
	Status func(cr Object, obs Observed) StatusFields
}

// IsWorkload reports whether a child of kind gk is the main workload of this Kind.
func (e Entry) IsWorkload(gk schema.GroupKind) bool {
	for _, w := range e.Workloads {
		if w == gk {
			return true
		}
	}
	return false
}

// GroupVersionKind returns the GVK the Kind is served at in universe group.
func (e Entry) GroupVersionKind(group string) schema.GroupVersionKind {
	switch e.Placement {
	case PlacementV1alpha1:
		return schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: e.Kind}
	case PlacementHIP, PlacementFleet, PlacementGitSync:
		return schema.GroupVersionKind{Group: group, Version: v1.Version, Kind: e.Kind}
	case PlacementLuxNetwork:
		if e.Kind == "KMSSecret" {
			return luxnetwork.SecretsGroupVersion.WithKind(e.Kind)
		}
		return luxnetwork.GroupVersion.WithKind(e.Kind)
	default:
		return schema.GroupVersionKind{Group: e.Family.Group(group), Version: v1.Version, Kind: e.Kind}
	}
}

// OwnedGVKs returns Owns with the placeholder group resolved in universe group.
func (e Entry) OwnedGVKs(group string) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(e.Owns))
	for _, gvk := range e.Owns {
		if gvk.Group == PlaceholderGroup || strings.HasSuffix(gvk.Group, "."+PlaceholderGroup) {
			gvk.Group = strings.TrimSuffix(gvk.Group, PlaceholderGroup) + group
		}
		out = append(out, gvk)
	}
	return out
}

// Registry is the one table of served Kinds. Builtin returns it; nothing else switches on a
// Kind.
type Registry map[Ref]Entry

// Lookup returns the entry serving gvk in universe group.
func (r Registry) Lookup(gvk schema.GroupVersionKind, group string) (Entry, bool) {
	for _, p := range []Placement{PlacementCanonical, PlacementV1alpha1, PlacementHIP, PlacementLuxNetwork, PlacementFleet, PlacementGitSync} {
		if e, ok := r[Ref{p, gvk.Kind}]; ok && e.GroupVersionKind(group) == gvk {
			return e, true
		}
	}
	return Entry{}, false
}

// Build decodes an unstructured CR into its typed Kind and builds it: the path of `operator
// render`, `operator diff` and the golden tests. Controllers holding a typed CR call
// Entry.Build directly.
func (r Registry) Build(u *unstructured.Unstructured, c Context) ([]*unstructured.Unstructured, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	gvk := u.GroupVersionKind()
	e, ok := r.Lookup(gvk, c.APIGroup)
	if !ok {
		return nil, fmt.Errorf("build %s %s/%s: no builder serves %s in %s", gvk.Kind, u.GetNamespace(), u.GetName(), gvk, c.APIGroup)
	}
	obj := e.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("decode %s %s/%s: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return e.Build(obj, c)
}

// Halt reports that a builder deliberately materializes nothing for a CR. Phase and Reason are
// what the CR's status should say; a Halt is never a reason to delete existing children.
type Halt struct {
	Phase   v1.Phase
	Reason  string
	Message string
}

func (h *Halt) Error() string { return h.Reason + ": " + h.Message }

// The Halt reasons.
const (
	// ReasonUnknownRole: an App's role is not in the role table (Degraded).
	ReasonUnknownRole = "UnknownRole"
	// ReasonInvalidSpec: the spec cannot be materialized as written (Degraded).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonDelegated: an App role another controller materializes (Pending).
	ReasonDelegated = "Delegated"
	// ReasonNoOp: an App role that materializes nothing (Pending).
	ReasonNoOp = "NoOp"
	// ReasonSupersededByApp: an App of the same name declares the workload, so the Service CR
	// materializes nothing (Degraded). Builders cannot see other CRs; controllers that find the
	// App report SupersededByApp instead of building.
	ReasonSupersededByApp = "SupersededByApp"
)

// SupersededByApp is the Halt of a Service-shaped CR whose name an App also declares
// (wire-contract §2.2): nothing is materialized and nothing is deleted.
func SupersededByApp(name string) *Halt {
	return &Halt{Phase: v1.PhaseDegraded, Reason: ReasonSupersededByApp,
		Message: "App/" + name + " declares this workload; this Service CR materializes nothing. Delete it."}
}

// AsHalt returns the Halt in err's chain, if any.
func AsHalt(err error) (*Halt, bool) {
	var h *Halt
	ok := errors.As(err, &h)
	return h, ok
}

func invalidSpec(format string, args ...any) *Halt {
	return &Halt{Phase: v1.PhaseDegraded, Reason: ReasonInvalidSpec, Message: fmt.Sprintf(format, args...)}
}
