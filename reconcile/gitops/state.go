package gitops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// SuspendKey is the data key of the suspend ConfigMap: one git path per line.
const SuspendKey = "paths"

// State names the two ConfigMaps of the git path's own state, in the operator's
// namespace: the inventory the sweep writes, and the suspended paths `operator suspend`
// writes. An empty Namespace turns both off (tests, a sweep with no home).
type State struct {
	Namespace string
	Inventory string
	Suspend   string
	// Status names the GitSync object (kinds/gitsync) of APIGroup the sweep writes its
	// health conditions to, in Namespace; empty: none is written.
	Status   string
	APIGroup string
}

// ParseSuspended reads the suspend ConfigMap's text: one path a line, blank lines and
// "#" comments ignored, each path cleaned (see CleanPath). It is pure.
func ParseSuspended(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if p := CleanPath(l); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// loadInventory reads the inventory ConfigMap once per process (the first sweep); absent
// is empty. A ConfigMap that does not decode is reported and replaced by what this
// sweep applies: never a reason to stop applying.
func (s *Sweeper) loadInventory(ctx context.Context) error {
	if s.state.Namespace == "" || s.inv != nil {
		return nil
	}
	var cm corev1.ConfigMap
	err := s.applier.Client.Get(quiet(ctx), client.ObjectKey{Namespace: s.state.Namespace, Name: s.state.Inventory}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		s.inv = &Inventory{Entries: map[key]InventoryEntry{}}
		return nil
	case err != nil:
		return fmt.Errorf("read the inventory ConfigMap %s/%s: %w", s.state.Namespace, s.state.Inventory, err)
	}
	inv, err := DecodeInventory(cm.Data[InventoryKey])
	if err != nil {
		s.inv = &Inventory{Entries: map[key]InventoryEntry{}}
		return fmt.Errorf("ConfigMap %s/%s: %w (rewritten from this sweep)", s.state.Namespace, s.state.Inventory, err)
	}
	s.inv = &inv
	s.invText, _ = inv.Encode()
	return nil
}

// saveInventory writes the inventory when its text changed: an idle sweep writes nothing.
func (s *Sweeper) saveInventory(ctx context.Context, inv Inventory) error {
	text, over := inv.Encode()
	inv.Overflow = over
	s.inv = &inv
	if text == s.invText {
		return nil
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(s.state.Namespace)
	cm.SetName(s.state.Inventory)
	cm.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "universe-operator", "app.kubernetes.io/component": "gitops-inventory"})
	_ = unstructured.SetNestedField(cm.Object, map[string]any{InventoryKey: text}, "data")
	if err := s.applier.Client.Apply(quiet(ctx), client.ApplyConfigurationFromUnstructured(cm), client.FieldOwner(kinds.ManagerGitOps), client.ForceOwnership); err != nil {
		return fmt.Errorf("write the inventory ConfigMap %s/%s: %w", s.state.Namespace, s.state.Inventory, err)
	}
	s.invText = text
	return nil
}

// suspendWatch keeps the suspended paths from a watch on the one suspend ConfigMap: a
// change fires the trigger, and a sweep reads the paths from memory (no request).
type suspendWatch struct {
	mu    sync.Mutex
	paths []string
	inf   cache.SharedIndexInformer
	stop  chan struct{}
	once  sync.Once
}

func newSuspendWatch(cs kubernetes.Interface, st State, fire func()) *suspendWatch {
	w := &suspendWatch{stop: make(chan struct{})}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", st.Namespace, fields.OneTermEqualSelector("metadata.name", st.Suspend))
	w.inf = cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	set := func(obj any, deleted bool) {
		var paths []string
		if cm, ok := obj.(*corev1.ConfigMap); ok && !deleted {
			paths = ParseSuspended(cm.Data[SuspendKey])
		}
		w.mu.Lock()
		changed := !slices.Equal(paths, w.paths)
		w.paths = paths
		w.mu.Unlock()
		if changed {
			fire()
		}
	}
	_, _ = w.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { set(o, false) },
		UpdateFunc: func(_, o any) { set(o, false) },
		DeleteFunc: func(o any) { set(o, true) },
	})
	return w
}

// ensure starts the watch once and waits up to timeout for its first list.
func (w *suspendWatch) ensure(ctx context.Context, timeout time.Duration) {
	w.once.Do(func() { go w.inf.Run(w.stop) })
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !w.inf.HasSynced() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *suspendWatch) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paths
}

func (w *suspendWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
}

