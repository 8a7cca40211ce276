package gitops

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
)

// Sweeper is the git sweep: Head, then (when the head moved) Snapshot, Parse
// and Plan, then one server-side apply per object the idle check finds
// stale, under the field manager reconcile.ManagerGitOps. It is a
// controller-runtime Runnable that runs only on the leader, and an
// http.Handler for GET /gitops.
type Sweeper struct {
	// Recorder, when set, records Events on the objects whose drift a sweep reverted or
	// that it could not apply.
	Recorder events.EventRecorder
	// Alerts, when set, receives the alerts of each sweep (Alerts): failing, drift reverted.
	Alerts alert.Hook
	// Cluster names the cluster this sweep applies to in its reports and log lines
	// (Report.Cluster); empty without a fleet.
	Cluster string
	// Statuses, when set, takes a pending status for each revision a sweep starts on and
	// the outcome of every sweep that read one (StatusOf); set it before Start.
	Statuses CommitStatuses

	src      source.Source
	scope    Scope
	applier  *apply.Applier // the operator's own: Namespaces, CRDs, and all without --gitops-service-account
	as       *impersonator  // nil: no --gitops-service-account
	mapper   resettableMapper
	tracker  *tracker
	trig     *Trigger
	interval time.Duration
	minGap   time.Duration
	limits   source.Limits
	workers  int
	syncWait time.Duration
	now      func() time.Time

	// The plan of the last revision read; only Sweep touches it, under sweepMu.
	sweepMu sync.Mutex
	parser  source.ParseCache // unchanged blobs are not parsed again
	// sopsSecret names the Secret of the SOPS age keys (sops.go), read with keys.
	sopsSecret string
	keys       client.Reader
	rev        string
	status     commitstatus.Status // the last status given to Statuses
	files      int
	items      []*item
	skips      []Skip

	// The git path's own state (see State): the inventory as last read or written, and
	// the suspended paths from their watch; nil when State.Namespace is empty.
	state   State
	inv     *Inventory
	invText string
	suspend *suspendWatch
	// order is the plan's applies in steps (paths by dependsOn, waves), per revision.
	order Order

	mu       sync.Mutex // guards records, inflight, last and the health maps; watch events read them
	records  map[key]*apply.Record
	inflight map[key]bool
	last     *Report
	// Health (health.go): where each planned object is watched and the health last seen
	// of it; the health of the sweep's own applies until the watch delivers them; the
	// objects whose health held a step (their becoming Current fires a sweep).
	tracked map[key]*tracked
	applied map[key]Health
	gates   map[key]bool
	log     logr.Logger
	// settling: the last report's health may still move (Settling); observe fires on it.
	settling atomic.Bool

	// syncStatus writes the GitSync status object (syncstatus.go); nil without State.Status.
	syncStatus *syncStatus
	// metadataOnly: Options.MetadataOnly, every watch metadata-only, health from the applies.
	metadataOnly bool
}

// tracked is one planned object's watch and the health status last seen of it.
type tracked struct {
	wk     watchKey
	mapped bool
	last   kstatus.Status
}

var _ manager.LeaderElectionRunnable = (*Sweeper)(nil)

type resettableMapper = meta.ResettableRESTMapper

// item is one object of the plan with what the sweep resolved for it.
type item struct {
	Apply
	key     key
	digest  string
	mapping *meta.RESTMapping // nil until the kind resolves
	mapErr  error
	// refused is set when the RESTMapping scopes the kind cluster-wide (or
	// the scope otherwise refuses it): the object is never applied.
	refused *Skip
}

