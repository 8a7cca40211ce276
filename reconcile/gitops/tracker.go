package gitops

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// tracker keeps a metadata-only informer per watchKey the sweep applied to,
// so the sweep knows the live state of what it applied without asking the
// apiserver. onEvent sees every add, update and delete (nil meta for a
// delete); it must not block.
type tracker struct {
	// clientFor is the metadata client a watch of a namespace ("" for all, or
	// a cluster-scoped kind) lists with: the git path's identity there.
	clientFor func(namespace string) (metadata.Interface, error)
	stop      chan struct{}
	onEvent   func(key, metav1.Object)

	mu      sync.Mutex
	watches map[watchKey]*watch
	closed  bool
}

type watch struct {
	gk  schema.GroupKind
	inf cache.SharedIndexInformer
}

func newTracker(clientFor func(string) (metadata.Interface, error), onEvent func(key, metav1.Object)) *tracker {
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
	inf := metadatainformer.NewFilteredMetadataInformer(c, wk.GVR, wk.Namespace, 0, cache.Indexers{}, nil).Informer()
	emit := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, deleted = d.Obj, true
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		k := key{GroupKind: gk, Namespace: m.Namespace, Name: m.Name}
		if deleted {
			t.onEvent(k, nil)
			return
		}
		t.onEvent(k, m)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { emit(obj, false) },
		UpdateFunc: func(_, obj any) { emit(obj, false) },
		DeleteFunc: func(obj any) { emit(obj, true) },
	})
	go inf.Run(t.stop)
	return &watch{gk: gk, inf: inf}
}

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
	pm, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, false
	}
	return pm, true
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
