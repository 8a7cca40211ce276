package reconcile

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// priorityProgress is the queue priority of a CR woken by its children (a Deployment that
// became Available, a Service created, a child deleted out of band) or, during an upgrade,
// by its pods: work this operator already started, ahead of new CRs and spec changes
// (priority 0) and of resyncs and a restart's initial list (handler.LowPriority).
//
// controller-runtime's queue is FIFO within a priority. Without this, 5 000 Service CRs
// created at once queued every "my Deployment is Available" wake-up behind the whole
// backlog of CRs not yet built: a CR built in the first second wrote its Ready status
// only once the last CR had been built, and the operator's time to all Ready was the
// backlog plus 5 000 status writes after it (87 s of 639 against the floor's 11 s of
// 479). A CR woken by its children costs no apply (its children are known to be in sync)
// and at most one status write, so the backlog loses little to it; and a crash-looping
// candidate's pods reach the upgrade machine in the time of one reconcile, however deep
// the queue.
const priorityProgress = 10

// ahead is h, whose requests at the default priority are queued at priority p instead.
// Requests h queues at another priority (handler.LowPriority for an event of the initial
// list or a resync) keep theirs. With a queue that is not a priority queue it is h.
func ahead(h handler.EventHandler, p int) handler.EventHandler {
	return aheadHandler{h: h, p: p}
}

type aheadHandler struct {
	h handler.EventHandler
	p int
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (a aheadHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	a.h.Create(ctx, e, raise(q, a.p))
}

func (a aheadHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	a.h.Update(ctx, e, raise(q, a.p))
}

func (a aheadHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	a.h.Delete(ctx, e, raise(q, a.p))
}

func (a aheadHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	a.h.Generic(ctx, e, raise(q, a.p))
}

// raise returns q, adding at priority p what is added without one; q itself when it is not
// a priority queue.
func raise(q queue, p int) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return raised{PriorityQueue: pq, p: p}
}

// raised is a priority queue whose additions without a priority are at p.
type raised struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	p int
}

func (r raised) Add(item reconcile.Request) {
	r.AddWithOpts(priorityqueue.AddOpts{}, item)
}

func (r raised) AddAfter(item reconcile.Request, after time.Duration) {
	r.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (r raised) AddRateLimited(item reconcile.Request) {
	r.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (r raised) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = &r.p
	}
	r.PriorityQueue.AddWithOpts(o, items...)
}