// NewSweeper builds the sweep over its own clients from cfg (copied): a
// discovery-backed RESTMapper it resets after applying CRDs, a client for
// the applies and a metadata client for the watches. Requests go through
// cfg's transport, but not its client-side rate limit: the sweep's are
// opts.KubeQPS and KubeBurst, by default none (the apiserver's priority and
// fairness governs, as for kubectl). A process-wide limit such as the
// manager's 50 per second, burst 300, made a cold sync of 1 000 objects take
// at least 14 s, whatever the apiserver could serve.
func NewSweeper(cfg *rest.Config, src source.Source, scope Scope, opts Options) (*Sweeper, error) {
	if opts.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(opts.ServiceAccount); len(errs) > 0 {
			return nil, fmt.Errorf("--gitops-service-account %q: %s", opts.ServiceAccount, strings.Join(errs, "; "))
		}
	}
	cfg = sweepConfig(cfg, opts)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("gitops http client: %w", err)
	}
	mapper := opts.Mapper
	if mapper == nil {
		if mapper, err = newMapper(cfg, hc); err != nil {
			return nil, err
		}
	}
	c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: hc, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("gitops client: %w", err)
	}
	c = NeverDelete(c) // never prune, enforced below the plan
	mc, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("gitops metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("gitops dynamic client: %w", err)
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	s := &Sweeper{
		src: src, scope: scope, mapper: mapper, trig: NewTrigger(),
		applier:  &apply.Applier{Client: c, Manager: kinds.ManagerGitOps, Concurrency: 1},
		interval: opts.Interval(), minGap: opts.MinInterval(), limits: opts.Limits, workers: workers, syncWait: 10 * time.Second, now: time.Now,
		records: map[key]*apply.Record{}, inflight: map[key]bool{}, state: opts.State,
		tracked: map[key]*tracked{}, applied: map[key]Health{}, gates: map[key]bool{}, log: logr.Discard(),
		sopsSecret: opts.SOPSAgeSecret, keys: c, metadataOnly: opts.MetadataOnly,
	}
	if opts.State.Namespace != "" {
		cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, fmt.Errorf("gitops state client: %w", err)
		}
		s.suspend = newSuspendWatch(cs, opts.State, func() { s.trig.Fire() })
	}
	if st := opts.State; st.Namespace != "" && st.Status != "" && st.APIGroup != "" {
		s.syncStatus = newSyncStatus()
		go s.syncStatus.run(func() { s.writeStatus(context.Background()) })
	}
	s.parser.Secrets.RequireEncrypted = opts.RequireEncryptedSecrets
	if opts.ServiceAccount != "" {
		s.as = &impersonator{cfg: cfg, name: opts.ServiceAccount, mapper: mapper, byNS: map[string]*tenantClients{}}
	}
	s.tracker = newTracker(func(ns string) (watchClients, error) {
		if s.as == nil || ns == "" {
			if opts.MetadataOnly {
				return watchClients{meta: mc}, nil
			}
			return watchClients{meta: mc, dyn: dyn}, nil
		}
		tc := s.as.get(ns)
		if opts.MetadataOnly {
			return watchClients{meta: tc.meta}, tc.err
		}
		return watchClients{meta: tc.meta, dyn: tc.dyn}, tc.err
	}, s.observe)
	s.tracker.awaits = opts.AwaitsStatus
	return s, nil
}

// NewMapper is the RESTMapper a sweep builds for itself (see NewSweeper), for a process
// that shares it (Options.Mapper): discovery read once, cached in memory, read again
// after a Reset.
func NewMapper(cfg *rest.Config) (meta.ResettableRESTMapper, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery http client: %w", err)
	}
	return newMapper(cfg, hc)
}

func newMapper(cfg *rest.Config, hc *http.Client) (meta.ResettableRESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("gitops discovery client: %w", err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), nil
}

// sweepConfig is a copy of cfg with the sweep's own client-side rate limit (see NewSweeper).
func sweepConfig(cfg *rest.Config, opts Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = nil
	cfg.QPS, cfg.Burst = -1, 0
	if opts.KubeQPS > 0 {
		cfg.QPS, cfg.Burst = opts.KubeQPS, max(opts.KubeBurst, int(opts.KubeQPS))
	}
	return cfg
}

// Trigger is the sweep's trigger: the Webhook fires it, and so does the
// watch when an applied object moves.
func (s *Sweeper) Trigger() *Trigger { return s.trig }

// Webhook returns the POST /reconcile handler that fires this sweep,
// verifying signatures with secret (see Options.WebhookSecret); a nil secret
// accepts unsigned requests.
func (s *Sweeper) Webhook(secret *source.TokenFile, opts Options, log logr.Logger) *Webhook {
	wh := &Webhook{Trigger: s.trig, MaxBytes: opts.WebhookMaxBytes, Log: log}
	if secret != nil {
		wh.Secret = secret
	}
	if opts.WebhookDedupe {
		wh.Deliveries = NewDeliveries(0)
	}
	return wh
}

