package gitops

import (
	"fmt"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds/gitsync"
	"github.com/openuniverse/operator/reconcile/apply"
)

func TestWorst(t *testing.T) {
	for _, tc := range []struct {
		in   []kstatus.Status
		want kstatus.Status
	}{
		{nil, kstatus.CurrentStatus},
		{[]kstatus.Status{kstatus.CurrentStatus, kstatus.CurrentStatus}, kstatus.CurrentStatus},
		{[]kstatus.Status{kstatus.CurrentStatus, kstatus.InProgressStatus}, kstatus.InProgressStatus},
		{[]kstatus.Status{kstatus.InProgressStatus, kstatus.FailedStatus, kstatus.CurrentStatus}, kstatus.FailedStatus},
		{[]kstatus.Status{kstatus.CurrentStatus, kstatus.NotFoundStatus, kstatus.InProgressStatus}, kstatus.InProgressStatus},
		{[]kstatus.Status{kstatus.CurrentStatus, kstatus.NotFoundStatus}, kstatus.NotFoundStatus},
		{[]kstatus.Status{kstatus.CurrentStatus, ""}, kstatus.UnknownStatus},
		{[]kstatus.Status{"Bogus", kstatus.InProgressStatus}, kstatus.InProgressStatus},
	} {
		if got := Worst(tc.in...); got != tc.want {
			t.Errorf("Worst(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestNewerRV(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"10", "9", true}, {"9", "10", false}, {"10", "10", false}, {"10", "", true}, {"x", "y", true}, {"", "", false},
	} {
		if got := newerRV(tc.a, tc.b); got != tc.want {
			t.Errorf("newerRV(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}

func docObj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestHealthOf(t *testing.T) {
	const cr = "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: s, namespace: ns, generation: 3}\nspec: {image: {repository: r, tag: v1}}\n"
	readyStatus := func(observed int) string {
		return fmt.Sprintf("status: {observedGeneration: %d, conditions: [{type: Ready, status: \"True\", reason: Ready}]}\n", observed)
	}
	const dep = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: ns, generation: 2, resourceVersion: \"7\"}\nspec: {replicas: 1}\n"
	for _, tc := range []struct {
		name, doc string
		awaited   bool
		want      kstatus.Status
	}{
		{"a new Deployment is InProgress", dep, false, kstatus.InProgressStatus},
		{"rolled out is Current", dep + "status: {observedGeneration: 2, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1, conditions: [{type: Available, status: \"True\"}, {type: Progressing, status: \"True\", reason: NewReplicaSetAvailable}]}\n", false, kstatus.CurrentStatus},
		{"past its progress deadline is Failed", dep + "status: {observedGeneration: 2, replicas: 1, conditions: [{type: Progressing, status: \"False\", reason: ProgressDeadlineExceeded}]}\n", false, kstatus.FailedStatus},
		{"a ConfigMap is Current", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n", false, kstatus.CurrentStatus},
		{"deleting is Terminating", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, deletionTimestamp: \"2026-01-01T00:00:00Z\"}\n", false, kstatus.TerminatingStatus},
		// kstatus reads a CR without status as Current; one of ours has not been reconciled yet
		{"a CR without status, to kstatus", cr, false, kstatus.CurrentStatus},
		{"our CR without status is InProgress", cr, true, kstatus.InProgressStatus},
		{"our CR with a status but no observedGeneration is InProgress", cr + "status: {phase: Pending}\n", true, kstatus.InProgressStatus},
		{"our CR reconciled and Ready is Current", cr + readyStatus(3), true, kstatus.CurrentStatus},
		{"our CR reconciling is InProgress", cr + "status: {observedGeneration: 3, conditions: [{type: Reconciling, status: \"True\", reason: Progressing}]}\n", true, kstatus.InProgressStatus},
		{"our CR observed at an older generation is InProgress", cr + readyStatus(2), true, kstatus.InProgressStatus},
		{"our CR Stalled is Failed", cr + "status: {observedGeneration: 3, conditions: [{type: Stalled, status: \"True\", reason: InvalidSpec}]}\n", true, kstatus.FailedStatus},
		{"our CR being deleted is Terminating", "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: s, namespace: ns, generation: 3, deletionTimestamp: \"2026-01-01T00:00:00Z\", finalizers: [x]}\n", true, kstatus.TerminatingStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := HealthOf(docObj(t, tc.doc), tc.awaited)
			if h.Status != tc.want {
				t.Errorf("HealthOf = %+v, want %s", h, tc.want)
			}
		})
	}
	if h := HealthOf(nil, true); h.Status != kstatus.NotFoundStatus {
		t.Errorf("HealthOf(nil) = %+v", h)
	}
	// the transform keeps metadata and health, drops the rest
	m, _ := toStatusMeta(false)(docObj(t, dep))
	sm, ok := m.(*statusMeta)
	if !ok || sm.Name != "d" || sm.Namespace != "ns" || sm.ResourceVersion != "7" || sm.health.Status != kstatus.InProgressStatus || sm.health.rv != "7" {
		t.Errorf("toStatusMeta = %#v", m)
	}
	if again, _ := toStatusMeta(true)(sm); again != sm {
		t.Errorf("toStatusMeta of a stored object changed it")
	}
	if !Statusless(schema.GroupKind{Kind: "Secret"}) || Statusless(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Errorf("Statusless: a Secret's health is from metadata, a Deployment's from its status")
	}
}

func TestReportWithHealth(t *testing.T) {
	ref := func(name string) apply.ObjRef {
		return apply.ObjRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "n", Name: name}
	}
	r := Report{Results: []apply.Result{
		{Object: ref("db"), Action: apply.Created, Path: "infra/db"},
		{Object: ref("web"), Action: apply.InSync, Path: "apps/web"},
		{Object: ref("api"), Action: apply.Updated, Path: "apps/web"},
		{Object: ref("cache"), Action: Held, Path: "apps/web"},
		{Object: ref("loose"), Action: apply.InSync},
	}}
	known := map[string]*Health{
		"db":    {Status: kstatus.CurrentStatus},
		"web":   {Status: kstatus.InProgressStatus, Message: "Replicas: 0/1"},
		"api":   {Status: kstatus.FailedStatus, Message: "Progress deadline exceeded"},
		"cache": {Status: kstatus.NotFoundStatus},
	}
	r.WithHealth(func(o apply.ObjRef) *Health { return known[o.Name] })
	want := []PathHealth{
		{Path: ".", Health: "Unknown", Counts: HealthCounts{Unknown: 1}, Worst: ptr(ref("loose"))},
		{Path: "apps/web", Health: "Failed", Counts: HealthCounts{InProgress: 1, Failed: 1, NotFound: 1}, Worst: ptr(ref("api")), Message: "Progress deadline exceeded"},
		{Path: "infra/db", Health: "Current", Counts: HealthCounts{Current: 1}},
	}
	if diff := cmp.Diff(want, r.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(HealthCounts{Current: 1, InProgress: 1, Failed: 1, NotFound: 1, Unknown: 1}, r.Summary.Health); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if r.Results[1].Health != "InProgress" || r.Results[1].HealthMessage != "Replicas: 0/1" || r.Results[4].Health != "Unknown" {
		t.Errorf("results %+v", r.Results)
	}
	if r.Healthy() {
		t.Errorf("Healthy with a Failed path")
	}
	r.WithHealth(func(apply.ObjRef) *Health { return &Health{Status: kstatus.CurrentStatus} })
	if !r.Healthy() || len(r.Paths) != 3 {
		t.Errorf("every object Current: healthy %t, paths %+v", r.Healthy(), r.Paths)
	}
}

func ptr[T any](v T) *T { return &v }

func TestSyncStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	db := apply.ObjRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "n", Name: "db"}
	report := func(s Summary, paths ...PathHealth) Report {
		r := Report{Revision: "abc", Summary: s, Paths: paths, Results: make([]apply.Result, 2)}
		return r
	}
	current := PathHealth{Path: ".", Health: "Current"}
	rolling := PathHealth{Path: "infra/db", Health: "InProgress", Worst: &db, Message: "Replicas: 0/1"}
	failed := PathHealth{Path: "infra/db", Health: "Failed", Worst: &db, Message: "Progress deadline exceeded"}
	type want struct{ ready, healthy, reconciling, stalled, readyReason string }
	for _, tc := range []struct {
		name string
		r    Report
		want want
	}{
		{"all Current", report(Summary{Health: HealthCounts{Current: 2}}, current), want{"True", "True", "False", "False", "Succeeded"}},
		{"rolling out", report(Summary{Health: HealthCounts{Current: 1, InProgress: 1}}, current, rolling), want{"False", "False", "True", "False", "InProgress"}},
		{"held on a dependency", report(Summary{Held: 1, Health: HealthCounts{InProgress: 1, NotFound: 1}}, rolling), want{"False", "False", "True", "False", "Held"}},
		{"Failed", report(Summary{Health: HealthCounts{Current: 1, Failed: 1}}, current, failed), want{"False", "False", "False", "True", "Failed"}},
		{"an apply failed", report(Summary{Errors: 1, Health: HealthCounts{Current: 1, NotFound: 1}}, current), want{"False", "True", "False", "True", "ApplyFailed"}},
		{"the sweep failed", Report{Error: "resolve head: 503"}, want{"False", "", "False", "True", "SweepFailed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := SyncStatus(tc.r, 3, gitsync.GitSyncStatus{}, t0)
			got := want{}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != 3 {
					t.Errorf("%s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
				}
				switch c.Type {
				case ConditionReady:
					got.ready, got.readyReason = string(c.Status), c.Reason
				case ConditionHealthy:
					got.healthy = string(c.Status)
				case ConditionReconciling:
					got.reconciling = string(c.Status)
				case ConditionStalled:
					got.stalled = string(c.Status)
				}
			}
			if got != tc.want {
				t.Errorf("conditions %+v, want %+v\n%+v", got, tc.want, st.Conditions)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d", st.ObservedGeneration)
			}
		})
	}
	// unchanged: equal, transition times kept; a flip moves only that condition's time
	r := report(Summary{Health: HealthCounts{Current: 1, InProgress: 1}}, current, rolling)
	first := SyncStatus(r, 1, gitsync.GitSyncStatus{}, t0)
	if again := SyncStatus(r, 1, first, t1); !equality.Semantic.DeepEqual(first, again) {
		t.Errorf("the same report at a later time changed the status:\n%s", cmp.Diff(first, again))
	}
	done := SyncStatus(report(Summary{Health: HealthCounts{Current: 2}}, current), 1, first, t1)
	if c := meta.FindStatusCondition(done.Conditions, ConditionHealthy); c.LastTransitionTime != t1 {
		t.Errorf("Healthy flipped at %v, want %v", c.LastTransitionTime, t1)
	}
	if c := meta.FindStatusCondition(done.Conditions, ConditionStalled); c.LastTransitionTime != t0 {
		t.Errorf("Stalled did not flip but moved to %v", c.LastTransitionTime)
	}
	if m := meta.FindStatusCondition(first.Conditions, ConditionHealthy).Message; m != "path infra/db is InProgress: Deployment/n/db: Replicas: 0/1 (1 of 2 objects not Current)" {
		t.Errorf("Healthy message %q", m)
	}
	if len(first.UnhealthyPaths) != 1 || first.UnhealthyPaths[0].Object != "Deployment/n/db" {
		t.Errorf("unhealthy paths %+v", first.UnhealthyPaths)
	}
}
