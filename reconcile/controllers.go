package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
)

var (
	metricDriftCorrections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_kind_drift_corrections_total",
		Help: "Children whose out-of-band changes a Kind controller reverted, per Kind.",
	}, []string{"kind"})
	metricApplyErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_kind_apply_errors_total",
		Help: "Children the apiserver refused to apply, per Kind.",
	}, []string{"kind"})
)

// Metrics lists the Kind controllers' and the upgrade machine's collectors; cmd/operator
// registers them once, with every loop's.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{metricDriftCorrections, metricApplyErrors, metricUpgrades, metricPreflightGC}
}

// SetupKinds registers one controller per registry entry whose CRD the cluster serves,
// watching the CR and owning its children. Kinds or child types the cluster does not
// serve are logged and skipped, so a partial install still runs what it can.
//
//nolint:funlen // one registration per Kind family, read top to bottom
func SetupKinds(mgr ctrl.Manager, reg kinds.Registry, group string, log logr.Logger, opts ...SetupOption) error {
	var o setupOptions
	for _, opt := range opts {
		opt(&o)
	}
	// Applies read the live object (ssa compares it with a dry-run): a direct client, while
	// the reconcilers' own reads — children, pods — come from the manager's cache.
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("create apply client: %w", err)
	}
	applier := &apply.Applier{Client: direct, Manager: kinds.ManagerKinds, Concurrency: 4, Adopt: true}
	mapper := mgr.GetRESTMapper()
	served := func(gvk schema.GroupVersionKind) bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	}
	ups := &Upgrades{Enabled: o.upgrades, Client: direct, Served: served, Git: o.git, Alerts: o.alerts}
	// The collector runs whatever the gate says: pre-flights left by a gate since closed are
	// reclaimed too.
	if err := mgr.Add(&PreflightGC{Client: direct, Served: served, Interval: o.gcInterval, Grace: o.gcGrace, Now: time.Now,
		Log: log.WithName("preflight-gc")}); err != nil {
		return err
	}
	refs := make([]kinds.Ref, 0, len(reg))
	for ref := range reg {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	started := 0
	var missing []schema.GroupVersionKind
	indexed := map[schema.GroupVersionKind]bool{} // several Kinds own the same child kind
	for _, ref := range refs {
		e := reg[ref]
		gvk := e.GroupVersionKind(group)
		if e.External != "" {
			log.Info("Kind owned by another operator, not starting its controller", "kind", gvk.String(), "owner", e.External)
			continue
		}
		if !served(gvk) {
			log.Info("Kind not served by the cluster, skipping its controller until it is", "kind", gvk.String())
			missing = append(missing, gvk)
			continue
		}
		r := &KindReconciler{
			Client:   mgr.GetClient(),
			Applier:  applier,
			Entry:    e,
			Context:  o.buildContext(group),
			Recorder: mgr.GetEventRecorder(apply.RecorderKinds),
			Now:      time.Now,
			Upgrades: ups,
		}
		b := ctrl.NewControllerManagedBy(mgr).
			Named(strings.ToLower(strings.ReplaceAll(ref.String(), "/", "-"))).
			// our own status writes coming back wake nothing (ownEcho)
			For(e.New(), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !r.ownEcho(e) }})).
			WithOptions(controller.Options{MaxConcurrentReconciles: o.workers()})
		for _, child := range e.OwnedGVKs(group) {
			if !served(child) {
				log.Info("child kind not served by the cluster, not watching it", "kind", gvk.Kind, "child", child.String())
				continue
			}
			r.Owned = append(r.Owned, child)
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(child)
			if !indexed[child] {
				if err := mgr.GetFieldIndexer().IndexField(context.Background(), u, indexController, controllerUID); err != nil {
					return fmt.Errorf("index %s by controller: %w", child, err)
				}
				indexed[child] = true
			}
			// Owns, with the child's wake-up ahead of new work (priorityProgress)
			b = b.Watches(u, ahead(handler.EnqueueRequestForOwner(mgr.GetScheme(), mapper, e.New(), handler.OnlyControllerOwner()), priorityProgress))
		}
		if o.upgrades && e.ServiceSpec != nil {
			// The upgrade machine decides from the candidate's pods and the pre-flight pod:
			// their status changes wake the CR while its upgrade is in flight (upgradePod).
			b = b.Watches(&corev1.Pod{}, ahead(handler.EnqueueRequestsFromMapFunc(r.upgradePod), priorityProgress), builder.WithPredicates(podHealthMoved))
		}
		for _, in := range e.Inputs {
			if !served(in) {
				log.Info("input kind not served by the cluster, building without it", "kind", gvk.Kind, "input", in.String())
				continue
			}
			r.Inputs = append(r.Inputs, in)
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(in)
			b = b.Watches(u, handler.EnqueueRequestsFromMapFunc(sameNamespace(mgr.GetClient(), mgr.GetScheme(), gvk)))
		}
		if err := b.Complete(r); err != nil {
			return fmt.Errorf("set up controller for %s: %w", gvk, err)
		}
		started++
	}
	if started == 0 {
		return errNoKinds
	}
	log.Info("Kind controllers set up", "controllers", started, "notServed", len(missing))
	if len(missing) == 0 {
		return nil
	}
	return mgr.Add(&servedWatch{served: served, missing: missing, every: recheckServed, log: log})
}