// Routes registers POST /reconcile (wh) and GET /gitops (the sweeper) on mux.
func (s *Sweeper) Routes(mux *http.ServeMux, wh *Webhook) {
	mux.Handle("/reconcile", wh)
	mux.Handle("/gitops", s)
}

// Start runs the sweep cadence (see Run) until ctx is done, then stops the
// watches. It implements manager.Runnable.
func (s *Sweeper) Start(ctx context.Context) error {
	defer s.Close()
	log := ctrllog.FromContext(ctx).WithName("gitops")
	ctx = logr.NewContext(ctx, log)
	as := ""
	if s.as != nil {
		as = s.as.name
	}
	log.Info("Starting git sweep", "scope", s.scope.String(), "interval", s.interval.String(), "minTriggerInterval", s.minGap.String(), "serviceAccount", as)
	RunLimited(ctx, s.interval, s.minGap, s.trig, func(ctx context.Context) { s.Sweep(ctx) })
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Close stops the watches. Start calls it on return; call it after using
// Sweep directly.
func (s *Sweeper) Close() {
	s.tracker.close()
	if s.syncStatus != nil {
		s.syncStatus.close()
	}
	if s.suspend != nil {
		s.suspend.close()
	}
}

// Last returns the last sweep's report; nil before the first.
func (s *Sweeper) Last() *Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Sweep runs one sweep and returns its report, which it also logs, counts
// and keeps for GET /gitops. Calls never overlap.
func (s *Sweeper) Sweep(ctx context.Context) Report {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	log := ctrllog.FromContext(ctx)
	if s.Cluster != "" {
		log = log.WithValues("cluster", s.Cluster)
	}
	s.mu.Lock()
	s.log = log.WithName("health")
	s.mu.Unlock()
	start := s.now()
	triggered := s.trig.take()
	r, err := s.sweep(ctx)
	r.Cluster = s.Cluster
	r.Started, r.Duration = start, s.now().Sub(start).Seconds()
	if !triggered.IsZero() {
		r.Triggered = &triggered
	}
	if err != nil {
		r.Error = err.Error()
		log.Error(err, "Sweep failed, retrying on the next tick", "revision", r.Revision)
	} else {
		files := make(map[apply.ObjRef]string, len(s.items))
		for _, it := range s.items {
			files[apply.RefOf(it.Object)] = it.File
		}
		r.Files = files
		r.WithHealth(s.healthOf)
		logReport(log, &r, files)
		s.emitEvents(&r)
	}
	count(&r)
	s.postFinished(&r)
	s.mu.Lock()
	prev := s.last
	s.mu.Unlock()
	s.alert(prev, &r)
	s.mu.Lock()
	s.last = &r
	s.mu.Unlock()
	s.settling.Store(Settling(&r))
	s.writeStatus(ctx)
	return r
}

func (s *Sweeper) sweep(ctx context.Context) (Report, error) {
	var ph Phases
	lap := s.now()
	since := func(d *float64) {
		now := s.now()
		*d, lap = now.Sub(lap).Seconds(), now
	}
	rev, err := s.src.Head(ctx)
	since(&ph.Head)
	if err != nil {
		return Report{Phases: ph}, fmt.Errorf("resolve head: %w", err)
	}
	refetched := 0
	if rev != s.rev || s.items == nil {
		s.postStarted(rev)
		snap, err := s.src.Snapshot(ctx, rev)
		since(&ph.Fetch)
		if err != nil {
			return Report{Revision: rev, Phases: ph}, fmt.Errorf("read snapshot %s: %w", rev, err)
		}
		snap, specs := SplitPathFiles(snap)
		if err := s.sopsKeys(ctx); err != nil {
			return Report{Revision: rev, Phases: ph}, err
		}
		objs, errs := s.parser.Parse(snap, s.limits)
		since(&ph.Parse)
		s.load(snap, objs, errs, specs)
		since(&ph.Plan)
		refetched = snap.Refetched
	}
	s.resolve(ctx)
	var suspended []string
	if s.suspend != nil {
		s.suspend.ensure(ctx, s.syncWait)
		suspended = s.suspend.get()
	}
	var stateErrs []string
	if err := s.loadInventory(ctx); err != nil {
		stateErrs = append(stateErrs, err.Error())
	}
	since(&ph.Resolve)
	stale := s.stale()
	all, applied := s.applyStaged(ctx, stale, suspended)
	since(&ph.Apply)
	// The objects the RESTMapping refused are skips, not results.
	results := make([]apply.Result, 0, len(all))
	skips := s.skips
	var refused []Skip
	for i, it := range s.items {
		if it.refused != nil {
			refused = append(refused, *it.refused)
			continue
		}
		results = append(results, all[i])
	}
	if len(refused) > 0 {
		skips = mergeSkips(s.skips, refused)
	}
	orphans, newly, err := s.updateInventory(ctx, rev, all, skips)
	if err != nil {
		stateErrs = append(stateErrs, err.Error())
	}
	r := Report{
		Revision: rev, Idle: applied == 0, Results: results, Skips: skips, Phases: ph,
		Summary: Tally(s.files, refetched, applied, results, skips), Suspended: suspended,
		Orphans: orphans, StateErrors: stateErrs, newlyOrphaned: newly,
	}
	r.Summary.Orphaned = len(orphans)
	if s.inv != nil {
		r.Summary.InventoryOverflow = s.inv.Overflow
	}
	return r, nil
}

// mergeSkips orders two lists of skips by file, then document.
func mergeSkips(a, b []Skip) []Skip {
	byFile := map[string][]Skip{}
	for _, l := range [][]Skip{a, b} {
		for _, sk := range l {
			byFile[sk.File] = append(byFile[sk.File], sk)
		}
	}
	return orderSkips(byFile)
}

// scopeOf answers the plan from the RESTMapper, without resetting it: an
// unknown kind stays unknown here and is decided again once resolved.
func (s *Sweeper) scopeOf(gvk schema.GroupVersionKind) Scoping {
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return ScopeUnknown
	}
	return MappingScope(m)
}

