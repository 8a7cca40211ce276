package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// What the manager's caches keep of the objects the Kind controllers read: only the fields
// something reads, so that 1 000 CRs' children and pods do not cost their full copies.

// TrimChild is the cache transform of the Kind controllers' children (the Owns caches):
// the object as the apiserver sent it but for the managedFields entries of its status
// subresource (the Deployment controller's, per child), which nothing reads. The entries of
// the main resource and of /scale stay: childStale fingerprints our own manager's entry,
// the apply names the drifting managers from the others' (status writes are never drift),
// prune asks whether we applied it; the spec, the metadata and the status stay for the
// cold dry-run compare and for readiness.
func TrimChild(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		// in place, on the map: GetManagedFields/SetManagedFields would convert every entry
		md, _ := o.Object["metadata"].(map[string]any)
		entries, _ := md["managedFields"].([]any)
		keep := entries[:0]
		for _, e := range entries {
			if m, _ := e.(map[string]any); m["subresource"] != "status" {
				keep = append(keep, e)
			}
		}
		if len(keep) < len(entries) {
			clear(entries[len(keep):])
			md["managedFields"] = keep
		}
	case metav1.Object:
		entries := o.GetManagedFields()
		keep := make([]metav1.ManagedFieldsEntry, 0, len(entries))
		for _, e := range entries {
			if e.Subresource != "status" {
				keep = append(keep, e)
			}
		}
		if len(keep) < len(entries) {
			o.SetManagedFields(keep)
		}
	}
	return obj, nil
}

// TrimPod is the cache transform of Pods (PodCache): what the Kind controllers and the
// upgrade machine read of a pod — its identity, labels and owners; each container's name
// and image (AnyCrashLooping matches the first container's image); its phase, reason,
// conditions and container statuses (PodProblem, BootOutcome, PodCrashLooping) — and
// nothing else: no managedFields, annotations, volumes, env, probes or resources. A
// tombstone is passed through.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion, Generation: p.Generation,
		CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp, Labels: p.Labels, OwnerReferences: p.OwnerReferences,
	}}
	out.Spec.Containers = trimContainers(p.Spec.Containers)
	out.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	out.Status = corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message, Conditions: p.Status.Conditions,
		ContainerStatuses: trimStatuses(p.Status.ContainerStatuses), InitContainerStatuses: trimStatuses(p.Status.InitContainerStatuses)}
	return out, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

func trimStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = corev1.ContainerStatus{Name: s.Name, State: s.State, LastTerminationState: s.LastTerminationState, Ready: s.Ready,
			RestartCount: s.RestartCount, Image: s.Image, Started: s.Started}
	}
	return out
}

// childCaches adds to byObject the TrimChild transform of every child kind the Kinds of
// reg own and mapper serves; seen holds the kinds byObject already has an entry for, whose
// own transform is kept (a kind has one cache).
func childCaches(byObject map[client.Object]cache.ByObject, seen map[schema.GroupVersionKind]client.Object, reg kinds.Registry, group string, mapper meta.RESTMapper) {
	for _, e := range reg {
		for _, child := range e.OwnedGVKs(group) {
			if _, err := mapper.RESTMapping(child.GroupKind(), child.Version); err != nil {
				continue
			}
			if obj, ok := seen[child]; ok {
				if c := byObject[obj]; c.Transform == nil {
					c.Transform = TrimChild
					byObject[obj] = c
				}
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(child)
			byObject[u] = cache.ByObject{Transform: TrimChild}
			seen[child] = u
		}
	}
}

var (
	_ toolscache.TransformFunc = TrimChild
	_ toolscache.TransformFunc = TrimPod
)
