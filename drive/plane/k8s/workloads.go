package k8s

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func images(spec corev1.PodSpec) []string {
	out := []string{}
	for _, c := range spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func fromDeployment(d *appsv1.Deployment) ops.Workload {
	w := ops.Workload{Kind: "Deployment", Name: d.Name, Namespace: d.Namespace, Ready: d.Status.ReadyReplicas,
		Updated: d.Status.UpdatedReplicas, Available: d.Status.AvailableReplicas, Paused: d.Spec.Paused, Images: images(d.Spec.Template.Spec)}
	if d.Spec.Replicas != nil {
		w.Replicas = *d.Spec.Replicas
	}
	return w
}

func fromStatefulSet(s *appsv1.StatefulSet) ops.Workload {
	w := ops.Workload{Kind: "StatefulSet", Name: s.Name, Namespace: s.Namespace, Ready: s.Status.ReadyReplicas,
		Updated: s.Status.UpdatedReplicas, Available: s.Status.AvailableReplicas, Images: images(s.Spec.Template.Spec)}
	if s.Spec.Replicas != nil {
		w.Replicas = *s.Spec.Replicas
	}
	return w
}

func fromDaemonSet(d *appsv1.DaemonSet) ops.Workload {
	return ops.Workload{Kind: "DaemonSet", Name: d.Name, Namespace: d.Namespace, Replicas: d.Status.DesiredNumberScheduled,
		Ready: d.Status.NumberReady, Updated: d.Status.UpdatedNumberScheduled, Available: d.Status.NumberAvailable, Images: images(d.Spec.Template.Spec)}
}

func workloadsList(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsListRequest) (ops.WorkloadsListReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.WorkloadsListReply{}, err
	}
	apps := b.Typed().AppsV1()
	out := ops.WorkloadsListReply{Workloads: []ops.Workload{}}
	ds, err := apps.Deployments(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	for i := range ds.Items {
		out.Workloads = append(out.Workloads, fromDeployment(&ds.Items[i]))
	}
	ss, err := apps.StatefulSets(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	for i := range ss.Items {
		out.Workloads = append(out.Workloads, fromStatefulSet(&ss.Items[i]))
	}
	dms, err := apps.DaemonSets(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, err
	}
	for i := range dms.Items {
		out.Workloads = append(out.Workloads, fromDaemonSet(&dms.Items[i]))
	}
	slices.SortFunc(out.Workloads, func(a, b ops.Workload) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
	return out, nil
}

// workload reads the workload ref names (and checks kind against allowed).
func (p *Plane) workload(ctx context.Context, c Caller, ref ops.WorkloadRef, allowed ...string) (Bound, ops.Workload, error) {
	if err := required("kind", ref.Kind, "name", ref.Name); err != nil {
		return nil, ops.Workload{}, err
	}
	if len(allowed) == 0 {
		allowed = []string{"Deployment", "StatefulSet", "DaemonSet"}
	}
	if !slices.Contains(allowed, ref.Kind) {
		return nil, ops.Workload{}, badf("kind %q: one of %s", ref.Kind, strings.Join(allowed, ", "))
	}
	b, err := p.namespaced(ctx, c, ref.Cluster, ref.Namespace)
	if err != nil {
		return nil, ops.Workload{}, err
	}
	w, err := getWorkload(ctx, b, ref)
	return b, w, err
}

func getWorkload(ctx context.Context, b Bound, ref ops.WorkloadRef) (ops.Workload, error) {
	apps := b.Typed().AppsV1()
	switch ref.Kind {
	case "Deployment":
		d, err := apps.Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ops.Workload{}, err
		}
		return fromDeployment(d), nil
	case "StatefulSet":
		s, err := apps.StatefulSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ops.Workload{}, err
		}
		return fromStatefulSet(s), nil
	default:
		d, err := apps.DaemonSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return ops.Workload{}, err
		}
		return fromDaemonSet(d), nil
	}
}

// patchWorkload merge-patches the workload of ref.
func patchWorkload(ctx context.Context, b Bound, ref ops.WorkloadRef, patch []byte, sub ...string) error {
	apps := b.Typed().AppsV1()
	o := metav1.PatchOptions{FieldManager: FieldManager}
	var err error
	switch ref.Kind {
	case "Deployment":
		_, err = apps.Deployments(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, o, sub...)
	case "StatefulSet":
		_, err = apps.StatefulSets(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, o, sub...)
	default:
		_, err = apps.DaemonSets(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, o, sub...)
	}
	return err
}

func workloadsGet(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsGetRequest) (ops.WorkloadsGetReply, error) {
	_, w, err := p.workload(ctx, c, req.WorkloadRef)
	return ops.WorkloadsGetReply{Workload: w}, err
}

func workloadsScale(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsScaleRequest) (ops.WorkloadsScaleReply, error) {
	if req.Replicas < 0 || req.Replicas > p.opts.MaxReplicas {
		return ops.WorkloadsScaleReply{}, badf("replicas %d: between 0 and %d", req.Replicas, p.opts.MaxReplicas)
	}
	b, w, err := p.workload(ctx, c, req.WorkloadRef, "Deployment", "StatefulSet")
	if err != nil {
		return ops.WorkloadsScaleReply{}, err
	}
	if err := patchWorkload(ctx, b, req.WorkloadRef, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, req.Replicas), "scale"); err != nil {
		return ops.WorkloadsScaleReply{}, err
	}
	after, err := getWorkload(ctx, b, req.WorkloadRef)
	return ops.WorkloadsScaleReply{Previous: w.Replicas, Workload: after}, err
}