// load plans a new snapshot, keeping what was resolved for unchanged kinds
// and forgetting the records of objects git no longer declares (they are
// never deleted from the cluster).
func (s *Sweeper) load(snap *source.Snapshot, objs []source.Object, errs []source.FileError, specs []PathSpec) {
	// One RESTMapper lookup per kind, not per object: a lookup walks every group's mapper
	// (30-50 ms over 1 000 objects of one kind).
	scoping := map[schema.GroupVersionKind]Scoping{}
	plan := s.scope.WithAPI(func(gvk schema.GroupVersionKind) Scoping {
		sc, ok := scoping[gvk]
		if !ok {
			sc = s.scopeOf(gvk)
			scoping[gvk] = sc
		}
		return sc
	}).Plan(objs, errs)
	order, waveSkips := OrderPlan(plan.Applies, specs)
	if len(waveSkips) > 0 {
		bad := map[int]bool{}
		for i, p := range order.Paths {
			bad[i] = p == ""
		}
		kept := plan.Applies[:0:0]
		for i, a := range plan.Applies {
			if !bad[i] {
				kept = append(kept, a)
			}
		}
		plan.Applies = kept
		plan.Skips = mergeSkips(plan.Skips, waveSkips)
		order, _ = OrderPlan(plan.Applies, specs)
	}
	for _, sp := range specs {
		if sp.Err != nil {
			plan.Skips = mergeSkips(plan.Skips, []Skip{{File: path.Join(sp.Path, PathFile), Reason: ReasonInvalidPathFile,
				Message: sp.Err.Error() + "; every object of path " + sp.Path + " is held"}})
		}
	}
	s.order = order
	prev := map[key]*item{}
	for _, it := range s.items {
		prev[it.key] = it
	}
	items := make([]*item, 0, len(plan.Applies))
	keep := map[key]bool{}
	for _, a := range plan.Applies {
		it := &item{Apply: a, key: keyOf(a.Object)}
		p := prev[it.key]
		if p != nil && p.Object == a.Object {
			it.digest = p.digest // the parse cache's object: its file did not change
		} else {
			it.digest = apply.Digest(a.Object)
		}
		if p != nil && p.Object.GetAPIVersion() == a.Object.GetAPIVersion() {
			it.mapping = p.mapping
		}
		keep[it.key] = true
		items = append(items, it)
	}
	s.mu.Lock()
	for k := range s.records {
		if !keep[k] {
			delete(s.records, k)
		}
	}
	s.mu.Unlock()
	s.rev, s.files, s.items, s.skips = snap.Revision, len(snap.Files), items, plan.Skips
}

