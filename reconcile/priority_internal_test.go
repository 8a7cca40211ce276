package reconcile

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestAheadPriorities: a child's event wakes its controller ahead of new work, unless it is
// of the initial list or a resync (low, as controller-runtime queues them); a queue that is
// not a priority queue still gets the request.
func TestAheadPriorities(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	h := ahead(handler.EnqueueRequestForOwner(clientgoscheme.Scheme, mapper, &appsv1.Deployment{}, handler.OnlyControllerOwner()), priorityProgress)
	child := func(owner, rv string) client.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner + "-pod", ResourceVersion: rv,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner, UID: types.UID(owner), Controller: new(true)}}}}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		send func(q queue)
		want int
	}{
		{"created", func(q queue) { h.Create(ctx, event.CreateEvent{Object: child("web", "1")}, q) }, priorityProgress},
		{"created, initial list", func(q queue) {
			h.Create(ctx, event.CreateEvent{Object: child("web", "1"), IsInInitialList: true}, q)
		}, handler.LowPriority},
		{"updated", func(q queue) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: child("web", "1"), ObjectNew: child("web", "2")}, q)
		}, priorityProgress},
		{"resync", func(q queue) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: child("web", "1"), ObjectNew: child("web", "1")}, q)
		}, handler.LowPriority},
		{"deleted", func(q queue) { h.Delete(ctx, event.DeleteEvent{Object: child("web", "1")}, q) }, priorityProgress},
		{"generic", func(q queue) { h.Generic(ctx, event.GenericEvent{Object: child("web", "1")}, q) }, priorityProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			tc.send(q)
			item, p, _ := q.GetWithPriority()
			if item.Name != "web" || item.Namespace != "ns" {
				t.Fatalf("queued %v, want ns/web", item)
			}
			if p != tc.want {
				t.Errorf("priority %d, want %d", p, tc.want)
			}
		})
	}

	t.Run("ahead of a backlog", func(t *testing.T) {
		q := priorityqueue.New[reconcile.Request]("test")
		defer q.ShutDown()
		for _, n := range []string{"new-1", "new-2", "new-3"} {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: n}})
		}
		// new-2's child became Available while new-2 waited in the queue: it moves ahead too
		h.Update(ctx, event.UpdateEvent{ObjectOld: child("built", "1"), ObjectNew: child("built", "2")}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: child("new-2", "1"), ObjectNew: child("new-2", "2")}, q)
		var got []string
		for range 4 {
			item, _, _ := q.GetWithPriority()
			got = append(got, item.Name)
			q.Done(item)
		}
		want := []string{"built", "new-2", "new-1", "new-3"}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("order %v, want %v", got, want)
			}
		}
	})

	t.Run("not a priority queue", func(t *testing.T) {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		h.Create(ctx, event.CreateEvent{Object: child("web", "1")}, q)
		if item, _ := q.Get(); item.Name != "web" {
			t.Fatalf("queued %v, want ns/web", item)
		}
	})
}
