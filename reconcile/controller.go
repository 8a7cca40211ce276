package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/children"
	"github.com/openuniverse/operator/reconcile/render"
)

// KindReconciler turns the CRs of one Kind into their children. Reconcile runs its phases
// (build → apply → prune → observe) over one scope, then writes the status once.
type KindReconciler struct {
	Client   client.Client // cached reads, direct writes
	Applier  *apply.Applier
	Entry    kinds.Entry
	Context  kinds.Context
	Owned    []schema.GroupVersionKind // children GVKs served by this cluster
	Inputs   []schema.GroupVersionKind // the Entry's input GVKs served by this cluster
	Recorder events.EventRecorder
	Now      func() time.Time
	// Upgrades runs the upgrade machine for Service-shaped Kinds; nil turns it off.
	Upgrades *Upgrades

	// memory is what this process remembers per CR between reconciles (memories).
	memory memories
}

// memory is what a Kind controller remembers of one CR between its reconciles: the last
// apply of each child (so an unchanged child is not applied again), the consecutive
// transient failures (the backoff), and when it last wrote the status. A restart forgets
// it: the first reconcile then applies every child through the get-and-dry-run path,
// which writes nothing when they are in sync.
type memory struct {
	uid      types.UID
	children map[apply.ObjRef]*apply.Record
	failures int
	// statusAt is when this process last wrote the CR's status, statusFrom the CR's
	// resourceVersion that write was computed from.
	statusAt   time.Time
	statusFrom string
	// seenAt is when this process first summarized the CR's status (statusDue's first look).
	seenAt time.Time
	// upgrading is set while the CR's upgrade is Preflighting or Rolling: the pod watch
	// (upgradePod) wakes it then, and only then. Read by the watch's handler, hence atomic.
	upgrading atomic.Bool
	// echo is the resourceVersion our last status write returned, while nothing waits for
	// that write to come back through the watch (nil otherwise): the CR's update event of
	// that resourceVersion is our own write, and wakes nothing (ownEcho). Read by the
	// watch's predicate, hence atomic.
	echo atomic.Pointer[string]
}

// memories holds the memory of every CR; one reconcile at a time touches a CR's entry
// (the workqueue never hands one key to two workers), the map itself is shared.
type memories struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*memory
}

// of returns the memory of the CR cr, a fresh one when cr is new or was recreated.
func (ms *memories) of(cr metav1.Object) *memory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	key := types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}
	if ms.m == nil {
		ms.m = map[types.NamespacedName]*memory{}
	}
	m := ms.m[key]
	if m == nil || m.uid != cr.GetUID() {
		m = &memory{uid: cr.GetUID(), children: map[apply.ObjRef]*apply.Record{}}
		ms.m[key] = m
	}
	return m
}

// upgrading tells whether the CR at key has an upgrade its pods decide (memory.upgrading);
// false for a CR this process has not reconciled yet.
func (ms *memories) upgrading(key types.NamespacedName) bool {
	ms.mu.Lock()
	m := ms.m[key]
	ms.mu.Unlock()
	return m != nil && m.upgrading.Load()
}

// echoed tells whether the CR at key, at resourceVersion rv, is our own last status write
// coming back (memory.echo).
func (ms *memories) echoed(key types.NamespacedName, rv string) bool {
	ms.mu.Lock()
	m := ms.m[key]
	ms.mu.Unlock()
	if m == nil || rv == "" {
		return false
	}
	echo := m.echo.Load()
	return echo != nil && *echo == rv
}

// ownEcho reports a CR update that is our own last status write coming back through the
// watch (memories.echoed) and nothing else: the generation, labels and annotations as they
// were, the CR not being deleted. Each status write woke its CR once more only to find the
// status it had just written (1.56 reconciles per CR at 5 000 Service CRs).
func (r *KindReconciler) ownEcho(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	if o == nil || n == nil || !r.memory.echoed(client.ObjectKeyFromObject(n), n.GetResourceVersion()) {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() && n.GetDeletionTimestamp() == nil &&
		maps.Equal(o.GetLabels(), n.GetLabels()) && maps.Equal(o.GetAnnotations(), n.GetAnnotations())
}

func (ms *memories) forget(key types.NamespacedName) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, key)
}

