package gitops

import (
	"context"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// watchKey is one metadata-only watch: a resource in one namespace, or in
// all of them ("") for cluster-scoped kinds and when every namespace is owned.
type watchKey struct {
	GVR       schema.GroupVersionResource
	Namespace string
}

// tracker keeps an informer per watchKey the sweep applied to, so the sweep
// knows the live state of what it applied, and its health, without asking the
// apiserver. A statusless kind (see Statusless) is watched metadata-only; any
// other kind's watch delivers whole objects, computes each one's kstatus as the
// event arrives and stores only the metadata and that result (statusMeta).
// onEvent sees every add, update and delete (nil meta for a delete) with the
// health; it must not block.
type tracker struct {
	// clientFor is the clients a watch of a namespace ("" for all, or a
	// cluster-scoped kind) lists with: the git path's identity there.
	clientFor func(namespace string) (watchClients, error)
	stop      chan struct{}
	onEvent   func(key, metav1.Object, Health)
	// awaits names the kinds whose status this operator writes (Options.AwaitsStatus);
	// nil: none.
	awaits func(schema.GroupKind) bool

	mu      sync.Mutex
	watches map[watchKey]*watch
	closed  bool
}

// watchClients are the clients of one identity: metadata-only, and whole objects.
type watchClients struct {
	meta metadata.Interface
	dyn  dynamic.Interface
}

type watch struct {
	gk  schema.GroupKind
	inf cache.SharedIndexInformer
}

func newTracker(clientFor func(string) (watchClients, error), onEvent func(key, metav1.Object, Health)) *tracker {
	return &tracker{clientFor: clientFor, stop: make(chan struct{}), onEvent: onEvent, watches: map[watchKey]*watch{}}
}

// ensure starts the watches not yet running and waits, up to timeout, for
// the new ones to sync. A watch that does not sync in time (forbidden, say)
// keeps trying in the background, and later calls do not wait for it again;
// until it syncs, its objects count as unwatched and are applied through the
// get-and-dry-run path.
func (t *tracker) ensure(ctx context.Context, keys map[watchKey]schema.GroupKind, timeout time.Duration) {
	var synced []cache.InformerSynced
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	for wk, gk := range keys {
		if _, ok := t.watches[wk]; ok {
			continue
		}
		w := t.start(wk, gk)
		t.watches[wk] = w
		if w.inf != nil {
			synced = append(synced, w.inf.HasSynced)
		}
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Poll briefly: cache.WaitForCacheSync sleeps 100 ms a round, a tenth
	// of a cold sync of a thousand objects.
	for _, ok := range synced {
		for !ok() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func (t *tracker) start(wk watchKey, gk schema.GroupKind) *watch {
	c, err := t.clientFor(wk.Namespace)
	if err != nil {
		// no client, no watch (inf nil): the objects it would cover go through
		// the get-and-dry-run path, which reports the error by object
		return &watch{gk: gk}
	}
	var inf cache.SharedIndexInformer
	if Statusless(gk) || c.dyn == nil {
		inf = metadatainformer.NewFilteredMetadataInformer(c.meta, wk.GVR, wk.Namespace, 0, cache.Indexers{}, nil).Informer()
	} else {
		inf = dynamicinformer.NewFilteredDynamicInformer(c.dyn, wk.GVR, wk.Namespace, 0, cache.Indexers{}, nil).Informer()
		_ = inf.SetTransform(toStatusMeta(t.awaited(gk))) // before Run: cannot fail
	}
	emit := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = d.Obj, true
		}
		m, h, ok := metaOf(obj)
		if !ok {
			return
		}
		k := key{GroupKind: gk, Namespace: m.Namespace, Name: m.Name}
		if deleted {
			t.onEvent(k, nil, Health{Status: kstatus.NotFoundStatus})
			return
		}
		t.onEvent(k, m, h)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { emit(obj, false) },
		UpdateFunc: func(_, obj any) { emit(obj, false) },
		DeleteFunc: func(obj any) { emit(obj, true) },
	})
	go inf.Run(t.stop)
	return &watch{gk: gk, inf: inf}
}

// awaited reports whether a controller of this operator writes the status of gk's objects.
func (t *tracker) awaited(gk schema.GroupKind) bool { return t.awaits != nil && t.awaits(gk) }

// live returns what the watch shows of namespace/name: watched is false when
// no synced watch covers it; m is nil when it is absent.
func (t *tracker) live(wk watchKey, namespace, name string) (m metav1.Object, watched bool) {
	t.mu.Lock()
	w, ok := t.watches[wk]
	t.mu.Unlock()
	if !ok || w.inf == nil || !w.inf.HasSynced() {
		return nil, false
	}
	k := name
	if namespace != "" {
		k = namespace + "/" + name
	}
	obj, exists, err := w.inf.GetStore().GetByKey(k)
	if err != nil || !exists {
		return nil, true
	}
	pm, _, ok := metaOf(obj)
	if !ok {
		return nil, false
	}
	return pm, true
}

// health returns the health the watch computed for namespace/name: watched is
// false when no synced watch covers it; absent, it is NotFound.
func (t *tracker) health(wk watchKey, namespace, name string) (h Health, watched bool) {
	t.mu.Lock()
	w, ok := t.watches[wk]
	t.mu.Unlock()
	if !ok || w.inf == nil || !w.inf.HasSynced() {
		return Health{}, false
	}
	k := name
	if namespace != "" {
		k = namespace + "/" + name
	}
	obj, exists, err := w.inf.GetStore().GetByKey(k)
	if err != nil || !exists {
		return Health{Status: kstatus.NotFoundStatus}, true
	}
	_, h, ok = metaOf(obj)
	return h, ok
}

// metaOf reads what a watch stored: a statusMeta (a status watch) or a
// PartialObjectMetadata (a metadata-only one, health from metadata).
func metaOf(obj any) (*metav1.PartialObjectMetadata, Health, bool) {
	switch m := obj.(type) {
	case *statusMeta:
		return &m.PartialObjectMetadata, m.health, true
	case *metav1.PartialObjectMetadata:
		return m, metaHealth(m), true
	}
	return nil, Health{}, false
}

// close stops every watch; the tracker starts no more.
func (t *tracker) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.stop)
	}
}
