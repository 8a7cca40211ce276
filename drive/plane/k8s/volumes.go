package k8s

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func claimOf(c *corev1.PersistentVolumeClaim) ops.Claim {
	out := ops.Claim{Name: c.Name, Namespace: c.Namespace, Phase: string(c.Status.Phase), Volume: c.Spec.VolumeName,
		Request: c.Spec.Resources.Requests.Storage().String()}
	if c.Spec.StorageClassName != nil {
		out.StorageClass = *c.Spec.StorageClassName
	}
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		out.Capacity = q.String()
	}
	return out
}

func volumesListClaims(ctx context.Context, p *Plane, c Caller, req ops.VolumesListClaimsRequest) (ops.VolumesListClaimsReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.VolumesListClaimsReply{}, err
	}
	list, err := b.Typed().CoreV1().PersistentVolumeClaims(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.VolumesListClaimsReply{}, err
	}
	out := ops.VolumesListClaimsReply{Claims: []ops.Claim{}}
	for i := range list.Items {
		out.Claims = append(out.Claims, claimOf(&list.Items[i]))
	}
	slices.SortFunc(out.Claims, func(a, b ops.Claim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// maxClaimGiB bounds a claim's size (64 TiB).
const maxClaimGiB = 64 << 10

// GrowTo decides a claim's new request: sizeGiB GiB, refused unless it is above current
// (a claim never shrinks, and the same size is no change). It is pure.
func GrowTo(current resource.Quantity, sizeGiB int64) (resource.Quantity, error) {
	if sizeGiB <= 0 || sizeGiB > maxClaimGiB {
		return resource.Quantity{}, badf("sizeGiB %d: between 1 and %d", sizeGiB, maxClaimGiB)
	}
	want := *resource.NewQuantity(sizeGiB<<30, resource.BinarySI)
	if want.Cmp(current) <= 0 {
		return resource.Quantity{}, badf("sizeGiB %d (%s) is not above the claim's request %s: a claim only grows", sizeGiB, want.String(), current.String())
	}
	return want, nil
}

func volumesExpandClaim(ctx context.Context, p *Plane, c Caller, req ops.VolumesExpandClaimRequest) (ops.VolumesExpandClaimReply, error) {
	if err := required("claim", req.Claim); err != nil {
		return ops.VolumesExpandClaimReply{}, err
	}
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.VolumesExpandClaimReply{}, err
	}
	pvcs := b.Typed().CoreV1().PersistentVolumeClaims(req.Namespace)
	pvc, err := pvcs.Get(ctx, req.Claim, metav1.GetOptions{})
	if err != nil {
		return ops.VolumesExpandClaimReply{}, err
	}
	current := pvc.Spec.Resources.Requests.Storage()
	want, err := GrowTo(*current, req.SizeGiB)
	if err != nil {
		return ops.VolumesExpandClaimReply{}, err
	}
	// the resourceVersion makes the check and the write one decision: a concurrent change
	// is a conflict, not a shrink
	patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"spec":{"resources":{"requests":{"storage":%q}}}}`, pvc.ResourceVersion, want.String())
	pvc, err = pvcs.Patch(ctx, req.Claim, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return ops.VolumesExpandClaimReply{}, err
	}
	return ops.VolumesExpandClaimReply{Claim: claimOf(pvc), Previous: current.String()}, nil
}

func volumesListVolumes(ctx context.Context, p *Plane, c Caller, req ops.VolumesListVolumesRequest) (ops.VolumesListVolumesReply, error) {
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.VolumesListVolumesReply{}, err
	}
	list, err := b.Typed().CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.VolumesListVolumesReply{}, err
	}
	out := ops.VolumesListVolumesReply{Volumes: []ops.Volume{}}
	for _, v := range list.Items {
		vol := ops.Volume{Name: v.Name, Phase: string(v.Status.Phase), Capacity: v.Spec.Capacity.Storage().String(),
			StorageClass: v.Spec.StorageClassName, ReclaimPolicy: string(v.Spec.PersistentVolumeReclaimPolicy)}
		if r := v.Spec.ClaimRef; r != nil {
			vol.Claim = &ops.PodRef{Namespace: r.Namespace, Name: r.Name}
		}
		out.Volumes = append(out.Volumes, vol)
	}
	slices.SortFunc(out.Volumes, func(a, b ops.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func volumesListClasses(ctx context.Context, p *Plane, c Caller, req ops.VolumesListClassesRequest) (ops.VolumesListClassesReply, error) {
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.VolumesListClassesReply{}, err
	}
	list, err := b.Typed().StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.VolumesListClassesReply{}, err
	}
	out := ops.VolumesListClassesReply{Classes: []ops.StorageClass{}}
	for _, s := range list.Items {
		out.Classes = append(out.Classes, ops.StorageClass{Name: s.Name, Provisioner: s.Provisioner,
			AllowExpansion: s.AllowVolumeExpansion != nil && *s.AllowVolumeExpansion,
			Default:        s.Annotations["storageclass.kubernetes.io/is-default-class"] == "true"})
	}
	slices.SortFunc(out.Classes, func(a, b ops.StorageClass) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
