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

	"github.com/openuniverse/operator/reconcile"
)

// RequestedAt is the annotation a standby replica sets to hand a webhook to the leader.
const RequestedAt = "gitops.openuniverse.dev/requested-at"

// Relay carries a push webhook that reached a standby replica to the leader, the way
// Flux's receiver records intent on an object instead of acting in the handler: the
// standby stamps RequestedAt on one ConfigMap in the operator's namespace, and the
// leader, which watches that object (Watch), fires its sweep trigger when the stamp
// changes. Replicas behind one Service therefore all accept webhooks.
type Relay struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	Now       func() time.Time
}

const relayManager = reconcile.ManagerWebhook

// Record stamps the request; one server-side apply.
func (r *Relay) Record(ctx context.Context) error {
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
