package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestFingerprint(t *testing.T) {
	const ours = "universe-operator"
	obj := func(uid string, entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetUID(types.UID(uid))
		u.SetManagedFields(entries)
		return u
	}
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			Subresource: sub, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	spec := `{"f:spec":{"f:minReadySeconds":{},"f:replicas":{}}}`
	applied := obj("u1", entry(ours, "", spec))
	cases := map[string]struct {
		live *unstructured.Unstructured
		same bool
	}{
		"same object": {obj("u1", entry(ours, "", spec)), true},
		"a status write by the controller-manager":    {obj("u1", entry(ours, "", spec), entry("kube-controller-manager", "status", `{"f:status":{}}`)), true},
		"another manager's own field (an annotation)": {obj("u1", entry(ours, "", spec), entry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{}}}`)), true},
		"kubectl edit took a field of ours":           {obj("u1", entry(ours, "", `{"f:spec":{"f:replicas":{}}}`), entry("kubectl-edit", "", `{"f:spec":{"f:minReadySeconds":{}}}`)), false},
		"deleted and recreated by someone":            {obj("u2", entry(ours, "", spec)), false},
		"absent":                                      {nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Fingerprint(tc.live, ours) == Fingerprint(applied, ours); got != tc.same {
				t.Errorf("same fingerprint = %v, want %v", got, tc.same)
			}
		})
	}
	if Fingerprint(nil, ours) != "" {
		t.Error("an absent object must have the empty fingerprint")
	}
}

func TestStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := &Record{Digest: "d1", OK: true, Before: "fp-before", After: "fp-after", At: now.Add(-time.Second)}
	old := *rec
	old.At = now.Add(-time.Minute)
	created := &Record{Digest: "d1", OK: true, Before: "", After: "fp-after", At: now.Add(-time.Second)}
	seen := *created
	seen.Seen = true
	failed := *rec
	failed.OK = false
	watched := func(fp string) Live { return Live{Watched: true, Fingerprint: fp} }
	cases := map[string]struct {
		digest string
		rec    *Record
		live   Live
		want   bool
	}{
		"idle: same desired state, live is what we applied": {digest: "d1", rec: rec, live: watched("fp-after"), want: false},
		"never applied":                               {digest: "d1", rec: nil, live: watched("fp-after"), want: true},
		"git changed the object":                      {digest: "d2", rec: rec, live: watched("fp-after"), want: true},
		"the last apply failed":                       {digest: "d1", rec: &failed, live: watched("fp-after"), want: true},
		"no synced watch covers it":                   {digest: "d1", rec: rec, live: Live{}, want: true},
		"moved out of band":                           {digest: "d1", rec: rec, live: watched("fp-other"), want: true},
		"deleted out of band":                         {digest: "d1", rec: rec, live: watched(""), want: true},
		"watch lags behind our write":                 {digest: "d1", rec: rec, live: watched("fp-before"), want: false},
		"watch lags behind our create":                {digest: "d1", rec: created, live: watched(""), want: false},
		"deleted after the watch had seen our create": {digest: "d1", rec: &seen, live: watched(""), want: true},
		"a lag longer than the grace is not lag":      {digest: "d1", rec: &old, live: watched("fp-before"), want: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got, _ := Stale(c.digest, c.rec, c.live, now); got != c.want {
				t.Errorf("Stale = %v, want %v", got, c.want)
			}
		})
	}
}

func TestStaleLag(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := &Record{Digest: "d1", OK: true, Before: "", After: "fp-applied", At: t0}
	seen := &Record{Digest: "d1", OK: true, Before: "fp-old", After: "fp-applied", At: t0, Seen: true}
	cases := map[string]struct {
		digest  string
		rec     *Record
		live    string
		watched bool
		now     time.Time
		stale   bool
		lag     time.Duration
	}{
		"never applied by this process":               {"d1", nil, "fp-applied", true, t0, true, 0},
		"kind not watched: always applied":            {"d1", rec, "fp-applied", false, t0, true, 0},
		"desired changed":                             {"d2", rec, "fp-applied", true, t0, true, 0},
		"live as we left it: in sync, no request":     {"d1", rec, "fp-applied", true, t0.Add(time.Hour), false, 0},
		"cache not showing our create yet: wait":      {"d1", rec, "", true, t0.Add(3 * time.Second), false, LagGrace - 3*time.Second},
		"still absent long after our create: re-do":   {"d1", rec, "", true, t0.Add(LagGrace), true, 0},
		"seen, then deleted (absent again): re-apply": {"d1", seen, "", true, t0.Add(time.Second), true, 0},
		"seen, then back to the old state: re-apply":  {"d1", seen, "fp-old", true, t0.Add(time.Second), true, 0},
		"drifted (our fields taken): re-apply":        {"d1", rec, "fp-drifted", true, t0.Add(time.Second), true, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stale, lag := Stale(tc.digest, tc.rec, Live{Watched: tc.watched, Fingerprint: tc.live}, tc.now)
			if stale != tc.stale || lag != tc.lag {
				t.Errorf("Stale = %v, %s; want %v, %s", stale, lag, tc.stale, tc.lag)
			}
		})
	}
}