// updateInventory records what this sweep applied and finds the orphans: inventory
// entries git no longer declares (NextInventory). It writes the ConfigMap only when the
// inventory changed, and returns the orphans and those new this sweep.
func (s *Sweeper) updateInventory(ctx context.Context, rev string, results []apply.Result, skips []Skip) ([]Orphan, []InventoryEntry, error) {
	if s.inv == nil {
		return nil, nil, nil
	}
	declared := make([]Declared, 0, len(s.items))
	created := map[int]watchKey{} // declared objects this sweep created, not yet watched
	s.mu.Lock()
	for i, it := range s.items {
		if it.refused != nil || i >= len(results) {
			continue
		}
		d := Declared{Ref: apply.RefOf(it.Object), File: it.File, Action: results[i].Action, Digest: it.digest}
		if rec := s.records[it.key]; rec != nil && rec.OK {
			d.Fingerprint = rec.After
			d.UID = string(rec.UID) // the apply's response: no wait for the watch to deliver it
		}
		if it.mapping != nil {
			if live, ok := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name); ok && live != nil {
				d.UID = string(live.GetUID()) // else the apply's (above)
				if d.Fingerprint == "" {
					d.Fingerprint = apply.Fingerprint(live, s.applier.Manager)
				}
			}
		}
		if d.UID == "" && d.Action == apply.Created && it.mapping != nil {
			created[len(declared)] = s.watchKey(it)
		}
		declared = append(declared, d)
	}
	s.mu.Unlock()
	s.awaitCreatedUIDs(ctx, declared, created)
	keep := map[string]bool{}
	files := map[string]bool{}
	for _, sk := range skips {
		if sk.Kind == "" {
			files[sk.File] = true
			continue
		}
		keep[sk.Kind+"\t"+sk.Namespace+"\t"+sk.Name] = true
	}
	planned := map[key]bool{}
	for _, d := range declared {
		planned[key{GroupKind: d.Ref.GroupKind(), Namespace: d.Ref.Namespace, Name: d.Ref.Name}] = true
	}
	// Orphan candidates need a watch to tell present from deleted.
	watches, where, outside := s.orphanWatches(planned)
	if len(watches) > 0 {
		s.tracker.ensure(ctx, watches, s.syncWait)
	}
	gone := func(e InventoryEntry) bool {
		wk, ok := where[e.key()]
		if !ok {
			return false
		}
		live, watched := s.tracker.live(wk, e.Namespace, e.Name)
		return watched && live == nil
	}
	keepFn := map[key]bool{}
	for k, e := range s.inv.Entries {
		if keep[e.Kind+"\t"+e.Namespace+"\t"+e.Name] {
			keepFn[k] = true
		}
	}
	next, newly := NextInventory(s.withLiveUIDs(where), rev, declared, keepFn, files, gone,
		func(e InventoryEntry) bool { return outside[e.key()] })
	err := s.saveInventory(ctx, next)
	if err != nil {
		s.invText = "" // retried next sweep
	}
	return s.inv.Orphans(), newly, err
}

// orphanWatches names, for every inventory entry this sweep did not plan, the watch that
// tells whether it is still present (where), the watches to start, and the entries outside
// the sweep's namespaces (another sweeper's: neither watched nor judged).
func (s *Sweeper) orphanWatches(planned map[key]bool) (map[watchKey]schema.GroupKind, map[key]watchKey, map[key]bool) {
	watches := map[watchKey]schema.GroupKind{}
	where := map[key]watchKey{}
	outside := map[key]bool{}
	for k, e := range s.inv.Entries {
		if planned[k] {
			continue
		}
		m, err := s.mapper.RESTMapping(k.GroupKind)
		namespaced := e.Namespace != "" // a kind no longer served: as the entry was recorded
		if err == nil {
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
		if !s.scope.Covers(k.GroupKind, namespaced, e.Namespace, e.Name) {
			outside[k] = true
			continue
		}
		if err != nil {
			continue // no watch for it: orphaned, never known gone
		}
		wk := watchKey{GVR: m.Resource}
		if namespaced && (!s.scope.OwnsAll() || s.as != nil) {
			wk.Namespace = e.Namespace
		}
		watches[wk], where[k] = k.GroupKind, wk
	}
	return watches, where, outside
}

// awaitCreatedUIDs gives each object this sweep created the uid its watch delivers, waiting
// for the watch (the local cache, no request) at most syncWait: recorded without it, the next
// idle sweep would fill it in and write the inventory once more, and an orphan without a uid
// is never deleted by `orphans --delete`.
func (s *Sweeper) awaitCreatedUIDs(ctx context.Context, declared []Declared, pending map[int]watchKey) {
	deadline := s.now().Add(s.syncWait)
	for len(pending) > 0 && ctx.Err() == nil {
		for i, wk := range pending {
			if live, ok := s.tracker.live(wk, declared[i].Ref.Namespace, declared[i].Ref.Name); ok && live != nil {
				declared[i].UID = string(live.GetUID())
				delete(pending, i)
			}
		}
		if len(pending) == 0 || !s.now().Before(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withLiveUIDs is the inventory with each entry that has no uid given the one its watch
// sees: an object created this sweep may be recorded before the watch delivered it, and
// an orphan without a uid could never be deleted by `orphans --delete`.
func (s *Sweeper) withLiveUIDs(where map[key]watchKey) Inventory {
	prev, cloned := *s.inv, false
	for k, e := range s.inv.Entries {
		wk, ok := where[k]
		if e.UID != "" || !ok {
			continue
		}
		if live, watched := s.tracker.live(wk, e.Namespace, e.Name); watched && live != nil {
			if !cloned {
				prev.Entries, cloned = maps.Clone(s.inv.Entries), true
			}
			e.UID = string(live.GetUID())
			prev.Entries[k] = e
		}
	}
	return prev
}
