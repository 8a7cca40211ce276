package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The idle check decides, from what a watch (the git sweep's, or a Kind controller's
// cache) shows and what the last apply recorded, which objects must be applied again. It
// is what makes a resync free when nothing changed: an object is applied only when its
// desired state changed, the last apply of it failed, or its live state moved since our
// apply. The sweep and the Kind controllers share it.

// LagGrace is how long after an apply the watch may still show the object as it was
// before: until the watch has delivered our write, and for at most LagGrace, a live state
// equal to the one we applied over is the watch lagging behind our own write, not drift.
const LagGrace = 10 * time.Second

// Fingerprint summarises what of an object an apply by manager could change: its identity
// (uid, deletion) and the fields manager owns on the main resource. Another writer
// changing or removing one of our fields takes it from our managedFields entry (an update
// always does; an apply by force does), so drift changes the fingerprint, while status
// writes, other managers' own fields and the controller-manager's annotations leave it as
// it is. An absent object (nil, or a nil pointer) has the empty fingerprint.
func Fingerprint(m metav1.Object, manager string) string {
	if v := reflect.ValueOf(m); m == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%t", m.GetUID(), m.GetDeletionTimestamp() != nil)
	for _, e := range m.GetManagedFields() {
		if e.Manager != manager || e.Subresource != "" {
			continue
		}
		fmt.Fprintf(h, "\x00%s\x00%s\x00", e.Operation, e.APIVersion)
		if e.FieldsV1 != nil {
			h.Write(e.FieldsV1.GetRawBytes())
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Digest identifies the desired state of an object.
func Digest(u *unstructured.Unstructured) string {
	b, _ := json.Marshal(u.Object) // map keys are sorted: stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Record is what a loop remembers of its last apply of one object.
type Record struct {
	// Digest of the desired object that was applied.
	Digest string
	// OK is false when the apply failed or was denied.
	OK bool
	// Before and After are the fingerprints of the live object just before the apply
	// (as the watch showed it; "" when absent) and of the object the apply returned.
	Before, After string
	// At is when the apply returned.
	At time.Time
	// Seen is set once the watch has delivered the object as the apply left it; from
	// then on any other live state is drift, not lag.
	Seen bool
	// UID and ResourceVersion of the object the apply returned (empty when unknown): the
	// next apply tells from them that the object existed, and that nothing moved it,
	// when the watch has not delivered it yet (see ClassifyRecorded).
	UID             types.UID
	ResourceVersion string
}

// Live is what the watch shows of one object.
type Live struct {
	// Watched is false when no synced watch covers the object's kind and namespace: its
	// state is then unknown and it is always applied.
	Watched bool
	// Fingerprint of the live object; "" when absent.
	Fingerprint string
}

// Stale reports whether an object whose desired state has digest must be applied, given
// the record of its last apply (nil: never applied by this process) and what the watch
// shows now. For at most LagGrace after an apply, a live state equal to the one before it
// is the watch not having delivered our write yet: not stale, and lag says when to look
// again. It is pure; now is the caller's clock.
func Stale(digest string, rec *Record, live Live, now time.Time) (stale bool, lag time.Duration) {
	switch {
	case !live.Watched, rec == nil, !rec.OK, rec.Digest != digest:
		return true, 0
	case live.Fingerprint == rec.After:
		return false, 0
	case !rec.Seen && live.Fingerprint == rec.Before && now.Sub(rec.At) < LagGrace:
		return false, LagGrace - now.Sub(rec.At) // the watch has not delivered our own write yet
	}
	return true, 0
}
