package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// ConditionKindControllers is the condition of a Cluster registration that says whether the
// Kind controllers run on that cluster, and which namespaces they watch.
const ConditionKindControllers = "KindControllers"

// Reasons of the KindControllers condition.
const (
	ReasonEngaged       = "Engaged"       // the controllers run on the cluster
	ReasonUnreachable   = "Unreachable"   // Reach refused the registration or the cluster did not answer
	ReasonNoKindsServed = "NoKindsServed" // the cluster serves none of the universe Kinds
)

// DefaultClustersResync is how often a registration is reached again: a rotated credential
// is picked up, and an unreachable cluster retried, within it.
const DefaultClustersResync = time.Minute

// Clusters runs the Kind controllers on every registered cluster of the fleet. Each
// registration gets one controller-runtime cluster.Cluster, built from its Bound's config
// (a bounded registration's transport refuses every request outside the bound before it
// leaves), whose cache feeds the same KindReconciler the home cluster runs through
// source.Kind; children are applied through the Bound's gated client and the status is
// written to the CR on that cluster. A registration is engaged when its Cluster CR appears,
// re-engaged when its spec or credential changes (Bound.Same), and disengaged when it is
// deleted or can no longer be reached: its context is cancelled, which stops its
// controllers and its cache, and its clients are forgotten.
//
// controller-runtime v0.25 has no way to remove a source from a running controller, nor a
// runnable from a manager: so Clusters itself is the one runnable the manager holds, and it
// starts and stops each cluster and that cluster's controllers under a context of its own.
type Clusters struct {
	// Home is the manager of the operator's own cluster: its cache holds the Cluster CRs,
	// its scheme types every cluster's objects.
	Home     ctrl.Manager
	Fleet    *fleet.Fleet
	Registry kinds.Registry
	Group    string
	Options  []SetupOption
	// Resync is DefaultClustersResync when zero.
	Resync time.Duration
	Log    logr.Logger

	mu      sync.Mutex
	base    context.Context
	engaged map[string]*engagement
}