func workloadsRestart(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsRestartRequest) (ops.WorkloadsRestartReply, error) {
	b, _, err := p.workload(ctx, c, req.WorkloadRef)
	if err != nil {
		return ops.WorkloadsRestartReply{}, err
	}
	at := p.now().UTC().Format(time.RFC3339)
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, at)
	if err := patchWorkload(ctx, b, req.WorkloadRef, patch); err != nil {
		return ops.WorkloadsRestartReply{}, err
	}
	return ops.WorkloadsRestartReply{RestartedAt: at}, nil
}

func setPaused(ctx context.Context, p *Plane, c Caller, ref ops.WorkloadRef, paused bool) (bool, error) {
	b, _, err := p.workload(ctx, c, ref, "Deployment")
	if err != nil {
		return false, err
	}
	if err := patchWorkload(ctx, b, ref, fmt.Appendf(nil, `{"spec":{"paused":%t}}`, paused)); err != nil {
		return false, err
	}
	return paused, nil
}

func workloadsPause(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsPauseRequest) (ops.WorkloadsPauseReply, error) {
	paused, err := setPaused(ctx, p, c, req.WorkloadRef, true)
	return ops.WorkloadsPauseReply{Paused: paused}, err
}

func workloadsResume(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsResumeRequest) (ops.WorkloadsResumeReply, error) {
	_, err := setPaused(ctx, p, c, req.WorkloadRef, false)
	return ops.WorkloadsResumeReply{Paused: false}, err
}

func ownedBy(refs []metav1.OwnerReference, kind, name string) bool {
	for _, o := range refs {
		if o.Controller != nil && *o.Controller && o.Kind == kind && o.Name == name {
			return true
		}
	}
	return false
}

func workloadsHistory(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsHistoryRequest) (ops.WorkloadsHistoryReply, error) {
	b, _, err := p.workload(ctx, c, req.WorkloadRef)
	if err != nil {
		return ops.WorkloadsHistoryReply{}, err
	}
	apps := b.Typed().AppsV1()
	out := ops.WorkloadsHistoryReply{Revisions: []ops.Revision{}}
	if req.Kind == "Deployment" {
		rss, err := apps.ReplicaSets(req.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, err
		}
		for _, rs := range rss.Items {
			if !ownedBy(rs.OwnerReferences, req.Kind, req.Name) {
				continue
			}
			n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
			out.Revisions = append(out.Revisions, ops.Revision{Revision: n, Name: rs.Name,
				Created: rs.CreationTimestamp.UTC().Format(time.RFC3339), Images: images(rs.Spec.Template.Spec)})
		}
	} else {
		crs, err := apps.ControllerRevisions(req.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, err
		}
		for _, cr := range crs.Items {
			if ownedBy(cr.OwnerReferences, req.Kind, req.Name) {
				out.Revisions = append(out.Revisions, ops.Revision{Revision: cr.Revision, Name: cr.Name, Created: cr.CreationTimestamp.UTC().Format(time.RFC3339)})
			}
		}
	}
	slices.SortFunc(out.Revisions, func(a, b ops.Revision) int { return int(b.Revision - a.Revision) })
	return out, nil
}

func workloadsDelete(ctx context.Context, p *Plane, c Caller, req ops.WorkloadsDeleteRequest) (ops.WorkloadsDeleteReply, error) {
	if req.Confirm != req.Name {
		return ops.WorkloadsDeleteReply{}, badf("confirm must repeat the workload's name %q", req.Name)
	}
	b, _, err := p.workload(ctx, c, req.WorkloadRef)
	if err != nil {
		return ops.WorkloadsDeleteReply{}, err
	}
	apps := b.Typed().AppsV1()
	bg := metav1.DeletePropagationBackground
	o := metav1.DeleteOptions{PropagationPolicy: &bg}
	switch req.Kind {
	case "Deployment":
		err = apps.Deployments(req.Namespace).Delete(ctx, req.Name, o)
	case "StatefulSet":
		s, gerr := apps.StatefulSets(req.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if gerr != nil {
			return ops.WorkloadsDeleteReply{}, gerr
		}
		if pol := s.Spec.PersistentVolumeClaimRetentionPolicy; pol != nil && pol.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			return ops.WorkloadsDeleteReply{}, errorf(CodeForbidden, "StatefulSet %s/%s deletes its claims when deleted (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete): nothing in the plane deletes a claim", req.Namespace, req.Name)
		}
		o.Preconditions = &metav1.Preconditions{ResourceVersion: &s.ResourceVersion}
		err = apps.StatefulSets(req.Namespace).Delete(ctx, req.Name, o)
	default:
		err = apps.DaemonSets(req.Namespace).Delete(ctx, req.Name, o)
	}
	if err != nil {
		return ops.WorkloadsDeleteReply{}, err
	}
	return ops.WorkloadsDeleteReply{Deleted: true}, nil
}
