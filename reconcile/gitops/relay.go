package gitops

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/openuniverse/operator/kinds"
)

// RequestedAt is the annotation a standby replica sets to hand a webhook to the leader.
const RequestedAt = "gitops.openuniverse.dev/requested-at"

// Relay carries a push webhook that reached a standby replica to the leader, the way
// Flux's receiver records intent on an object instead of acting in the handler: the
// standby stamps RequestedAt on one ConfigMap in the operator's namespace, and the
// leader, which watches that object (Watch), fires its sweep trigger when the stamp
// changes. Replicas behind one Service therefore all accept webhooks.
//
// A replica writes at most once per MinInterval: a request within it is
// coalesced into one write at the end of the interval, so a flood on a
// standby costs the apiserver one write a second, and no push is lost.
type Relay struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	Now       func() time.Time
	// MinInterval between two writes; 0 means DefaultWebhookMinInterval.
	MinInterval time.Duration
	// Log records a deferred write that failed.
	Log logr.Logger

	mu      sync.Mutex
	last    time.Time
	pending bool
}

const relayManager = kinds.ManagerWebhook

// Record stamps the request: one server-side apply, or, within MinInterval
// of the last one, a single deferred apply at the end of the interval.
func (r *Relay) Record(ctx context.Context) error {
	gap := r.MinInterval
	if gap <= 0 {
		gap = DefaultWebhookMinInterval
	}
	r.mu.Lock()
	if wait := r.last.Add(gap).Sub(r.Now()); !r.last.IsZero() && wait > 0 {
		if !r.pending {
			r.pending = true
			time.AfterFunc(wait, r.flush)
		}
		r.mu.Unlock()
		return nil
	}
	r.last = r.Now()
	r.mu.Unlock()
	return r.write(ctx)
}

// flush is the deferred write of the requests coalesced in one interval.
func (r *Relay) flush() {
	r.mu.Lock()
	r.pending, r.last = false, r.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.write(ctx); err != nil {
		r.Log.Error(err, "Relaying coalesced webhooks to the leader failed; the resync will catch up")
	}
}

func (r *Relay) write(ctx context.Context) error {
	cm := applycorev1.ConfigMap(r.Name, r.Namespace).
		WithAnnotations(map[string]string{RequestedAt: r.Now().UTC().Format(time.RFC3339Nano)})
	if _, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: relayManager, Force: true}); err != nil {
		return fmt.Errorf("record webhook on ConfigMap %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// Watch fires trig each time RequestedAt changes on the relay ConfigMap, until ctx ends.
// The value present when the watch starts does not fire: the leader sweeps at start.
func (r *Relay) Watch(ctx context.Context, trig *Trigger, log logr.Logger) error {
	lw := cache.NewListWatchFromClient(r.Client.CoreV1().RESTClient(), "configmaps", r.Namespace,
		fields.OneTermEqualSelector("metadata.name", r.Name))
	var mu sync.Mutex
	seen, synced := "", false
	observe := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		v := cm.Annotations[RequestedAt]
		if v == seen {
			return
		}
		seen = v
		if synced {
			log.V(1).Info("Webhook relayed by a standby replica", "requestedAt", v)
			trig.Fire()
		}
	}
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.ConfigMap{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    observe,
			UpdateFunc: func(_, obj any) { observe(obj) },
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	mu.Lock()
	synced = true
	mu.Unlock()
	<-ctx.Done()
	return nil
}