// engagement is one registered cluster's running controllers.
type engagement struct {
	bound   *fleet.Bound
	org     string
	kinds   int
	missing []schema.GroupVersionKind
	served  func(schema.GroupVersionKind) bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// NeedLeaderElection is true: only the leader reconciles, on every cluster.
func (c *Clusters) NeedLeaderElection() bool { return true }

// Start watches the Cluster CRs of the home cluster until ctx ends, then stops every
// engaged cluster.
func (c *Clusters) Start(ctx context.Context) error {
	c.mu.Lock()
	c.base = ctx
	c.mu.Unlock()
	defer c.disengageAll()
	ctl, err := controller.NewUnmanaged("fleet-clusters", controller.Options{Reconciler: c, SkipNameValidation: ptr.To(true),
		Logger: c.Log})
	if err != nil {
		return err
	}
	if err := ctl.Watch(source.Kind(c.Home.GetCache(), &fleetv1.Cluster{}, &handler.TypedEnqueueRequestForObject[*fleetv1.Cluster]{})); err != nil {
		return err
	}
	return ctl.Start(ctx)
}

func (c *Clusters) resync() time.Duration {
	if c.Resync > 0 {
		return c.Resync
	}
	return DefaultClustersResync
}

// Engaged returns the names of the clusters whose controllers run, sorted.
func (c *Clusters) Engaged() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.engaged))
	for name := range c.engaged {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Reconcile engages, re-engages or disengages one registration.
func (c *Clusters) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := c.Log.WithValues("cluster", req.Name)
	var cr fleetv1.Cluster
	if err := c.Home.GetClient().Get(ctx, req.NamespacedName, &cr); err != nil {
		if apierrors.IsNotFound(err) {
			c.disengage(req.Name, log, "registration deleted")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cr.DeletionTimestamp != nil {
		c.disengage(cr.Name, log, "registration being deleted")
		return ctrl.Result{}, nil
	}
	bound, err := c.reach(ctx, &cr)
	if err != nil {
		c.disengage(cr.Name, log, "registration not reachable")
		return ctrl.Result{RequeueAfter: c.resync()}, c.condition(ctx, &cr, metav1.ConditionFalse, ReasonUnreachable, err.Error())
	}
	c.mu.Lock()
	e := c.engaged[cr.Name]
	c.mu.Unlock()
	if e != nil && e.bound.Same(bound) && !servedNow(e) {
		return ctrl.Result{RequeueAfter: c.resync()}, nil
	}
	if e != nil {
		c.disengage(cr.Name, log, "registration's spec, credential or served Kinds changed")
	}
	e, err = c.engage(bound, log)
	if err != nil {
		reason := ReasonUnreachable
		if errors.Is(err, errNoKinds) {
			reason = ReasonNoKindsServed
		}
		return ctrl.Result{RequeueAfter: c.resync()}, c.condition(ctx, &cr, metav1.ConditionFalse, reason, err.Error())
	}
	return ctrl.Result{RequeueAfter: c.resync()}, c.condition(ctx, &cr, metav1.ConditionTrue, ReasonEngaged, engagedMessage(e))
}

// reach is the registration's Bound, reached as the registration's own org: the caller is
// made from the org the Cluster CR declares, and Reach looks the name up in that org's
// index and its derived credential ref only.
func (c *Clusters) reach(ctx context.Context, cr *fleetv1.Cluster) (*fleet.Bound, error) {
	caller, err := fleet.PathCaller(cr.Spec.Org)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: org %q: %w", cr.Name, cr.Spec.Org, err)
	}
	return c.Fleet.Reach(fleet.WithCaller(ctx, caller), cr.Name)
}

// servedNow reports whether a Kind the engaged cluster did not serve is served now (its CRD
// was installed since), so the cluster is engaged again with that Kind's controller.
func servedNow(e *engagement) bool {
	return slices.ContainsFunc(e.missing, e.served)
}

func engagedMessage(e *engagement) string {
	c := e.bound.Cluster()
	where := "every namespace"
	if e.bound.Bounded() {
		where = fmt.Sprintf("namespaces [%s] (the registration's bound; a CR in any other namespace is outside the bound and refused: never read, never written)",
			strings.Join(c.Namespaces, " "))
	}
	msg := fmt.Sprintf("%d Kind controllers run on cluster %s of org %s, watching %s", e.kinds, c.Name, c.Org, where)
	if len(e.missing) > 0 {
		msg += fmt.Sprintf("; %d Kinds not served by the cluster", len(e.missing))
	}
	return msg
}

// condition writes the KindControllers condition of the registration when it changed, under
// its own field manager (the registration's other conditions are other loops').
func (c *Clusters) condition(ctx context.Context, cr *fleetv1.Cluster, status metav1.ConditionStatus, reason, msg string) error {
	if old := meta.FindStatusCondition(cr.Status.Conditions, ConditionKindControllers); old != nil &&
		old.Status == status && old.Reason == reason && old.Message == msg && old.ObservedGeneration == cr.Generation {
		return nil
	}
	gvk := fleetv1.GroupVersion(c.Group).WithKind(fleetv1.Kind)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(cr.Name)
	cond := map[string]any{"type": ConditionKindControllers, "status": string(status), "reason": reason, "message": msg,
		"observedGeneration": cr.Generation, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
	if old := meta.FindStatusCondition(cr.Status.Conditions, ConditionKindControllers); old != nil && old.Status == status {
		cond["lastTransitionTime"] = old.LastTransitionTime.UTC().Format(time.RFC3339)
	}
	u.Object["status"] = map[string]any{"conditions": []any{cond}}
	err := c.Home.GetClient().Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kinds.ManagerFleetKinds), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// engage builds the registration's cluster.Cluster and one controller per Kind it serves,
// and starts them under a context of their own.
//
//nolint:funlen // one controller per Kind, the watches of SetupKinds read top to bottom
func (c *Clusters) engage(bound *fleet.Bound, log logr.Logger) (*engagement, error) {
	var o setupOptions
	for _, opt := range c.Options {
		opt(&o)
	}
	reg := bound.Cluster()
	scheme := c.Home.GetScheme()
	cfg := bound.Config()
	// The fleet's config bounds each request to 30 s, a watch's stream too: its informers
	// re-watched every type about every 15 s (114 requests a minute on an idle cluster of
	// 57 watches). A watch ends by its own timeout; dials stay bounded by the fleet's dialer.
	cfg.Timeout = 0
	cl, err := cluster.New(cfg, func(co *cluster.Options) {
		co.Scheme = scheme
		co.Logger = log
		// as the home manager: children are watched (Owns) as unstructured objects
		co.Client = client.Options{Cache: &client.CacheOptions{Unstructured: true}}
		co.NewCache = TypedChildren(c.Registry, c.Group)
		co.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.Pod{}: PodCache()}
		if bound.Bounded() {
			// a bounded registration's transport refuses a list across namespaces: the
			// cache watches the bound's namespaces, each on its own
			co.Cache.DefaultNamespaces = map[string]cache.Config{}
			for _, ns := range reg.Namespaces {
				co.Cache.DefaultNamespaces[ns] = cache.Config{}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", reg.Name, err)
	}
	mapper := cl.GetRESTMapper()
	servedLater := func(gvk schema.GroupVersionKind) bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	}
	var unreachable error // the first discovery failure of engage's own checks
	served := func(gvk schema.GroupVersionKind) bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil && !meta.IsNoMatchError(err) && unreachable == nil {
			unreachable = err
		}
		return err == nil
	}
	// Applies go through the Bound's gated client: an object outside the bound is refused
	// by name before any request.
	applier := &apply.Applier{Client: bound.Client(), Manager: kinds.ManagerKinds, Concurrency: 4, Adopt: true}
	e := &engagement{bound: bound, org: reg.Org, done: make(chan struct{})}
	var ctls []controller.Controller
	refs := make([]kinds.Ref, 0, len(c.Registry))
	for ref := range c.Registry {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	indexed := map[schema.GroupVersionKind]bool{}
	for _, ref := range refs {
		en := c.Registry[ref]
		gvk := en.GroupVersionKind(c.Group)
		if en.External != "" {
			continue
		}
		if !served(gvk) {
			if unreachable != nil {
				return nil, fmt.Errorf("cluster %s: discovery: %w", reg.Name, unreachable)
			}
			e.missing = append(e.missing, gvk)
			continue
		}
		r := &KindReconciler{
			Client:   cl.GetClient(),
			Applier:  applier,
			Entry:    en,
			Context:  o.buildContext(c.Group),
			Recorder: cl.GetEventRecorder(apply.RecorderKinds),
			Now:      time.Now,
			// The upgrade machine runs on the home cluster only (its pre-flight collector and
			// its revert in git are home's): a CR here that asks for it says so.
			Upgrades: &Upgrades{Client: bound.Client(), Served: servedLater,
				Off: "the upgrade machine runs on the operator's home cluster only, not on registered cluster " + reg.Name},
		}
		name := strings.ToLower(strings.ReplaceAll(ref.String(), "/", "-")) + "@" + reg.Name
		ctl, err := controller.NewUnmanaged(name, controller.Options{Reconciler: r, MaxConcurrentReconciles: o.workers(),
			SkipNameValidation: ptr.To(true), Logger: log.WithValues("controller", name)})
		if err != nil {
			return nil, err
		}
		if err := ctl.Watch(source.Kind[client.Object](cl.GetCache(), en.New(), &handler.EnqueueRequestForObject{})); err != nil {
			return nil, err
		}
		if err := c.watchChildren(cl, ctl, r, en, served, indexed); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", reg.Name, err)
		}
		ctls = append(ctls, ctl)
	}
	if unreachable != nil {
		return nil, fmt.Errorf("cluster %s: discovery: %w", reg.Name, unreachable)
	}
	if len(ctls) == 0 {
		return nil, fmt.Errorf("cluster %s: %w", reg.Name, errNoKinds)
	}
	e.kinds, e.served = len(ctls), servedLater
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base == nil || c.base.Err() != nil {
		return nil, errors.New("fleet clusters: not running")
	}
	ctx, cancel := context.WithCancel(c.base)
	e.cancel = cancel
	var wg sync.WaitGroup
	wg.Add(1 + len(ctls))
	go func() {
		defer wg.Done()
		if err := cl.Start(ctx); err != nil {
			log.Error(err, "cluster cache stopped")
		}
	}()
	for _, ctl := range ctls {
		go func() {
			defer wg.Done()
			if err := ctl.Start(ctx); err != nil {
				log.Error(err, "controller stopped")
			}
		}()
	}
	go func() { wg.Wait(); close(e.done) }()
	if c.engaged == nil {
		c.engaged = map[string]*engagement{}
	}
	c.engaged[reg.Name] = e
	log.Info("Kind controllers engaged on a registered cluster", "org", reg.Org, "controllers", len(ctls),
		"notServed", len(e.missing), "namespaces", reg.Namespaces)
	return e, nil
}

// watchChildren has ctl watch, in cl's cache, the children r's Kind owns (by their
// controller reference, indexed by it once per child kind) and the inputs its build reads
// (every CR of the Kind in the input's namespace), those cl serves: SetupKinds' Owns and
// Watches.
func (c *Clusters) watchChildren(cl cluster.Cluster, ctl controller.Controller, r *KindReconciler, en kinds.Entry,
	served func(schema.GroupVersionKind) bool, indexed map[schema.GroupVersionKind]bool) error {
	scheme, mapper, gvk := cl.GetScheme(), cl.GetRESTMapper(), en.GroupVersionKind(c.Group)
	for _, child := range en.OwnedGVKs(c.Group) {
		if !served(child) {
			continue
		}
		r.Owned = append(r.Owned, child)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(child)
		if !indexed[child] {
			if err := cl.GetFieldIndexer().IndexField(context.Background(), u, indexController, controllerUID); err != nil {
				return fmt.Errorf("index %s by controller: %w", child, err)
			}
			indexed[child] = true
		}
		owner := handler.EnqueueRequestForOwner(scheme, mapper, en.New(), handler.OnlyControllerOwner())
		if err := ctl.Watch(source.Kind[client.Object](cl.GetCache(), u, owner)); err != nil {
			return err
		}
	}
	for _, in := range en.Inputs {
		if !served(in) {
			continue
		}
		r.Inputs = append(r.Inputs, in)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(in)
		h := handler.EnqueueRequestsFromMapFunc(sameNamespace(cl.GetClient(), scheme, gvk))
		if err := ctl.Watch(source.Kind[client.Object](cl.GetCache(), u, h)); err != nil {
			return err
		}
	}
	return nil
}

// disengage stops a cluster's controllers and cache, waits for them, and drops its clients.
func (c *Clusters) disengage(name string, log logr.Logger, why string) {
	c.mu.Lock()
	e := c.engaged[name]
	delete(c.engaged, name)
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.cancel()
	<-e.done
	c.Fleet.Forget(e.org, name)
	log.Info("Kind controllers disengaged from a registered cluster", "why", why)
}

func (c *Clusters) disengageAll() {
	for _, name := range c.Engaged() {
		c.disengage(name, c.Log.WithValues("cluster", name), "operator stopping")
	}
}
