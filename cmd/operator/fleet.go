package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
)

// fleetOptions configures the fleet: the registered clusters the git sweep reaches.
type fleetOptions struct {
	On bool
	// AllowNonRoutable lets the fleet dial loopback and private apiservers: tests only.
	AllowNonRoutable bool
}

func (o *fleetOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.On, "fleet", false, "Sweep the registered clusters too: the Cluster objects of this cluster, each credential a Secret fleet-<sha256 prefix> in --namespace; the files under orgs/<org>/clusters/<name>/ of the repository go to that cluster, and never to this one.")
	fs.BoolVar(&o.AllowNonRoutable, "fleet-allow-non-routable", false, "Let the fleet dial loopback, private and link-local apiservers. Tests only: a registration must never reach the operator's own network.")
}

// Condition Reached of a Cluster: whether the fleet reached the cluster with its
// credential, and why not.
//
//nolint:gosec // G101: condition reasons naming a credential's state, not credentials
const (
	conditionReached = "Reached"

	reasonReached           = "Reached"
	reasonCredentialMissing = "CredentialMissing"
	reasonCredentialRefused = "CredentialRefused"
	reasonUnreachable       = "Unreachable"
)

// homeCluster is the cluster column of the home sweep's rows.
const homeCluster = "home"

// fleetSweeps runs one git sweep per registered cluster, each over fleet.View of its
// orgs/<org>/clusters/<name>/ path and applied through the cluster's Bound, in its own
// goroutine with its own cadence, watches and idle check: one cluster down, refused or
// without a credential never blocks another, or the home sweep.
//
// Registrations are read from a watch (the fleet cache: every Cluster object, and the
// Secrets of the operator's namespace); each change, and each head the home sweep reads,
// runs a pass: Reach every registration (and every cluster path the repository names)
// from the cache, so a pass that changes nothing sends no request anywhere; a sweep is
// (re)started when its Bound's version moves (a spec change, a credential rotation) once
// the cluster's /version answers, and stopped when its registration or credential goes.
type fleetSweeps struct {
	fleet  *fleet.Fleet
	cache  cache.Cache   // Cluster objects, the operator namespace's Secrets
	status client.Client // writes Cluster status (server-side apply, kinds.ManagerStatus)
	apiGrp string
	head   *sharedHead
	opts   gitops.Options
	home   *gitops.Sweeper
	trig   *gitops.Trigger
	log    logr.Logger
	now    func() time.Time
	// alerts receives each cluster's sweep alerts (--alerts-secret); nil: none.
	alerts alert.Hook
	// statuses posts each cluster's sweep outcome on the commit (--commit-status), under
	// commitstatus.ClusterContext(statusContext, "<org>/<name>"); nil: none.
	statuses      *commitstatus.Poster
	statusContext string

	mu      sync.Mutex
	running map[string]*clusterSweep
	rows    map[string]gitops.Report // targets without a running sweep: why
}

// clusterSweep is the sweep of one registered cluster.
type clusterSweep struct {
	version string
	sweeper *gitops.Sweeper
	stop    context.CancelFunc
	done    chan struct{}
}

// fleetTarget is one sweep the fleet owes: a registration, or a path of the repository
// (which, unregistered, gets a row saying so).
type fleetTarget struct {
	target fleet.Target
	cr     *fleetv1.Cluster // nil: a path only
}

// setupFleet reads the process's fleet (shared, built by run: runFleet) through a cache of
// the home cluster's registry and the Secret store of the operator's namespace, and returns
// the home sweep's source: the repository without the cluster paths, which never go to this
// cluster, with or without --fleet (nil fleet).
func setupFleet(mgr ctrl.Manager, o *runOptions, shared *fleet.Fleet, src source.Source, log logr.Logger) (*fleetSweeps, source.Source, error) {
	if !o.Fleet.On {
		log.Info("fleet off: the files under orgs/<org>/clusters/<name>/ are applied only by an operator run with --fleet, never to this cluster")
		return nil, fleet.View{Source: src, Target: fleet.Target{}}, nil
	}
	fc, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("fleet cache: %w", err)
	}
	if err := mgr.Add(fc); err != nil {
		return nil, nil, err
	}
	f := &fleetSweeps{
		fleet: shared.Reading(fleet.Registry{Reader: fc}, fleet.SecretStore{Reader: fc, Namespace: o.Namespace}),
		cache: fc, status: mgr.GetClient(), apiGrp: o.APIGroup, opts: o.GitOps, trig: gitops.NewTrigger(), log: log, now: time.Now,
		running: map[string]*clusterSweep{}, rows: map[string]gitops.Report{}, alerts: o.alertHook(),
	}
	f.head = &sharedHead{src: src, moved: f.headMoved}
	if o.Fleet.AllowNonRoutable {
		log.Info("WARNING --fleet-allow-non-routable: the fleet dials loopback and private apiservers (tests only)")
	}
	return f, fleet.View{Source: f.head, Target: fleet.Target{}}, nil
}

