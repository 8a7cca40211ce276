package gitops

import (
	"slices"
	"strconv"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/reconcile/apply"
)

// Health is an applied object's kstatus (Current, InProgress, Failed, Terminating,
// NotFound, Unknown) with its message, as computed from the last copy the watch (or the
// apply's response) delivered. Only this result is kept, never the object.
type Health struct {
	Status  kstatus.Status
	Message string
	// rv is the resourceVersion it was computed at.
	rv string
}

// statuslessKinds have no status kstatus reads: their health is Current (Terminating
// while deleted) from metadata alone, so their watch stays metadata-only and a Secret's
// data never crosses the wire to the sweep.
var statuslessKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "ServiceAccount"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}: true, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}

// Statusless reports whether a kind's health is read from its metadata alone.
func Statusless(gk schema.GroupKind) bool { return statuslessKinds[gk] }

// HealthOf is kstatus.Compute on u, or Unknown with the error. awaited says a controller of
// this operator writes u's status (Options.AwaitsStatus): kstatus reads an object without
// status as Current, but a CR of ours without status.observedGeneration has not had its
// first status yet (a Kind controller holds a new CR's "on its way" back for its first
// look), so it is InProgress until then. It is pure.
func HealthOf(u *unstructured.Unstructured, awaited bool) Health {
	if u == nil {
		return Health{Status: kstatus.NotFoundStatus}
	}
	res, err := kstatus.Compute(u)
	if err != nil {
		return Health{Status: kstatus.UnknownStatus, Message: err.Error(), rv: u.GetResourceVersion()}
	}
	if awaited && res.Status == kstatus.CurrentStatus {
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration"); !found {
			return Health{Status: kstatus.InProgressStatus, rv: u.GetResourceVersion(),
				Message: "waiting for the operator's first status of this " + u.GetKind() + " (no status.observedGeneration yet)"}
		}
	}
	return Health{Status: res.Status, Message: res.Message, rv: u.GetResourceVersion()}
}

// metaHealth is the health of a statusless kind from its metadata.
func metaHealth(m metav1.Object) Health {
	if m.GetDeletionTimestamp() != nil {
		return Health{Status: kstatus.TerminatingStatus, Message: "Resource scheduled for deletion", rv: m.GetResourceVersion()}
	}
	return Health{Status: kstatus.CurrentStatus, rv: m.GetResourceVersion()}
}

// statusMeta is what a status watch stores per object: its metadata (what the idle check
// and the inventory read) and its health, computed when the event arrived; the rest of
// the object (spec, status) is dropped.
type statusMeta struct {
	metav1.PartialObjectMetadata
	health Health
}

func (m *statusMeta) DeepCopyObject() runtime.Object {
	c := &statusMeta{health: m.health}
	m.DeepCopyInto(&c.PartialObjectMetadata)
	return c
}

// toStatusMeta is the status watch's transform: a full object in, its metadata and
// health out (HealthOf, awaited as the watch's kind is). Anything else (a tombstone, an
// object already transformed) passes as is.
func toStatusMeta(awaited bool) func(obj any) (any, error) {
	return func(obj any) (any, error) { return statusMetaOf(obj, awaited), nil }
}

func statusMetaOf(obj any, awaited bool) any {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	m := &statusMeta{health: HealthOf(u, awaited)}
	m.TypeMeta = metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
	md, _ := u.Object["metadata"].(map[string]any)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &m.ObjectMeta); err != nil {
		// what the sweep reads of it, from the accessors
		m.ObjectMeta = metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(), DeletionTimestamp: u.GetDeletionTimestamp(),
			ManagedFields: u.GetManagedFields()}
	}
	return m
}

// newerRV reports whether resourceVersion a is newer than b. resourceVersions are opaque,
// but the apiserver's are etcd revisions: compared as integers when both parse, else a
// differing one counts as newer. It is pure.
func newerRV(a, b string) bool {
	if a == b {
		return false
	}
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return x > y
}

