package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/upgrade"
)

// PodCache is how the manager caches Pods: only those carrying the managed-by label key
// (every pod template our builders render, whatever value spec.labels gives it, and every
// pre-flight pod), and of those only what is read (TrimPod). The Kind controllers read pods for what
// they are stuck on and for the upgrade machine's crash-loop and pre-flight checks, and the
// upgrade machine's watch is on this cache: no cache of every Pod of the cluster.
func PodCache() cache.ByObject {
	req, err := labels.NewRequirement(kinds.LabelManagedBy, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*req), Transform: TrimPod}
}

// upgradeOwner is the name of the CR whose upgrade a pod with these labels may decide: the
// CR a pre-flight pod is of, else the instance label of the Deployment's pods (the selector
// label, the CR's name); empty for neither.
func upgradeOwner(l map[string]string) string {
	if n := l[upgrade.LabelPreflightOf]; n != "" {
		return n
	}
	return l[kinds.LabelInstance]
}

// podHealth is what the upgrade machine reads of a pod: whether it crash-loops (the
// Rolling check) and how it boots (the pre-flight check).
type podHealth struct {
	crashloop bool
	boot      upgrade.Boot
}

func healthOf(p *corev1.Pod) podHealth {
	b, _ := upgrade.BootOutcome(p)
	return podHealth{crashloop: upgrade.PodCrashLooping(p), boot: b}
}

// podHealthMoved passes a pod's update when what the upgrade machine reads of it changed,
// and a pod's creation when it is already more than booting (a cache filled after a
// restart); deletions and the other updates never wake a CR.
var podHealthMoved = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		p, ok := e.Object.(*corev1.Pod)
		return ok && healthOf(p) != podHealth{boot: upgrade.Booting}
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		return ok1 && ok2 && healthOf(o) != healthOf(n)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// upgradePod maps a pod whose health moved to the CR of this Kind it may decide, only while
// that CR has an upgrade in flight (Preflighting or Rolling, as this process last decided):
// a pod of any other CR costs a label and a map lookup, no reconcile.
func (r *KindReconciler) upgradePod(_ context.Context, pod client.Object) []ctrl.Request {
	name := upgradeOwner(pod.GetLabels())
	if name == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}
	if !r.memory.upgrading(key) {
		return nil
	}
	return []ctrl.Request{{NamespacedName: key}}
}

// watchesPods tells whether an upgrade in phase p is decided by its pods' status.
func watchesPods(p upgrade.Phase) bool {
	return p == upgrade.Preflighting || p == upgrade.Rolling
}