// Start watches the registrations and runs passes until ctx is done, then stops every
// cluster's sweep. Leader only (manager.Runnable).
func (f *fleetSweeps) Start(ctx context.Context) error {
	fire := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { f.trig.Fire() }, UpdateFunc: func(any, any) { f.trig.Fire() }, DeleteFunc: func(any) { f.trig.Fire() },
	}
	for _, obj := range []client.Object{&fleetv1.Cluster{}, &corev1.Secret{}} {
		inf, err := f.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("fleet: watch %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(fire); err != nil {
			return fmt.Errorf("fleet: watch %T: %w", obj, err)
		}
	}
	f.log.Info("Starting the fleet's sweeps", "registry", "Cluster objects of this cluster", "credentials", "Secrets fleet-<sha256 prefix> of the operator's namespace")
	gitops.RunLimited(ctx, f.opts.Interval(), time.Second, f.trig, f.pass)
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.running {
		f.stopLocked(key)
	}
	return nil
}

// NeedLeaderElection: only the leader sweeps.
func (f *fleetSweeps) NeedLeaderElection() bool { return true }

// headMoved is the home sweep reading a new head: every cluster's sweep reads it at once.
func (f *fleetSweeps) headMoved() {
	f.trig.Fire()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cs := range f.running {
		cs.sweeper.Trigger().Fire()
	}
}

// targets are the registrations and the cluster paths of the repository's last head, by
// "<org>/<name>". It is pure.
func targets(clusters []fleetv1.Cluster, paths []fleet.Target) (map[string]fleetTarget, []string) {
	out := map[string]fleetTarget{}
	var refused []string
	for i := range clusters {
		cr := &clusters[i]
		caller, err := fleet.PathCaller(cr.Spec.Org)
		if err != nil {
			refused = append(refused, fmt.Sprintf("Cluster %s: %v", cr.Name, err))
			continue
		}
		t := fleet.Target{Caller: caller, Cluster: cr.Name}
		out[t.String()] = fleetTarget{target: t, cr: cr}
	}
	for _, t := range paths {
		if _, ok := out[t.String()]; !ok {
			out[t.String()] = fleetTarget{target: t}
		}
	}
	return out, refused
}

