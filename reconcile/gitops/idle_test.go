package gitops

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/reconcile"
)

func TestFingerprint(t *testing.T) {
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Subresource: sub,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	base := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{ResourceVersion: "10", Generation: 3, Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{entry("gitops", "", `{"f:spec":{}}`)}}
	}
	cases := map[string]struct {
		reason string
		edit   func(m *metav1.ObjectMeta)
		same   bool
	}{
		"a status write": {
			reason: "a controller reporting status must not make the sweep re-apply",
			edit: func(m *metav1.ObjectMeta) {
				m.ResourceVersion = "11"
				m.ManagedFields = append(m.ManagedFields, entry("universe-operator", "status", `{"f:status":{}}`))
			},
			same: true,
		},
		"a spec edit": {
			reason: "bumps the generation",
			edit:   func(m *metav1.ObjectMeta) { m.ResourceVersion, m.Generation = "11", 4 },
		},
		"a label edit": {
			reason: "labels are applied from git too",
			edit:   func(m *metav1.ObjectMeta) { m.ResourceVersion, m.Labels = "11", map[string]string{"a": "c"} },
		},
		"a new field manager": {
			reason: "someone took a field without changing the generation (metadata only)",
			edit: func(m *metav1.ObjectMeta) {
				m.ManagedFields = append(m.ManagedFields, entry("kubectl", "", `{"f:metadata":{}}`))
			},
		},
		"a finalizer": {
			edit: func(m *metav1.ObjectMeta) { m.Finalizers = []string{"x"} },
		},
		"a kind without generation, any write": {
			reason: "a ConfigMap has no generation: only the resourceVersion tells",
			edit: func(m *metav1.ObjectMeta) {
				m.Generation = 0
				m.ResourceVersion = "11"
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before, after := base(), base()
			c.edit(after)
			if got := Fingerprint(before) == Fingerprint(after); got != c.same {
				t.Errorf("%s: same fingerprint = %v, want %v", c.reason, got, c.same)
			}
		})
	}
	if Fingerprint(nil) != "" {
		t.Error("an absent object must have the empty fingerprint")
	}
	cm := &metav1.ObjectMeta{ResourceVersion: "7"}
	if Fingerprint(cm) != "rv:7" {
		t.Errorf("Fingerprint(ConfigMap) = %q", Fingerprint(cm))
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
			if got := Stale(c.digest, c.rec, c.live, now); got != c.want {
				t.Errorf("Stale = %v, want %v", got, c.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	results := []reconcile.Result{
		{Action: reconcile.Created}, {Action: reconcile.Updated}, {Action: reconcile.Updated},
		{Action: reconcile.InSync}, {Action: reconcile.Failed}, {Action: reconcile.Denied},
	}
	skips := []Skip{
		{Reason: ReasonUnparseable}, {Reason: ReasonKustomization}, {Reason: ReasonTypeless}, {Reason: ReasonDuplicate},
		{Reason: ReasonNoName}, {Reason: ReasonNamespaceNotOwned}, {Reason: ReasonNotInApplyScope}, {Reason: ReasonNoNamespace},
		{Reason: ReasonCRDNotAllowed}, {Reason: ReasonClusterScopedWithNamespace},
		{Reason: ReasonClusterScoped}, {Reason: ReasonOperatorObject},
	}
	want := Summary{Files: 9, Refetched: 2, Applied: 5, Created: 1, Updated: 2, InSync: 1, Errors: 1, Denied: 1, Skipped: 5, OutOfScope: 7}
	if diff := cmp.Diff(want, Summarize(9, 2, 5, results, skips)); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
}
