package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The idle check decides, from what the watch shows and what the last apply
// recorded, which objects a sweep must apply again. It is what makes a sweep
// free when nothing changed: an object is applied only when git changed it,
// the last apply of it failed, or its live state moved since our apply.

// LagGrace is how long after an apply the watch may still show the object as
// it was before: until the watch has delivered our write, and for at most
// LagGrace, a live state equal to the one we applied over is the watch
// lagging behind our own write, not drift.
const LagGrace = 10 * time.Second

// Fingerprint summarises the parts of an object's metadata that change when
// anything the sweep applies changes. For kinds that track a generation it is
// the generation, labels, annotations, finalizers, owners, deletion and the
// main-resource field managers: a status write (by a controller reporting on
// the object) leaves it as it is, so status churn costs the sweep nothing.
// For kinds without a generation (ConfigMap, Secret …) it is the
// resourceVersion. An absent object has the empty fingerprint.
func Fingerprint(m metav1.Object) string {
	if m == nil {
		return ""
	}
	if m.GetGeneration() == 0 {
		return "rv:" + m.GetResourceVersion()
	}
	var managers []metav1.ManagedFieldsEntry
	for _, e := range m.GetManagedFields() {
		if e.Subresource == "" {
			managers = append(managers, e)
		}
	}
	b, _ := json.Marshal(struct {
		Generation  int64
		Labels      map[string]string
		Annotations map[string]string
		Finalizers  []string
		Owners      []metav1.OwnerReference
		Deleting    bool
		Managers    []metav1.ManagedFieldsEntry
	}{m.GetGeneration(), m.GetLabels(), m.GetAnnotations(), m.GetFinalizers(), m.GetOwnerReferences(),
		m.GetDeletionTimestamp() != nil, managers})
	sum := sha256.Sum256(b)
	return "gen:" + strconv.FormatInt(m.GetGeneration(), 10) + ":" + hex.EncodeToString(sum[:12])
}

// Digest identifies the desired state of an object as declared in git.
func Digest(u *unstructured.Unstructured) string {
	b, _ := json.Marshal(u.Object) // map keys are sorted: stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Record is what the sweep remembers of its last apply of one object.
type Record struct {
	// Digest of the desired object that was applied.
	Digest string
	// OK is false when the apply failed or was denied.
	OK bool
	// Before and After are the fingerprints of the live object just before
	// the apply (as the watch showed it; "" when absent) and of the object
	// the apply returned.
	Before, After string
	// At is when the apply returned.
	At time.Time
	// Seen is set once the watch has delivered the object as the apply
	// left it; from then on any other live state is drift, not lag.
	Seen bool
}

// Live is what the watch shows of one object.
type Live struct {
	// Watched is false when no synced watch covers the object's kind and
	// namespace: the sweep then cannot know its state and always applies.
	Watched bool
	// Fingerprint of the live object; "" when absent.
	Fingerprint string
}

// Stale reports whether the sweep must apply an object whose desired state
// has digest, given the record of its last apply (nil: never applied) and
// what the watch shows now. It is pure; now is the sweep's clock.
func Stale(digest string, rec *Record, live Live, now time.Time) bool {
	switch {
	case !live.Watched, rec == nil, !rec.OK, rec.Digest != digest:
		return true
	case live.Fingerprint == rec.After:
		return false
	case !rec.Seen && live.Fingerprint == rec.Before && now.Sub(rec.At) < LagGrace:
		return false // the watch has not delivered our own write yet
	}
	return true
}
