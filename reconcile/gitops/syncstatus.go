package gitops

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/gitsync"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// Condition types of the GitSync status object, kstatus vocabulary: Ready is the summary
// (`kubectl wait --for=condition=Ready`), Healthy says every applied object is Current,
// Reconciling (abnormal-true) that something is still rolling out or held, Stalled
// (abnormal-true) that something failed and waits for a change.
const (
	ConditionReady       = "Ready"
	ConditionHealthy     = "Healthy"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// maxUnhealthyPaths bounds status.unhealthyPaths (the CRD's MaxItems).
const maxUnhealthyPaths = 20

// SyncStatus is the GitSync status a report (with its health, see Report.WithHealth)
// comes to, at the object's generation, keeping each condition's lastTransitionTime from
// prev while its status does not change. A report of a failed sweep keeps prev's health
// and says the sweep failed. It is pure.
func SyncStatus(r Report, generation int64, prev gitsync.GitSyncStatus, now metav1.Time) gitsync.GitSyncStatus {
	st := gitsync.GitSyncStatus{ObservedGeneration: generation, Revision: r.Revision, Conditions: slices.Clone(prev.Conditions)}
	set := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation, LastTransitionTime: now})
	}
	if r.Error != "" {
		st.Revision, st.Health, st.UnhealthyPaths = prev.Revision, prev.Health, prev.UnhealthyPaths
		set(ConditionReady, false, "SweepFailed", "the last sweep failed: "+source.TruncateBytes(r.Error, apply.PublicMessageMax))
		set(ConditionStalled, true, "SweepFailed", "retried on the next tick")
		set(ConditionReconciling, false, "SweepFailed", "")
		return st
	}
	h := r.Summary.Health
	st.Health = gitsync.HealthCounts{Current: count32(h.Current), InProgress: count32(h.InProgress), Failed: count32(h.Failed),
		Terminating: count32(h.Terminating), NotFound: count32(h.NotFound), Unknown: count32(h.Unknown)}
	var worst *PathHealth
	for i, p := range r.Paths {
		if p.Health == string(kstatus.CurrentStatus) {
			continue
		}
		if worst == nil || rank(kstatus.Status(p.Health)) < rank(kstatus.Status(worst.Health)) {
			worst = &r.Paths[i]
		}
		if len(st.UnhealthyPaths) < maxUnhealthyPaths {
			ph := gitsync.PathHealth{Path: p.Path, Health: p.Health, Message: source.TruncateBytes(p.Message, apply.PublicMessageMax)}
			if p.Worst != nil {
				ph.Object = p.Worst.String()
			}
			st.UnhealthyPaths = append(st.UnhealthyPaths, ph)
		}
	}
	total := len(r.Results)
	healthy := worst == nil
	if healthy {
		set(ConditionHealthy, true, string(kstatus.CurrentStatus), fmt.Sprintf("all %d applied objects are Current", total))
	} else {
		msg := fmt.Sprintf("path %s is %s", worst.Path, worst.Health)
		if worst.Worst != nil {
			msg += ": " + worst.Worst.String()
		}
		if worst.Message != "" {
			msg += ": " + worst.Message
		}
		set(ConditionHealthy, false, worst.Health, source.TruncateBytes(fmt.Sprintf("%s (%d of %d objects not Current)", msg, total-h.Current, total), apply.PublicMessageMax))
	}
	s := r.Summary
	failed := s.Errors+s.Denied > 0 || h.Failed > 0
	switch {
	case s.Errors+s.Denied > 0:
		set(ConditionStalled, true, "ApplyFailed", fmt.Sprintf("%d objects failed to apply, %d were denied (GET /gitops names them); retried each sweep", s.Errors, s.Denied))
	case h.Failed > 0:
		set(ConditionStalled, true, string(kstatus.FailedStatus), fmt.Sprintf("%d applied objects are Failed", h.Failed))
	default:
		set(ConditionStalled, false, "NotStalled", "")
	}
	progressing := !failed && (!healthy || s.Held > 0)
	switch {
	case progressing && s.Held > 0:
		set(ConditionReconciling, true, "Held", fmt.Sprintf("%d objects held until what they depend on is Current", s.Held))
	case progressing:
		set(ConditionReconciling, true, "Progressing", "waiting for the applied objects to become Current")
	default:
		set(ConditionReconciling, false, "NotReconciling", "")
	}
	switch {
	case s.Errors+s.Denied > 0:
		set(ConditionReady, false, "ApplyFailed", fmt.Sprintf("revision %s: %d objects not applied", r.Revision, s.Errors+s.Denied))
	case s.Held > 0:
		set(ConditionReady, false, "Held", fmt.Sprintf("revision %s: %d objects held", r.Revision, s.Held))
	case !healthy:
		set(ConditionReady, false, worst.Health, "revision "+r.Revision+" applied, not healthy yet: see the Healthy condition")
	default:
		set(ConditionReady, true, "Succeeded", fmt.Sprintf("revision %s applied, %d objects Current", r.Revision, total))
	}
	return st
}