// indexController is the cache index of children by the UID of their controller (the CR
// whose ownerReference says controller: true). Prune and the leftover check list one CR's
// children through it: listing the namespace copied every child of every CR out of the
// cache on each reconcile, quadratic in the CRs of a namespace (1 000 Service CRs cost the
// operator 432 s of CPU and 1 GiB on their way to Ready).
const indexController = "universe.index/controller"

// controllerUID is the indexController value of o: its controller's UID, none without one.
func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// sameNamespace maps a changed input object to every CR of Kind gvk in its namespace (a
// LuxChain to the LuxNetworks beside it): their builds read it. The CRs come from the typed
// cache the controller's own watch fills.
func sameNamespace(c client.Client, scheme *runtime.Scheme, gvk schema.GroupVersionKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return nil
		}
		l, ok := list.(client.ObjectList)
		if !ok || c.List(ctx, l, client.InNamespace(obj.GetNamespace())) != nil {
			return nil
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil
		}
		out := make([]ctrl.Request, 0, len(items))
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return out
	}
}

// SetupOption configures SetupKinds.
type SetupOption func(*setupOptions)

type setupOptions struct {
	upgrades            bool
	gcInterval, gcGrace time.Duration
	git                 source.CRCommitter
	concurrency         int
	build               kinds.Context
	alerts              alert.Hook
}

// WithAlerts gives the upgrade machine the alert hook (cmd/operator's alert.Sink): an
// upgrade that reaches RollingBack or Failed is alerted (nil: none).
func WithAlerts(h alert.Hook) SetupOption { return func(o *setupOptions) { o.alerts = h } }

// WithBuildContext gives every build the operator's settings beyond the CR
// (Context.AllowUnverifiedSeed, --allow-unverified-seed; Context.StaticServerImage,
// --static-server-image; Context.Loops, the --controllers that run, which a loop-driven Kind
// names as enabled or off). APIGroup and Inputs are SetupKinds' own and are ignored.
func WithBuildContext(c kinds.Context) SetupOption { return func(o *setupOptions) { o.build = c } }

func (o setupOptions) buildContext(group string) kinds.Context {
	c := o.build
	c.APIGroup, c.Inputs = group, nil
	return c
}

// WithGitWriter gives the upgrade machine the operator's git write path, for
// spec.upgradePolicy.revertInGit (nil: none, and such CRs say so).
func WithGitWriter(g source.CRCommitter) SetupOption { return func(o *setupOptions) { o.git = g } }

// DefaultKindConcurrency is how many CRs of one Kind are reconciled at once by default. A
// reconcile of an unchanged CR reads only caches; one that applies waits on the
// apiserver, so more workers than cores keep the apiserver busy.
const DefaultKindConcurrency = 16

func (o setupOptions) workers() int {
	if o.concurrency > 0 {
		return o.concurrency
	}
	return DefaultKindConcurrency
}

// WithConcurrency sets how many CRs of each Kind are reconciled at once (--kind-concurrency;
// 0: DefaultKindConcurrency).
func WithConcurrency(n int) SetupOption { return func(o *setupOptions) { o.concurrency = n } }

// WithUpgrades opens the cluster gate of the upgrade machine (--upgrade-fsm): CRs whose
// spec.upgradePolicy.enabled is true are then upgraded through pre-flight, health gate and
// rollback. Without it such CRs say UpgradePolicyIgnored.
func WithUpgrades(enabled bool) SetupOption { return func(o *setupOptions) { o.upgrades = enabled } }

// WithPreflightGC sets the orphan collector's period and grace window (0: the defaults, 600 s
// and 300 s; the period is floored at 30 s).
func WithPreflightGC(interval, grace time.Duration) SetupOption {
	return func(o *setupOptions) { o.gcInterval, o.gcGrace = interval, grace }
}

// recheckServed is how often a Kind not served at start is looked for again.
var recheckServed = 30 * time.Second

// servedWatch ends the process when a Kind that was not served at start becomes served (its
// CRD was installed later), so the restart — by the Deployment, as for a lost lease — starts
// that Kind's controller. controller-runtime cannot add a watch to a running manager's
// controllers without one.
type servedWatch struct {
	served  func(schema.GroupVersionKind) bool
	missing []schema.GroupVersionKind
	every   time.Duration
	log     logr.Logger
}

// Start polls the RESTMapper, which refreshes a group's discovery on a miss.
func (w *servedWatch) Start(ctx context.Context) error {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			for _, gvk := range w.missing {
				if w.served(gvk) {
					w.log.Info("Kind now served, restarting to start its controller", "kind", gvk.String())
					return fmt.Errorf("kind %s became served after start: restart to reconcile it", gvk)
				}
			}
		}
	}
}

// NeedLeaderElection is false: a standby must restart too, to lead with every controller.
func (w *servedWatch) NeedLeaderElection() bool { return false }