// pass brings the running sweeps to the registrations. Everything it reads is the cache's.
func (f *fleetSweeps) pass(ctx context.Context) {
	var list fleetv1.ClusterList
	if err := f.cache.List(ctx, &list); err != nil {
		f.log.Error(err, "Listing the registered clusters failed, retrying on the next pass")
		return
	}
	var paths []fleet.Target
	if rev := f.head.last(); rev != "" {
		snap, err := f.head.src.Snapshot(ctx, rev) // the home sweep's snapshot, served from the source's cache
		if err != nil {
			f.log.Error(err, "Reading the repository's cluster paths failed, retrying on the next pass", "revision", rev)
		} else {
			paths = fleet.Targets(snap)
		}
	}
	want, refused := targets(list.Items, paths)
	for _, r := range refused {
		f.log.Info("Registration refused: " + r)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f.reconcile(ctx, k, want[k])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.running {
		if _, ok := want[k]; !ok {
			f.stopLocked(k)
			f.log.Info("Registration gone: its sweep stopped (nothing it applied is deleted)", "cluster", k)
		}
	}
	for k := range f.rows {
		if _, ok := want[k]; !ok {
			delete(f.rows, k)
		}
	}
}

// reconcile reaches one target and keeps its sweep running on its current Bound.
func (f *fleetSweeps) reconcile(ctx context.Context, key string, t fleetTarget) {
	b, err := f.fleet.Reach(fleet.WithCaller(ctx, t.target.Caller), t.target.Cluster)
	if err != nil {
		reason := reasonCredentialRefused
		switch {
		case errors.Is(err, fleet.ErrNoCluster):
			err = fmt.Errorf("%w: the files under orgs/%s/clusters/%s/ are applied nowhere until a Cluster %s with spec.org %s is registered on the operator's cluster",
				err, t.target.Caller.Org(), t.target.Cluster, t.target.Cluster, t.target.Caller.Org())
		case errors.Is(err, fleet.ErrNoCredential):
			reason = reasonCredentialMissing
		}
		f.fail(ctx, key, t, reason, err)
		return
	}
	f.mu.Lock()
	cur := f.running[key]
	f.mu.Unlock()
	if cur != nil && cur.version == b.Version() {
		return // unchanged: the sweep runs on, and this pass sent nothing
	}
	version, err := b.Status()
	if err != nil {
		f.fail(ctx, key, t, reasonUnreachable, err)
		return
	}
	sw, err := f.sweeper(key, t, b)
	if err != nil {
		f.fail(ctx, key, t, reasonCredentialRefused, err)
		return
	}
	sctx, stop := context.WithCancel(ctx)
	cs := &clusterSweep{version: b.Version(), sweeper: sw, stop: stop, done: make(chan struct{})}
	f.mu.Lock()
	if cur != nil {
		f.stopLocked(key)
	}
	f.running[key] = cs
	delete(f.rows, key)
	f.mu.Unlock()
	go func() {
		defer close(cs.done)
		_ = sw.Start(ctrllog.IntoContext(sctx, f.log)) // its lines carry its cluster (Sweeper.Cluster)
	}()
	f.log.Info("Sweeping a registered cluster", "cluster", key, "server", version, "namespaces", b.Cluster().Namespaces, "rebuilt", cur != nil)
	f.writeStatus(ctx, t.cr, metav1.ConditionTrue, reasonReached,
		fmt.Sprintf("reached %s (%s) with the credential at %s", b.Cluster().Endpoint, version, mustRef(b.Cluster())))
}

func mustRef(c fleet.Cluster) string {
	ref, err := c.Ref()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(ref)
}

// fail records why a target is not swept, stops its sweep (its Bound is gone or moved)
// and says so on the registration.
func (f *fleetSweeps) fail(ctx context.Context, key string, t fleetTarget, reason string, err error) {
	f.mu.Lock()
	prev, had := f.rows[key]
	f.rows[key] = gitops.Report{Cluster: key, Started: f.now(), Error: err.Error()}
	if _, ok := f.running[key]; ok {
		f.stopLocked(key)
	}
	f.mu.Unlock()
	if !had || prev.Error != err.Error() {
		f.log.Info("Not sweeping a cluster, retrying on the next pass", "cluster", key, "reason", reason, "error", err.Error())
	}
	f.writeStatus(ctx, t.cr, metav1.ConditionFalse, reason, err.Error())
}

func (f *fleetSweeps) stopLocked(key string) {
	cs := f.running[key]
	if cs == nil {
		return
	}
	cs.stop()
	<-cs.done
	delete(f.running, key)
}

// sweeper is the git sweep of one registered cluster: the view of its path, scoped to its
// bound (every namespace of a whole-cluster registration), on its Bound's config.
func (f *fleetSweeps) sweeper(key string, t fleetTarget, b *fleet.Bound) (*gitops.Sweeper, error) {
	ns := b.Cluster().Namespaces
	if len(ns) == 0 {
		ns = []string{gitops.All}
	}
	scope, err := gitops.NewScope(ns, nil)
	if err != nil {
		return nil, err
	}
	if b.Bounded() {
		scope = scope.WithBound(key)
	} else {
		scope = scope.WithCRDs(f.opts.CRDs)
	}
	opts := f.opts
	opts.ServiceAccount = "" // the home cluster's ServiceAccount is not the registered cluster's
	sw, err := gitops.NewSweeper(b.Config(), fleet.View{Source: follower{f.head}, Target: t.target}, scope, opts)
	if err != nil {
		return nil, err
	}
	sw.Cluster = key
	sw.Alerts = f.alerts
	if f.statuses != nil {
		sw.Statuses = f.statuses.In(commitstatus.ClusterContext(f.statusContext, key))
	}
	return sw, nil
}

// writeStatus server-side applies a registration's status (kinds.ManagerStatus) when it
// changes: status.registered when the fleet first reaches it, and condition Reached.
func (f *fleetSweeps) writeStatus(ctx context.Context, cr *fleetv1.Cluster, st metav1.ConditionStatus, reason, msg string) {
	if cr == nil {
		return
	}
	next := cr.Status.DeepCopy()
	changed := meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: conditionReached, Status: st, Reason: reason,
		Message: msg, ObservedGeneration: cr.Generation})
	if st == metav1.ConditionTrue && next.Registered == nil {
		now := metav1.NewTime(f.now())
		next.Registered, changed = &now, true
	}
	if next.ObservedGeneration != cr.Generation {
		next.ObservedGeneration, changed = cr.Generation, true
	}
	if !changed {
		return
	}
	u, err := condition.StatusApply(fleetv1.GroupVersion(f.apiGrp).WithKind(fleetv1.Kind), cr, next)
	if err == nil {
		err = f.status.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kinds.ManagerStatus), client.ForceOwnership)
	}
	if err != nil {
		f.log.Error(err, "Writing a registration's status failed, retrying on its next change", "cluster", cr.Name)
	}
}