// resolve maps the kinds not yet mapped (resetting the mapper once when a
// kind is unknown: a CRD may have appeared) and makes sure a watch covers
// every mapped object.
func (s *Sweeper) resolve(ctx context.Context) {
	reset := false
	keys := map[watchKey]schema.GroupKind{}
	for _, it := range s.items {
		if it.mapping == nil {
			gvk := it.Object.GroupVersionKind()
			m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) && !reset {
				s.mapper.Reset()
				reset = true
				m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			}
			it.mapping, it.mapErr = m, err
		}
		// The API's own answer decides the scope, never the manifest.
		it.refused = nil
		if it.mapping != nil {
			if skip, ok := s.scope.Admit(source.Object{File: it.File, Doc: it.Doc, Obj: it.Object}, MappingScope(it.mapping)); !ok {
				it.refused = &skip
				continue
			}
		}
		if it.mapping != nil {
			keys[s.watchKey(it)] = it.key.GroupKind
		}
	}
	if len(keys) > 0 {
		s.tracker.ensure(ctx, keys, s.syncWait)
	}
	s.track()
}

// track records where each planned object is watched, keeping the health last seen of
// those already tracked, and forgets the applies' health of objects no longer planned.
func (s *Sweeper) track() {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[key]*tracked, len(s.items))
	for _, it := range s.items {
		if it.refused != nil {
			continue
		}
		t := &tracked{mapped: it.mapping != nil}
		if t.mapped {
			t.wk = s.watchKey(it)
		}
		if p := s.tracked[it.key]; p != nil {
			t.last = p.last
		}
		next[it.key] = t
	}
	s.tracked = next
	for k := range s.applied {
		if next[k] == nil {
			delete(s.applied, k)
		}
	}
}

// healthLocked is an object's health now: the watch's, unless the sweep's own apply
// returned a newer copy the watch has not delivered yet; nil when neither knows it.
// s.mu is held.
func (s *Sweeper) healthLocked(k key) *Health {
	a, hasA := s.applied[k]
	if s.metadataOnly && !Statusless(k.GroupKind) {
		// a metadata-only watch knows nothing of the status: the apply's response does
		if hasA {
			return &a
		}
		return nil
	}
	if t := s.tracked[k]; t != nil && t.mapped {
		if h, watched := s.tracker.health(t.wk, k.Namespace, k.Name); watched && (!hasA || !newerRV(a.rv, h.rv)) {
			return &h
		}
	}
	if hasA {
		return &a
	}
	return nil
}

// healthOf is healthLocked by reference, for Report.WithHealth.
func (s *Sweeper) healthOf(ref apply.ObjRef) *Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthLocked(refKey(ref))
}

func refKey(ref apply.ObjRef) key {
	return key{GroupKind: schema.GroupKind{Group: ref.Group, Kind: ref.Kind}, Namespace: ref.Namespace, Name: ref.Name}
}

// watchKey is the watch that covers it: per owned namespace, or one for all
// namespaces when all are owned (and for cluster-scoped kinds).
func (s *Sweeper) watchKey(it *item) watchKey {
	wk := watchKey{GVR: it.mapping.Resource}
	// a ServiceAccount sees its own namespace only
	if it.mapping.Scope.Name() == meta.RESTScopeNameNamespace && (!s.scope.OwnsAll() || s.as != nil) {
		wk.Namespace = it.key.Namespace
	}
	return wk
}