// scope is what one reconcile of one CR knows; each phase reads what the earlier ones found
// and adds its own.
type scope struct {
	cr       kinds.Object
	previous drive.Status      // the status as read with the CR
	obs      drive.Observation // what Summarize decides from
	desired  []*unstructured.Unstructured
	results  []apply.Result
	outcome  Outcome
	// halted is set when the build materializes nothing (a Halt or a build error): the later
	// phases then neither apply, nor delete, nor observe.
	halted bool
	// upgrade is what the upgrade phase decided, nil when it did not run.
	upgrade *upgradeStep
	// takeover is what keep and prune found about another operator's children.
	takeover takeover
	// mem is this CR's memory; applied holds the children as this reconcile's applies
	// returned them (fresher than the cache); wake what the phases found for next.
	mem     *memory
	applied map[apply.ObjRef]*unstructured.Unstructured
	// live holds the children as the cache showed them to this reconcile (nil: absent), read
	// once (child).
	live map[apply.ObjRef]*unstructured.Unstructured
	wake Wake
}

// phase is one step of a reconcile. An error is an infrastructure failure (reading the
// cache, deleting a child), classified by apply.ClassOf in finish: a transient one ends the
// reconcile without a status write (retried with backoff), any other ends it Stalled with
// its reason (drive.Observation.PhaseErr).
type phase func(ctx context.Context, s *scope) error

// phases are the steps of a reconcile, in order. A new step (an image override before
// apply, a cutover rule in prune) is one more entry here.
func (r *KindReconciler) phases() []phase {
	return []phase{r.build, r.upgrade, r.keep, r.apply, r.prune, r.observe}
}