// healthRank orders statuses worst first: a path is as healthy as its worst object.
// A NotFound object is most often one held back and not created yet, so one rolling out
// (InProgress) is named first.
var healthRank = []kstatus.Status{kstatus.FailedStatus, kstatus.TerminatingStatus, kstatus.InProgressStatus,
	kstatus.NotFoundStatus, kstatus.UnknownStatus, kstatus.CurrentStatus}

// Worst is the least healthy of statuses (Current for none; anything else, "" included,
// ranks as Unknown). It is pure.
func Worst(statuses ...kstatus.Status) kstatus.Status {
	best := len(healthRank) - 1
	for _, s := range statuses {
		best = min(best, rank(s))
	}
	return healthRank[best]
}

func rank(s kstatus.Status) int {
	if i := slices.Index(healthRank, s); i >= 0 {
		return i
	}
	return slices.Index(healthRank, kstatus.UnknownStatus)
}

// HealthKnown reports whether a health says something about the object: Unknown and
// unset (no synced watch covers it) do not.
func HealthKnown(s string) bool {
	return s != "" && s != string(kstatus.UnknownStatus)
}

// HealthCounts counts objects by health.
type HealthCounts struct {
	Current     int `json:"current"`
	InProgress  int `json:"inProgress"`
	Failed      int `json:"failed"`
	Terminating int `json:"terminating,omitempty"`
	NotFound    int `json:"notFound,omitempty"`
	Unknown     int `json:"unknown,omitempty"`
}

func (c *HealthCounts) add(s string) {
	switch kstatus.Status(s) {
	case kstatus.CurrentStatus:
		c.Current++
	case kstatus.InProgressStatus:
		c.InProgress++
	case kstatus.FailedStatus:
		c.Failed++
	case kstatus.TerminatingStatus:
		c.Terminating++
	case kstatus.NotFoundStatus:
		c.NotFound++
	default:
		c.Unknown++
	}
}

// PathHealth is one git path's health: the worst of its objects', with the counts and
// the first object (in plan order) at that worst health when it is not Current.
type PathHealth struct {
	Path   string       `json:"path"`
	Health string       `json:"health"`
	Counts HealthCounts `json:"counts"`
	// Worst names the first object at Health when that is not Current, with its message.
	Worst   *apply.ObjRef `json:"worst,omitempty"`
	Message string        `json:"message,omitempty"`
}

// Healthy is what a report's health comes to: every path Current.
func (r *Report) Healthy() bool {
	for _, p := range r.Paths {
		if p.Health != string(kstatus.CurrentStatus) {
			return false
		}
	}
	return true
}

// WithHealth fills each result's health from lookup (nil for an object no watch or apply
// has shown) and recomputes the per-path health and the summary's counts. Skipped,
// refused and held-and-never-applied objects count like any other: a held object absent
// from the cluster is NotFound. It is pure given lookup.
func (r *Report) WithHealth(lookup func(apply.ObjRef) *Health) {
	r.Summary.Health = HealthCounts{}
	byPath := map[string]*PathHealth{}
	var order []string
	for i := range r.Results {
		res := &r.Results[i]
		h := lookup(res.Object)
		res.Health, res.HealthMessage = string(kstatus.UnknownStatus), ""
		if h != nil {
			res.Health, res.HealthMessage = string(h.Status), h.Message
		}
		r.Summary.Health.add(res.Health)
		p := res.Path
		if p == "" {
			p = "."
		}
		ph := byPath[p]
		if ph == nil {
			ph = &PathHealth{Path: p, Health: string(kstatus.CurrentStatus)}
			byPath[p] = ph
			order = append(order, p)
		}
		ph.Counts.add(res.Health)
		if rank(kstatus.Status(res.Health)) < rank(kstatus.Status(ph.Health)) {
			ph.Health = res.Health
			obj := res.Object
			ph.Worst, ph.Message = &obj, res.HealthMessage
		}
	}
	slices.Sort(order)
	r.Paths = r.Paths[:0:0]
	for _, p := range order {
		r.Paths = append(r.Paths, *byPath[p])
	}
}