// stale runs the idle check over the plan against the watches.
func (s *Sweeper) stale() []bool {
	now := s.now()
	out := make([]bool, len(s.items))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, it := range s.items {
		if it.mapping == nil {
			out[i] = true
			continue
		}
		m, watched := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name)
		live := apply.Live{Watched: watched, Fingerprint: apply.Fingerprint(m, s.applier.Manager)}
		rec := s.records[it.key]
		if rec == nil && watched && s.inv != nil {
			// A new process: the inventory says what was applied and what it left, so an
			// object unchanged in git and in the cluster costs no apply (operator up's no-op).
			if e, ok := s.inv.Entries[it.key]; ok && m != nil && e.Fingerprint != "" && e.Digest == shortHash(it.digest) && e.Fingerprint == shortHash(live.Fingerprint) {
				rec = &apply.Record{Digest: it.digest, OK: true, After: live.Fingerprint, Seen: true, At: now,
					UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}
				s.records[it.key] = rec
			}
		}
		if rec != nil && watched && live.Fingerprint == rec.After {
			rec.Seen = true
		}
		out[i], _ = apply.Stale(it.digest, rec, live, now)
	}
	return out
}

// applyStaged applies the stale objects: CRDs and Namespaces first (the
// plan orders them first), then, after waiting for changed CRDs to be
// established and resetting the mapper, the rest, step by step (see OrderPlan:
// paths in dependsOn order, waves in order), a step held when one it needs is
// not Ready. Objects under a suspended path are not applied. It returns one
// result per item and how many objects it sent.
func (s *Sweeper) applyStaged(ctx context.Context, stale []bool, suspended []string) ([]apply.Result, int) {
	results := make([]apply.Result, len(s.items))
	done := make([]bool, len(s.items))
	for i, it := range s.items {
		if by := SuspendedBy(it.File, suspended); by != "" && it.refused == nil {
			results[i], done[i] = s.suspendedResult(it, by, stale[i]), true
		}
	}
	first := 0
	for first < len(s.items) && (s.items[first].key.GroupKind == crdKind || s.items[first].key.GroupKind == namespaceKind) {
		first++
	}
	var head []int
	for i := range s.items[:first] {
		if !done[i] {
			head = append(head, i)
		}
	}
	applied := s.applyIdx(ctx, head, stale, results)
	s.fillHealth(head, results)
	var changed []*item
	for _, i := range head {
		a := results[i].Action
		if it := s.items[i]; it.key.GroupKind == crdKind && (a == apply.Created || a == apply.Updated) {
			changed = append(changed, it)
		}
	}
	if len(changed) > 0 {
		s.waitEstablished(ctx, changed)
		s.mapper.Reset()
		for _, it := range s.items[first:] {
			if it.mapping == nil {
				it.mapErr = nil
			}
		}
		s.resolve(ctx)
	}
	for i := range head {
		done[head[i]] = true
	}
	gates := map[key]bool{}
	for k, st := range s.order.Steps {
		var todo []int
		for _, i := range st.Items {
			if !done[i] {
				todo = append(todo, i)
			}
		}
		if reason, msg := Hold(s.order, k, results); reason != "" {
			for _, i := range todo {
				if s.items[i].refused == nil {
					results[i] = apply.Result{Object: apply.RefOf(s.items[i].Object), Action: Held, Reason: string(reason), Message: msg}
				}
			}
			for _, n := range st.Needs {
				for _, j := range s.order.Steps[n].Items {
					if h := results[j].Health; HealthKnown(h) && h != string(kstatus.CurrentStatus) {
						gates[s.items[j].key] = true
					}
				}
			}
			continue
		}
		applied += s.applyIdx(ctx, todo, stale, results)
		s.fillHealth(st.Items, results)
	}
	s.mu.Lock()
	s.gates = gates
	s.mu.Unlock()
	for i := range results {
		if i < len(s.order.Paths) && s.order.Paths[i] != "." { // the root path is left implicit
			results[i].Path = s.order.Paths[i]
		}
	}
	return results, applied
}

// fillHealth sets the health of the results of idx as known now (see healthLocked), so
// the steps after them are held on health, not only on the apply.
func (s *Sweeper) fillHealth(idx []int, results []apply.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range idx {
		if results[i].Action == "" || results[i].Action == Held {
			continue
		}
		if h := s.healthLocked(s.items[i].key); h != nil {
			results[i].Health, results[i].HealthMessage = string(h.Status), h.Message
		}
	}
}