// Reconcile implements reconcile.Reconciler for one CR.
func (r *KindReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	cr := r.Entry.New()
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cr.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil // children go with the CR through their owner references
	}
	previous, err := readStatus(cr)
	if err != nil {
		return ctrl.Result{}, apply.TerminalError(err)
	}
	mem := r.memory.of(cr)
	if lag, ok := statusLag(cr.GetResourceVersion(), mem.statusFrom, mem.statusAt, r.Now()); ok {
		// The cache still shows the CR from before our last status write: deciding from it
		// would replay an older state (the upgrade machine would re-apply an image it has
		// since rolled back). Our write's watch event brings the next reconcile.
		mem.echo.Store(nil)
		logr.FromContextOrDiscard(ctx).V(1).Info("CR read from before our last status write, waiting for the cache", "resourceVersion", cr.GetResourceVersion(), "requeueAfter", lag.String())
		return ctrl.Result{RequeueAfter: lag}, nil
	}
	s := &scope{cr: cr, previous: previous, mem: mem,
		obs: drive.Observation{Generation: cr.GetGeneration(), Now: metav1.NewTime(r.Now()), Previous: previous.Conditions}}
	defer func() { res, err = r.finish(ctx, s, err) }()
	for _, p := range r.phases() {
		if err := p(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// finish ends every reconcile: a phase error is classified once (transient: retried with
// backoff, the status left as it was; otherwise: the CR Stalled with its reason, not
// retried until the CR changes); the status is summarized, written once, and the requeue
// decided by next.
func (r *KindReconciler) finish(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	if err != nil {
		if apply.ClassOf(err) == condition.Transient {
			log.Info("Reconcile interrupted, retrying with backoff", "error", err.Error())
			return ctrl.Result{}, err
		}
		log.Info("Reconcile failed, Stalled until the CR or the operator's RBAC changes", "error", err.Error())
		s.obs.PhaseErr = apply.PublicError(err) // the condition and its Event: the apiserver's words masked
	}
	s.obs.Denied, s.obs.Rejected, s.obs.Failed = s.outcome.Denied, s.outcome.Rejected, s.outcome.Failed
	status := drive.Summarize(s.obs)
	if s.upgrade != nil {
		status.Conditions = withCondition(status.Conditions, s.previous.Conditions, s.upgrade.condition, s.obs.Generation, s.obs.Now)
	}
	r.reportTakeover(ctx, s, &status)
	if s.mem.seenAt.IsZero() {
		s.mem.seenAt = s.obs.Now.Time
	}
	write, wait := statusDue(s.previous, status, s.mem.statusAt, s.mem.seenAt, s.obs.Now.Time)
	// A step of the upgrade machine is its state: written at once, never held back.
	if write || (s.upgrade != nil && s.upgrade.changed) {
		rv, werr := r.writeStatus(ctx, s.cr, s.previous, status, s.upgrade)
		if werr != nil {
			if apply.ClassOf(werr) == condition.Transient {
				log.Info("Status write failed, retrying with backoff", "error", werr.Error())
				return ctrl.Result{}, werr
			}
			return ctrl.Result{}, apply.TerminalError(werr)
		}
		if rv != "" {
			s.mem.statusAt, s.mem.statusFrom = s.obs.Now.Time, s.cr.GetResourceVersion()
			// A step of the upgrade machine is decided again from the CR it wrote: its echo
			// is the next step's wake-up. Any other write's echo would only confirm it.
			if s.upgrade == nil || !s.upgrade.changed {
				s.mem.echo.Store(&rv)
			} else {
				s.mem.echo.Store(nil)
			}
		}
		wait = 0
	}
	if err != nil {
		return ctrl.Result{}, apply.TerminalError(err) // Stalled now says why; the CR's change wakes us
	}
	if len(s.outcome.Failed) > 0 {
		s.mem.failures++
	} else {
		s.mem.failures = 0
	}
	s.wake.Failures, s.wake.StuckPods, s.wake.Status = s.mem.failures, s.obs.PodProblem != "", wait
	res, why := next(status, s.outcome, s.wake)
	if up := s.upgrade; up != nil && up.requeue > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > up.requeue) {
		res.RequeueAfter, why = up.requeue, "look at the upgrade again (a backstop: its pods and Deployment wake it)"
	}
	log.V(1).Info("Reconciled", "phase", status.Phase, "message", status.Message, "requeueAfter", res.RequeueAfter.String(), "next", why)
	return res, nil
}

// build runs the Kind's builder. A Halt or a build error is terminal for this generation:
// it is recorded for the status, and nothing is applied or deleted.
func (r *KindReconciler) build(ctx context.Context, s *scope) error {
	bc := r.Context
	inputs, err := r.inputs(ctx, s.cr.GetNamespace())
	if err != nil {
		return err
	}
	bc.Inputs = inputs
	desired, err := r.Entry.Build(s.cr, bc)
	if err == nil {
		// The normalization render prints (native defaults such as port protocols), so
		// the controller applies, and owns, exactly what `operator render` shows.
		err = normalize.UnstructuredList(desired)
	}
	if halt, ok := kinds.AsHalt(err); ok {
		s.obs.Halt, s.halted = halt, true
		return nil
	}
	if err != nil {
		s.obs.BuildErr, s.halted = err, true
		return nil
	}
	s.desired = desired
	return nil
}

// inputs lists, from the cache, the objects of the Kinds the Entry's build reads, in the CR's
// namespace (a LuxNetwork's LuxChains), through render.ListInputs: the one function the
// review paths (render --from-cluster, diff --takeover, the plane's live diff) also use. An
// input Kind the cluster does not serve is not in r.Inputs.
func (r *KindReconciler) inputs(ctx context.Context, ns string) ([]*unstructured.Unstructured, error) {
	return render.ListInputs(ctx, r.Client, r.Inputs, ns)
}

// apply server-side applies the built children that need it and sorts the results by
// what they mean. A child whose desired state is the one this process last applied, and
// whose live state (in the Owns cache) has not moved since, is in sync without a request
// (apply.Stale). Otherwise a child the cache knows about (or knows absent) after an apply of
// ours costs one forced apply; one never applied by this process (the first reconcile
// after a start) goes through the dry-run path from the cached copy, which writes only when
// it drifted.
func (r *KindReconciler) apply(ctx context.Context, s *scope) error {
	if s.halted {
		return nil
	}
	if s.takeover.force {
		// the CR asks to recreate what differs in immutable fields: every child through
		// the forcing path, and nothing remembered (the next reconcile reads them again)
		s.results = r.Applier.ApplyForced(ctx, s.desired)
		clear(s.mem.children)
		s.outcome = outcome(s.results)
		r.logResults(ctx, s.cr, s.results)
		return nil
	}
	now := r.Now()
	s.results = make([]apply.Result, len(s.desired))
	s.applied = map[apply.ObjRef]*unstructured.Unstructured{}
	type job struct {
		i      int
		digest string
		live   *unstructured.Unstructured // nil: absent
		rec    *apply.Record
	}
	var known, cold []job
	for i, d := range s.desired {
		ref := apply.RefOf(d)
		j := job{i: i, digest: apply.Digest(d), rec: s.mem.children[ref]}
		watched := r.watches(d.GroupVersionKind())
		if watched {
			live, err := r.child(ctx, s, d)
			if err != nil {
				return err
			}
			j.live = live
		}
		fp := apply.Fingerprint(j.live, r.Applier.Manager)
		if j.rec != nil && fp == j.rec.After {
			j.rec.Seen = true
		}
		stale, lag := apply.Stale(j.digest, j.rec, apply.Live{Watched: watched, Fingerprint: fp}, now)
		if lag > 0 && (s.wake.Lag == 0 || lag < s.wake.Lag) {
			s.wake.Lag = lag
		}
		switch {
		case !stale:
			s.results[i] = apply.Result{Object: ref, Action: apply.InSync}
		case watched && (j.rec != nil || j.live == nil):
			known = append(known, j)
		default:
			cold = append(cold, j)
		}
	}
	var mu sync.Mutex // remember writes the CR's memory
	apply.FanOut(len(known), r.Applier.Concurrency, func(k int) {
		j := known[k]
		var before metav1.Object
		if j.live != nil {
			before = j.live
		}
		res, after := r.Applier.ApplyKnown(ctx, s.desired[j.i], before)
		mu.Lock()
		defer mu.Unlock()
		s.results[j.i] = res
		r.remember(s, j.i, j.digest, j.live, after, res)
	})
	if len(cold) > 0 {
		objs, cached := make([]*unstructured.Unstructured, len(cold)), make([]*unstructured.Unstructured, len(cold))
		for k, j := range cold {
			objs[k], cached[k] = s.desired[j.i], j.live
		}
		results, lives := r.Applier.ApplyObserved(ctx, objs, cached)
		for k, j := range cold {
			s.results[j.i] = results[k]
			if r.watches(objs[k].GroupVersionKind()) {
				r.remember(s, j.i, j.digest, j.live, lives[k], results[k])
			}
		}
	}
	s.outcome = outcome(s.results)
	r.logResults(ctx, s.cr, s.results)
	return nil
}

// remember records an apply of child i: its fingerprint before and after, when the apply
// succeeded; a failed apply is forgotten, so the child is applied again.
func (r *KindReconciler) remember(s *scope, i int, digest string, before, after *unstructured.Unstructured, res apply.Result) {
	ref := apply.RefOf(s.desired[i])
	if res.Action == apply.Failed || res.Action == apply.Denied || after == nil {
		delete(s.mem.children, ref)
		return
	}
	s.applied[ref] = after
	s.mem.children[ref] = &apply.Record{Digest: digest, OK: true, Before: apply.Fingerprint(before, r.Applier.Manager),
		After: apply.Fingerprint(after, r.Applier.Manager), At: r.Now()}
}

// watches reports whether the Owns caches watch children of gvk.
func (r *KindReconciler) watches(gvk schema.GroupVersionKind) bool {
	for _, o := range r.Owned {
		if o == gvk {
			return true
		}
	}
	return false
}

// prune deletes the children this CR controls that the build no longer produces, such as
// the HPA after autoscaling is turned off, once every child applied cleanly. It never
// touches an object another owner controls, nor one this operator never applied (another
// operator's, under other names): those are reported as leftovers.
func (r *KindReconciler) prune(ctx context.Context, s *scope) error {
	if s.halted || !s.outcome.Clean() {
		return nil
	}
	for _, gvk := range r.Owned {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Client.List(ctx, list, client.InNamespace(s.cr.GetNamespace()), client.MatchingFields{indexController: string(s.cr.GetUID())}, MetadataOnly{}); err != nil {
			return fmt.Errorf("list %s in %s: %w", gvk.Kind, s.cr.GetNamespace(), err)
		}
		s.takeover.leftover = append(s.takeover.leftover, children.Leftovers(s.desired, list.Items, s.cr.GetUID(), kinds.ManagerKinds)...)
		for _, child := range children.Prunable(s.desired, list.Items, s.cr.GetUID(), kinds.ManagerKinds) {
			err := r.Client.Delete(ctx, child, client.Preconditions{UID: ptrUID(child.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s: %w", apply.RefOf(child), err)
			}
			delete(s.mem.children, apply.RefOf(child))
			logr.FromContextOrDiscard(ctx).Info("Deleted child, no longer built", "object", apply.RefOf(child).String(), "action", apply.Deleted)
		}
	}
	s.takeover.leftKnown = true
	return nil
}

func ptrUID(u types.UID) *types.UID { return &u }

// observe reads the applied children back from the cache and computes their kstatus, the
// main workload's replicas and, while it is not ready, what its pods are stuck on.
func (r *KindReconciler) observe(ctx context.Context, s *scope) error {
	if s.halted {
		return nil
	}
	for _, d := range s.desired {
		live := s.applied[apply.RefOf(d)] // what our apply just returned: the cache may not show it yet
		if live == nil {
			var err error
			if live, err = r.child(ctx, s, d); err != nil {
				return err
			}
		}
		if live == nil { // the cache has not seen our apply yet
			s.obs.Children = append(s.obs.Children, drive.Child{Ref: apply.RefOf(d).String(), Status: kstatus.InProgressStatus, Message: "not observed yet"})
			continue
		}
		res, err := kstatus.Compute(live)
		if err != nil {
			return fmt.Errorf("compute status of %s: %w", apply.RefOf(d), err)
		}
		s.obs.Children = append(s.obs.Children, drive.Child{Ref: apply.RefOf(d).String(), Status: res.Status, Message: res.Message})
		if s.obs.Workload == nil && r.Entry.IsWorkload(d.GroupVersionKind().GroupKind()) {
			if err := r.observeWorkload(ctx, live, &s.obs); err != nil {
				return err
			}
		}
	}
	return nil
}

// child returns child d as the cache shows it, nil when the cache has none. A reconcile reads
// each child once (keep, apply and observe share it, s.live): a child of a built-in kind is
// converted from the typed cache on every read, which was four conversions of each child per
// reconcile.
func (r *KindReconciler) child(ctx context.Context, s *scope, d *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := apply.RefOf(d)
	if live, ok := s.live[ref]; ok {
		return live, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(d.GroupVersionKind())
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	if s.live == nil {
		s.live = map[apply.ObjRef]*unstructured.Unstructured{}
	}
	s.live[ref] = live
	return live, nil
}

func (r *KindReconciler) observeWorkload(ctx context.Context, live *unstructured.Unstructured, obs *drive.Observation) error {
	desired, found, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if !found {
		desired = 1
	}
	ready, _, _ := unstructured.NestedInt64(live.Object, "status", "readyReplicas")
	obs.Workload = &drive.Replicas{Desired: int32(desired), Ready: int32(ready)} //nolint:gosec // replicas are int32 fields of the workload's schema
	if ready >= desired {
		return nil
	}
	sel, _, _ := unstructured.NestedStringMap(live.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		return nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(live.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		return fmt.Errorf("list pods of %s: %w", apply.RefOf(live), err)
	}
	p := drive.PodProblem(pods.Items)
	obs.PodProblem, obs.Restarts = p.Message, p.Restarts
	return nil
}

// logResults writes one line per child that changed or was refused, saying what happens
// next; drift reverted by the apply is also an event on the CR.
func (r *KindReconciler) logResults(ctx context.Context, cr kinds.Object, results []apply.Result) {
	log := logr.FromContextOrDiscard(ctx)
	for _, res := range results {
		switch res.Action {
		case apply.Created:
			log.Info("Applied child", "object", res.Object.String(), "action", res.Action)
		case apply.Updated:
			if len(res.DriftedBy) == 0 { // the CR's spec changed
				log.Info("Updated child", "object", res.Object.String(), "action", res.Action)
				continue
			}
			log.Info("Reverted drift", "object", res.Object.String(), "action", res.Action, "driftedBy", res.DriftedBy)
			metricDriftCorrections.WithLabelValues(r.Entry.Kind).Inc()
			r.event(cr, corev1.EventTypeWarning, apply.EventDriftReverted, "reverted %s (changed by %s)", res.Object.String(), joinNames(res.DriftedBy))
		case apply.Failed, apply.Denied:
			metricApplyErrors.WithLabelValues(r.Entry.Kind).Inc()
			if apply.ClassOf(res.Err) == condition.Transient {
				log.Info("Apply failed, retrying", "object", res.Object.String(), "action", res.Action, "reason", res.Message)
				continue
			}
			log.Info("Apply refused, not retrying until the CR or the operator's RBAC changes", "object", res.Object.String(), "action", res.Action, "reason", res.Message)
		}
	}
}

func (r *KindReconciler) event(cr kinds.Object, typ, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cr, nil, typ, reason, apply.ActionApply, note, args...)
	}
}

// errNoKinds is returned by SetupKinds when no Kind of the registry is installed.
var errNoKinds = errors.New("no Kind of the registry is installed in the cluster: install the CRDs first (operator install --crds-only)")
