package k8s

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func nodeOf(n *corev1.Node) ops.Node {
	out := ops.Node{Name: n.Name, Unschedulable: n.Spec.Unschedulable, Kubelet: n.Status.NodeInfo.KubeletVersion,
		CPU: n.Status.Allocatable.Cpu().String(), Memory: n.Status.Allocatable.Memory().String(), Pods: n.Status.Allocatable.Pods().String()}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return out
}

func nodesList(ctx context.Context, p *Plane, c Caller, req ops.NodesListRequest) (ops.NodesListReply, error) {
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.NodesListReply{}, err
	}
	list, err := b.Typed().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.NodesListReply{}, err
	}
	out := ops.NodesListReply{Nodes: []ops.Node{}}
	for i := range list.Items {
		out.Nodes = append(out.Nodes, nodeOf(&list.Items[i]))
	}
	slices.SortFunc(out.Nodes, func(a, b ops.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// skipDrain reports why a pod is not evicted by a drain: a mirror pod (the kubelet's own),
// a DaemonSet's (it tolerates the cordon and would come back), or one already finished.
func skipDrain(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func nodesCordon(ctx context.Context, p *Plane, c Caller, req ops.NodesCordonRequest) (ops.NodesCordonReply, error) {
	if err := required("node", req.Node); err != nil {
		return ops.NodesCordonReply{}, err
	}
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.NodesCordonReply{}, err
	}
	cs := b.Typed()
	if _, err := cs.CoreV1().Nodes().Get(ctx, req.Node, metav1.GetOptions{}); err != nil {
		return ops.NodesCordonReply{}, err
	}
	// call 1: the one field of the node this op writes
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, !req.Uncordon)
	n, err := cs.CoreV1().Nodes().Patch(ctx, req.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return ops.NodesCordonReply{}, err
	}
	out := ops.NodesCordonReply{Node: n.Name, Unschedulable: n.Spec.Unschedulable}
	if req.Uncordon {
		return out, nil
	}
	// call 2: the node's pods
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", req.Node).String()})
	if err != nil {
		return out, err
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	// call 3: an eviction each; a budget's refusal is reported, never forced
	for i := range pods.Items {
		pod := &pods.Items[i]
		ref := ops.PodRef{Namespace: pod.Namespace, Name: pod.Name}
		if skipDrain(pod) {
			out.Skipped = append(out.Skipped, ref)
			continue
		}
		err := cs.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			out.Evicted = append(out.Evicted, ref)
		case apierrors.IsTooManyRequests(err):
			out.Refused = append(out.Refused, ops.EvictionRefusal{Pod: ref, Reason: "DisruptionBudget", Message: err.Error()})
		default:
			if ctx.Err() != nil {
				return out, err
			}
			out.Refused = append(out.Refused, ops.EvictionRefusal{Pod: ref, Reason: "Error", Message: err.Error()})
		}
	}
	return out, nil
}

// summary is the part of the kubelet's /stats/summary this op reads.
type summary struct {
	Pods []struct {
		Volumes []struct {
			PVCRef *struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"pvcRef"`
			UsedBytes      *int64 `json:"usedBytes"`
			CapacityBytes  *int64 `json:"capacityBytes"`
			AvailableBytes *int64 `json:"availableBytes"`
		} `json:"volume"`
	} `json:"pods"`
}

// nodeReadTimeout bounds one node's summary read: an unreachable kubelet costs this, not
// the whole op.
const nodeReadTimeout = 5 * time.Second

func nodesVolumeStats(ctx context.Context, p *Plane, c Caller, req ops.NodesVolumeStatsRequest) (ops.NodesVolumeStatsReply, error) {
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.NodesVolumeStatsReply{}, err
	}
	cs := b.Typed()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.NodesVolumeStatsReply{}, err
	}
	claims, err := cs.CoreV1().PersistentVolumeClaims(req.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.NodesVolumeStatsReply{}, err
	}
	out := ops.NodesVolumeStatsReply{NodesTotal: len(nodes.Items)}
	var mu sync.Mutex
	measured := map[ops.PodRef]bool{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, n := range nodes.Items {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			nctx, cancel := context.WithTimeout(ctx, nodeReadTimeout)
			defer cancel()
			raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", name, "proxy", "stats", "summary").DoRaw(nctx)
			var s summary
			if err == nil {
				err = json.Unmarshal(raw, &s)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.NodeErrors = append(out.NodeErrors, fmt.Sprintf("node %s: %v", name, err))
				return
			}
			out.NodesRead++
			for _, pod := range s.Pods {
				for _, v := range pod.Volumes {
					if v.PVCRef == nil || (req.Namespace != "" && v.PVCRef.Namespace != req.Namespace) {
						continue
					}
					ref := ops.PodRef{Namespace: v.PVCRef.Namespace, Name: v.PVCRef.Name}
					if measured[ref] {
						continue
					}
					measured[ref] = true
					out.Claims = append(out.Claims, ops.ClaimUsage{Claim: ref, Node: name,
						UsedBytes: deref(v.UsedBytes), CapacityBytes: deref(v.CapacityBytes), AvailableBytes: deref(v.AvailableBytes)})
				}
			}
		}(n.Name)
	}
	wg.Wait()
	for _, pvc := range claims.Items {
		ref := ops.PodRef{Namespace: pvc.Namespace, Name: pvc.Name}
		if !measured[ref] {
			out.Unmeasured = append(out.Unmeasured, ref)
		}
	}
	cmp := func(a, b ops.PodRef) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) }
	slices.SortFunc(out.Unmeasured, cmp)
	slices.SortFunc(out.Claims, func(a, b ops.ClaimUsage) int { return cmp(a.Claim, b.Claim) })
	slices.Sort(out.NodeErrors)
	return out, nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