// suspendedDrift marks the message of a suspended object that git or the cluster changed.
const suspendedDrift = "not applied while suspended"

// suspendedResult reports an object of a suspended path: never applied, and whether git
// or the cluster moved it since the last apply (the idle check's answer), so a suspended
// path still reports drift.
func (s *Sweeper) suspendedResult(it *item, by string, stale bool) apply.Result {
	r := apply.Result{Object: apply.RefOf(it.Object), Action: Suspended, Reason: string(ReasonPathSuspended)}
	if stale {
		r.Message = fmt.Sprintf("path %s is suspended (operator resume %s): git or the cluster changed it, %s", by, by, suspendedDrift)
		s.mu.Lock()
		rec := s.records[it.key]
		s.mu.Unlock()
		if rec != nil && it.mapping != nil {
			if live, ok := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name); ok && live != nil {
				r.DriftedBy = changedSince(live, rec.At, s.applier.Manager)
			}
		}
		return r
	}
	r.Message = fmt.Sprintf("path %s is suspended (operator resume %s): in sync", by, by)
	return r
}

// changedSince names the field managers (ours excluded) that wrote the object after t,
// from its managedFields: who drifted a suspended object.
func changedSince(m metav1.Object, t time.Time, ours string) []string {
	var out []string
	for _, e := range m.GetManagedFields() {
		// managedFields times are whole seconds: a write in the second of our apply counts
		if e.Manager == ours || e.Time == nil || e.Time.Time.Before(t.Truncate(time.Second)) || slices.Contains(out, e.Manager) {
			continue
		}
		out = append(out, e.Manager)
	}
	slices.Sort(out)
	return out
}

// applyIdx applies the stale items of idx concurrently; one failure never stops
// the others.
func (s *Sweeper) applyIdx(ctx context.Context, idx []int, stale []bool, results []apply.Result) int {
	var todo []int
	for _, i := range idx {
		it := s.items[i]
		ref := apply.RefOf(it.Object)
		switch {
		case it.refused != nil:
			continue // reported as a skip
		case !stale[i]:
			results[i] = apply.Result{Object: ref, Action: apply.InSync}
			continue
		case it.mapping == nil:
			err := fmt.Errorf("no API serves %s (is its CustomResourceDefinition installed?): %w", it.Object.GroupVersionKind(), it.mapErr)
			results[i] = apply.Result{Object: ref, Action: apply.Failed, Err: err, Message: err.Error()}
			continue
		}
		todo = append(todo, i)
	}
	apply.FanOut(len(todo), s.workers, func(k int) { results[todo[k]] = s.applyOne(ctx, s.items[todo[k]]) })
	for _, i := range todo {
		if it := s.items[i]; it.mapping != nil && (apierrors.IsNotFound(results[i].Err) || meta.IsNoMatchError(results[i].Err)) {
			it.mapping = nil // the kind went away (its CRD was deleted?): resolve it again next sweep
		}
	}
	return len(todo)
}

