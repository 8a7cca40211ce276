package reconcile

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestKindStatus: a Kind's own status (Entry.Status) replaces the phase in its vocabulary,
// keeps the FieldsNotMaterialized condition's transition time while it holds, removes it when
// nothing is left unmaterialized, and leaves Kinds without Entry.Status untouched.
func TestKindStatus(t *testing.T) {
	reg := kinds.Builtin()
	indexer := reg[kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: "LuxIndexer"}]
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	ready := drive.Status{Phase: v1.PhaseRunning, ObservedGeneration: 3, ReadyReplicas: 1,
		Conditions: []metav1.Condition{{Type: drive.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: t0}}}
	withStorage := &luxnetwork.LuxIndexer{ObjectMeta: metav1.ObjectMeta{Name: "i", Namespace: "ns"},
		Spec: luxnetwork.LuxIndexerSpec{NetworkRef: "n", ChainAlias: "C", ChainID: 1, Storage: &luxnetwork.IndexerStorageSpec{Size: "1Gi"}}}

	next, fields := kindStatus(indexer, withStorage, drive.Status{}, ready, t0)
	if next.Phase != "Ready" || fields["apiEndpoint"] != "http://i-indexer.ns.svc:4000" {
		t.Fatalf("phase %q fields %v", next.Phase, fields)
	}
	c := meta.FindStatusCondition(next.Conditions, ConditionFieldsNotMaterialized)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 3 || !c.LastTransitionTime.Equal(&t0) {
		t.Fatalf("condition %+v", c)
	}
	// an hour later, still not materialized: the transition time stays, so the status is equal
	again, _ := kindStatus(indexer, withStorage, next, ready, t1)
	if !drive.Equal(next, again) {
		t.Errorf("an unchanged CR gave a different status: %+v then %+v", next, again)
	}
	// the field removed: the condition goes
	plain := withStorage.DeepCopy()
	plain.Spec.Storage = nil
	gone, _ := kindStatus(indexer, plain, next, ready, t1)
	if meta.FindStatusCondition(gone.Conditions, ConditionFieldsNotMaterialized) != nil {
		t.Errorf("the condition stays with nothing unmaterialized: %+v", gone.Conditions)
	}
	// a Kind without Entry.Status: untouched
	svc := reg[kinds.Ref{Placement: kinds.PlacementCanonical, Kind: "Service"}]
	same, none := kindStatus(svc, &v1.Service{}, drive.Status{}, ready, t1)
	if !drive.Equal(same, ready) || none != nil {
		t.Errorf("Service status changed: %+v %v", same, none)
	}
}

// TestKindStatusWarnings: a build's Warning (a luxfi network whose seed archive has no
// expectedHash) is a condition of its own, True with the build's reason and message, kept
// with its transition time while it holds and reported as an Event only when it appears;
// the hash given, the condition goes.
func TestKindStatusWarnings(t *testing.T) {
	network := kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: "LuxNetwork"}]
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	running := drive.Status{Phase: v1.PhaseRunning, ObservedGeneration: 2,
		Conditions: []metav1.Condition{{Type: drive.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: t0}}}
	cr := &luxnetwork.LuxNetwork{ObjectMeta: metav1.ObjectMeta{Name: "mainnet", Namespace: "lux"},
		Spec: luxnetwork.LuxNetworkSpec{SeedRestore: &luxnetwork.SeedRestoreSpec{Enabled: true, ObjectStoreURL: "https://store.example/lux/mainnet.tar.zst"}}}

	first, _ := kindStatus(network, cr, drive.Status{}, running, t0)
	c := meta.FindStatusCondition(first.Conditions, kinds.ReasonSeedRestoreUnverified)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != kinds.ReasonSeedRestoreUnverified ||
		c.ObservedGeneration != 2 || !c.LastTransitionTime.Equal(&t0) || c.Message == "" {
		t.Fatalf("warning condition %+v in %+v", c, first.Conditions)
	}
	if w := newWarnings(drive.Status{}, first); len(w) != 1 || w[0].Type != kinds.ReasonSeedRestoreUnverified {
		t.Fatalf("a new warning gives one Event: %+v", w)
	}
	// and the status write carries it (it once dropped every condition type it did not own)
	patch, err := statusPatch(metav1.GroupVersionKind{Group: "lux.network", Version: "v1alpha1", Kind: "LuxNetwork"}, cr, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(patch.Object, "status", "conditions")
	if !slices.ContainsFunc(conds, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == kinds.ReasonSeedRestoreUnverified }) {
		t.Errorf("the status patch drops the warning: %v", conds)
	}
	again, _ := kindStatus(network, cr, first, running, t1)
	if !drive.Equal(first, again) {
		t.Errorf("an unchanged CR gave a different status: %+v then %+v", first, again)
	}
	if w := newWarnings(first, again); len(w) != 0 {
		t.Errorf("a warning that holds is reported again: %+v", w)
	}
	hashed := cr.DeepCopy()
	hashed.Spec.SeedRestore.ExpectedHash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	gone, _ := kindStatus(network, hashed, again, running, t1)
	if meta.FindStatusCondition(gone.Conditions, kinds.ReasonSeedRestoreUnverified) != nil {
		t.Errorf("the warning stays once the archive has a hash: %+v", gone.Conditions)
	}
}

func TestReadyEvent(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: drive.ConditionReady, Status: status, Reason: reason}
	}
	notReady := cond(metav1.ConditionFalse, drive.ReasonNotReady)
	ready := cond(metav1.ConditionTrue, drive.ReasonAvailable)
	failed := cond(metav1.ConditionFalse, drive.ReasonFailed)
	for _, tc := range []struct {
		name          string
		before, after *metav1.Condition
		want          bool
	}{
		{"a new CR's first not-ready", nil, notReady, false},
		{"a new CR ready at once", nil, ready, false},
		{"a new CR failing", nil, failed, true},
		{"becomes ready", notReady, ready, true},
		{"falls back from ready", ready, notReady, true},
		{"still not ready", notReady, notReady, false},
		{"still ready", ready, ready, false},
		{"recovers from a failure into rolling out", failed, notReady, false},
		{"fails while rolling out", notReady, failed, true},
		{"no condition", ready, nil, false},
	} {
		if got := readyEvent(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: readyEvent = %v, want %v", tc.name, got, tc.want)
		}
	}
}