// count32 is a count as the CRD's int32, saturating.
func count32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n) //nolint:gosec // bounded above
}

// syncStatus writes the GitSync object of State.Status, only when its status changes:
// after each sweep and when a watch sees an object's health move (kick), never on an idle
// sweep. A write that fails is logged and tried again once the status to write changes.
type syncStatus struct {
	mu      sync.Mutex
	last    *gitsync.GitSyncStatus // written, or tried
	gen     int64
	created bool
	kicks   chan struct{}
	stop    chan struct{}
	once    sync.Once
}

func newSyncStatus() *syncStatus {
	return &syncStatus{kicks: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (w *syncStatus) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

func (w *syncStatus) close() { w.once.Do(func() { close(w.stop) }) }

// statusCoalesce is how long the status writer gathers kicks before it writes: while a
// thousand objects become Current one watch event at a time, one write, not one per
// change of the counts.
const statusCoalesce = 500 * time.Millisecond

// run writes on each kick, at most once per statusCoalesce, until close.
func (w *syncStatus) run(write func()) {
	for {
		select {
		case <-w.stop:
			return
		case <-w.kicks:
		}
		select {
		case <-w.stop:
			return
		case <-time.After(statusCoalesce):
		}
		select { // the kicks of the wait are this write's
		case <-w.kicks:
		default:
		}
		write()
	}
}

// writeStatus writes the GitSync status the last report and the watches' health come to,
// when it differs from the last one written or tried.
func (s *Sweeper) writeStatus(ctx context.Context) {
	w := s.syncStatus
	if w == nil {
		return
	}
	last := s.Last()
	if last == nil {
		return
	}
	r := *last
	r.Results = slices.Clone(r.Results)
	if r.Error == "" {
		r.WithHealth(s.healthOf)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := context.WithTimeout(quiet(ctx), 30*time.Second)
	defer cancel()
	if err := s.ensureSyncObject(ctx, w); err != nil {
		s.logger().Info("GitSync status not written", "object", s.state.Namespace+"/"+s.state.Status, "error", err.Error())
		return
	}
	var prev gitsync.GitSyncStatus
	if w.last != nil {
		prev = *w.last
	}
	st := SyncStatus(r, w.gen, prev, metav1.NewTime(s.now().Truncate(time.Second)))
	if w.last != nil && equality.Semantic.DeepEqual(*w.last, st) {
		return
	}
	w.last = &st
	if err := s.applySyncStatus(ctx, st); err != nil {
		s.logger().Info("GitSync status not written, tried again when it changes", "object", s.state.Namespace+"/"+s.state.Status, "error", err.Error())
	}
}

// ensureSyncObject applies the GitSync object once per process, reading its generation
// and the status a previous process left (so an unchanged status is not written again).
func (s *Sweeper) ensureSyncObject(ctx context.Context, w *syncStatus) error {
	if w.created {
		return nil
	}
	u := s.syncObject()
	_ = unstructured.SetNestedMap(u.Object, map[string]any{}, "spec")
	if err := s.applier.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kinds.ManagerGitOps), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s (is the %s CRD installed?): %w", gitsync.Kind, u.GetNamespace(), u.GetName(), gitsync.Kind, err)
	}
	w.created, w.gen = true, u.GetGeneration()
	if m, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
		var st gitsync.GitSyncStatus
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st) == nil {
			w.last = &st
		}
	}
	return nil
}

func (s *Sweeper) applySyncStatus(ctx context.Context, st gitsync.GitSyncStatus) error {
	u := s.syncObject()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	u.Object["status"] = m
	if err := s.applier.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kinds.ManagerGitOps), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the status of %s %s/%s: %w", gitsync.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

func (s *Sweeper) syncObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gitsync.GroupVersion(s.state.APIGroup).WithKind(gitsync.Kind))
	u.SetNamespace(s.state.Namespace)
	u.SetName(s.state.Status)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "universe-operator", "app.kubernetes.io/component": "gitops-status"})
	return u
}

func (s *Sweeper) logger() logr.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}