// applyOne applies one object with a single request when the watch knows
// its live state, else through the get-and-dry-run path, and records it.
func (s *Sweeper) applyOne(ctx context.Context, it *item) apply.Result {
	ctx = quiet(ctx)
	s.mu.Lock()
	s.inflight[it.key] = true
	var prev *apply.Record
	if p := s.records[it.key]; p != nil {
		cp := *p
		prev = &cp
	}
	s.mu.Unlock()
	live, watched := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name)
	var res apply.Result
	var fresh *Health
	rec := &apply.Record{Digest: it.digest, Before: apply.Fingerprint(live, s.applier.Manager)}
	applier, err := s.applierFor(it)
	switch {
	case err != nil:
		res = apply.Result{Object: apply.RefOf(it.Object), Action: apply.Failed, Err: err, Message: err.Error()}
	case watched:
		var after *unstructured.Unstructured
		// prev: the watch may not have delivered what our last apply returned yet
		res, after = applier.ApplyRecorded(ctx, it.Object, live, prev)
		if after != nil {
			rec.After = apply.Fingerprint(after, s.applier.Manager)
			rec.UID, rec.ResourceVersion = after.GetUID(), after.GetResourceVersion()
			fresh = &Health{}
			*fresh = HealthOf(after, s.tracker.awaited(it.key.GroupKind)) // the response carries status: the health before the watch delivers it
		}
	default:
		res = applier.Apply(ctx, []*unstructured.Unstructured{it.Object})[0]
	}
	if res.Action == apply.Denied && applier != s.applier {
		res.Message += " (applied as " + s.as.User(it.key.Namespace) + ", --gitops-service-account: grant it in that namespace)"
	}
	rec.OK = res.Action != apply.Failed && res.Action != apply.Denied
	rec.At = s.now()
	// The watch may have delivered our write already, while it was in
	// flight and observe ignored it: the cache is updated before handlers run.
	if now, ok := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name); ok && rec.After != "" && apply.Fingerprint(now, s.applier.Manager) == rec.After {
		rec.Seen = true
	}
	s.mu.Lock()
	s.records[it.key] = rec
	delete(s.inflight, it.key)
	if fresh != nil {
		s.applied[it.key] = *fresh
	}
	s.mu.Unlock()
	return res
}

// observe is the watch's event handler: when an object we applied moves
// away from what we applied, it fires the trigger so the correction is
// prompt. Our own writes (in flight, or matching the record) do not fire.
// When a planned object's health changes it logs the change, tells the status
// writer, and fires the trigger when the object's health was holding a step
// and it is now Current. Nothing here sends a request.
func (s *Sweeper) observe(k key, m metav1.Object, h Health) {
	fp := apply.Fingerprint(m, s.applier.Manager)
	s.mu.Lock()
	if a, ok := s.applied[k]; ok && (m == nil || !newerRV(a.rv, h.rv)) && (!s.metadataOnly || Statusless(k.GroupKind)) {
		delete(s.applied, k) // the watch caught up with our apply
	}
	var changed, unblock bool
	var from, to Health
	if t := s.tracked[k]; t != nil {
		if now := s.healthLocked(k); now != nil && now.Status != t.last {
			changed, from, to = true, Health{Status: t.last}, *now
			t.last = now.Status
			unblock = (s.gates[k] && now.Status == kstatus.CurrentStatus) || (s.settling.Load() && settles(now.Status)) || now.Status == kstatus.FailedStatus
		}
	}
	log, status := s.log, s.syncStatus
	rec := s.records[k]
	stale := false
	if rec != nil && !s.inflight[k] {
		if fp == rec.After {
			rec.Seen = true
		}
		stale, _ = apply.Stale(rec.Digest, rec, apply.Live{Watched: true, Fingerprint: fp}, s.now())
	}
	s.mu.Unlock()
	if changed && from.Status != "" {
		log.Info("Health changed", "object", refOfKey(k).String(), "from", from.Status, "health", to.Status, "message", to.Message)
	}
	if changed && status != nil {
		status.kick()
	}
	if stale || unblock {
		s.trig.Fire()
	}
}

// refOfKey is the reference of a key, without a version.
func refOfKey(k key) apply.ObjRef {
	return apply.ObjRef{Group: k.Group, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// waitEstablished polls the CRDs just applied until the apiserver serves
// them (condition Established), for at most 30 s; whatever is not served by
// then fails in the second stage and is retried on the next sweep.
func (s *Sweeper) waitEstablished(ctx context.Context, crds []*item) {
	ctx, cancel := context.WithTimeout(quiet(ctx), 30*time.Second)
	defer cancel()
	names := make([]string, 0, len(crds))
	for _, it := range crds {
		names = append(names, it.key.Name)
	}
	_ = apply.WaitEstablished(ctx, s.applier.Client, names, 200*time.Millisecond) // see above
}

// quiet strips the logger from the context of apiserver calls: client-go
// logs request and response bodies — Secret data included — to the
// context's logger at V(8), and no verbosity setting may reveal a Secret
// declared in git.
func quiet(ctx context.Context) context.Context {
	return logr.NewContext(ctx, logr.Discard())
}
