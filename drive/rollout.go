package drive

import (
	"fmt"
	"sync"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// Rollout is what a drive's wait decides from one observed Deployment.
type Rollout string

// Rollout states.
const (
	RolloutPending Rollout = "pending" // not at the target yet, or not Current yet
	RolloutDone    Rollout = "done"    // runs the target and kstatus finds it Current
	RolloutFailed  Rollout = "failed"  // runs the target and kstatus finds it Failed (ProgressDeadlineExceeded)
)

// RolloutOf is the one health decision of a drive, from the observed Deployment only: the
// container running repo must run target (until then the Deployment's status is of the
// previous template and says nothing), then kstatus decides: Current is done, Failed
// (Progressing False, ProgressDeadlineExceeded, for the observed generation) is failed,
// anything else pending.
func RolloutOf(dep *unstructured.Unstructured, repo, target string) (Rollout, string) {
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, &d); err != nil {
		return RolloutPending, err.Error()
	}
	image := ""
	for _, c := range d.Spec.Template.Spec.Containers {
		if ofRepository(c.Image, repo) {
			image = c.Image
		}
	}
	if image != target {
		return RolloutPending, fmt.Sprintf("Deployment %s runs %s", d.Name, image)
	}
	res, err := kstatus.Compute(dep)
	if err != nil {
		return RolloutPending, err.Error()
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return RolloutDone, res.Message
	case kstatus.FailedStatus:
		return RolloutFailed, fmt.Sprintf("Deployment %s failed: %s", d.Name, res.Message)
	}
	return RolloutPending, fmt.Sprintf("Deployment %s is %s: %s", d.Name, res.Status, res.Message)
}

// RolledOut reports whether RolloutOf finds the rollout done.
func RolledOut(dep *unstructured.Unstructured, repo, target string) (bool, string) {
	r, msg := RolloutOf(dep, repo, target)
	return r == RolloutDone, msg
}

// DeploymentWatch wakes the rollout waits of the Deployments a watch delivers: Handler is
// added to an informer of Deployments (the manager cache's, shared with the Kind
// controllers' Owns), and every add, update or delete of a Deployment signals the waits
// subscribed to it. The zero value is ready.
type DeploymentWatch struct {
	mu      sync.Mutex
	waiters map[types.NamespacedName]map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives (coalesced) a signal whenever the watch
// delivers key, and the function that ends the subscription.
func (w *DeploymentWatch) Subscribe(key types.NamespacedName) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.waiters == nil {
		w.waiters = map[types.NamespacedName]map[chan struct{}]struct{}{}
	}
	if w.waiters[key] == nil {
		w.waiters[key] = map[chan struct{}]struct{}{}
	}
	w.waiters[key][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.waiters[key], ch)
		if len(w.waiters[key]) == 0 {
			delete(w.waiters, key)
		}
		w.mu.Unlock()
	}
}

// Waiting is how many waits are subscribed to key.
func (w *DeploymentWatch) Waiting(key types.NamespacedName) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiters[key])
}

// Notify signals the waits subscribed to key; a wait already signalled stays signalled once.
func (w *DeploymentWatch) Notify(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Handler is the informer event handler that notifies the object's key.
func (w *DeploymentWatch) Handler() toolscache.ResourceEventHandler {
	notify := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if o, ok := obj.(interface {
			GetNamespace() string
			GetName() string
		}); ok {
			w.Notify(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
		DeleteFunc: notify,
	}
}