// attachFleet serves the sweep's routes on mux: with a fleet (non-nil f), the home sweep is
// cluster "home" beside the registered clusters' sweeps, which f runs (leader only).
func attachFleet(mgr ctrl.Manager, o *runOptions, f *fleetSweeps, home *gitops.Sweeper, mux *http.ServeMux, wh *gitops.Webhook) error {
	if f == nil {
		home.Routes(mux, wh)
		return nil
	}
	home.Cluster, f.home, o.fleet = homeCluster, home, f
	f.Routes(mux, wh)
	return mgr.Add(f)
}

// Routes registers POST /reconcile (wh) and GET /gitops: the home sweep's report with a
// cluster column, and the registered clusters' reports beside it.
func (f *fleetSweeps) Routes(mux *http.ServeMux, wh *gitops.Webhook) {
	mux.Handle("/reconcile", wh)
	mux.Handle("/gitops", f)
}

// fleetReport is GET /gitops with a fleet: the home report's fields (cluster "home"), and
// one report per registered cluster or cluster path, each with its cluster.
type fleetReport struct {
	*gitops.Report
	Clusters []gitops.Report `json:"clusters"`
}

// Reports are the clusters' last reports, by cluster; a target without a running sweep is
// its reason (Error). Public: no object content.
func (f *fleetSweeps) Reports() []gitops.Report {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]gitops.Report, 0, len(f.running)+len(f.rows))
	for k, cs := range f.running {
		r := gitops.Report{Cluster: k, Error: "not swept yet"}
		if last := cs.sweeper.Last(); last != nil {
			r = last.Public()
		}
		out = append(out, r)
	}
	for _, r := range f.rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b gitops.Report) int {
		switch {
		case a.Cluster < b.Cluster:
			return -1
		case a.Cluster > b.Cluster:
			return 1
		}
		return 0
	})
	return out
}

func (f *fleetSweeps) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	out := fleetReport{Clusters: f.Reports()}
	if last := f.home.Last(); last != nil {
		pub := last.Public()
		out.Report = &pub
	}
	if out.Report == nil && len(out.Clusters) == 0 {
		_, _ = w.Write([]byte("null\n")) // before the first sweep, and on a standby
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// sharedHead is the home sweep's source: each head it reads moves every cluster's sweep
// to it, so one ls-remote (or one GitHub request) per pass serves the whole fleet.
type sharedHead struct {
	src   source.Source
	moved func()

	mu  sync.Mutex
	rev string
}

func (h *sharedHead) Head(ctx context.Context) (string, error) {
	rev, err := h.src.Head(ctx)
	if err != nil {
		return rev, err
	}
	h.mu.Lock()
	moved := rev != h.rev
	h.rev = rev
	h.mu.Unlock()
	if moved && h.moved != nil {
		h.moved()
	}
	return rev, nil
}

func (h *sharedHead) Snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	return h.src.Snapshot(ctx, rev)
}

func (h *sharedHead) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rev
}

// follower is a cluster sweep's source: the head is the one the home sweep read last (no
// request to the git host), the repository's own before the home sweep has one.
type follower struct{ h *sharedHead }

func (s follower) Head(ctx context.Context) (string, error) {
	if rev := s.h.last(); rev != "" {
		return rev, nil
	}
	return s.h.src.Head(ctx)
}

func (s follower) Snapshot(ctx context.Context, rev string) (*source.Snapshot, error) {
	return s.h.src.Snapshot(ctx, rev)
}
