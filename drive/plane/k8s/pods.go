package k8s

import (
	"context"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func podOf(p *corev1.Pod) ops.Pod {
	out := ops.Pod{Name: p.Name, Namespace: p.Namespace, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Containers: []string{}}
	for _, c := range p.Spec.Containers {
		out.Containers = append(out.Containers, c.Name)
	}
	for _, s := range p.Status.ContainerStatuses {
		out.Restarts += s.RestartCount
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return out
}

func podsList(ctx context.Context, p *Plane, c Caller, req ops.PodsListRequest) (ops.PodsListReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.PodsListReply{}, err
	}
	list, err := b.Typed().CoreV1().Pods(req.Namespace).List(ctx, metav1.ListOptions{LabelSelector: req.Selector})
	if err != nil {
		return ops.PodsListReply{}, err
	}
	out := ops.PodsListReply{Pods: []ops.Pod{}}
	for i := range list.Items {
		out.Pods = append(out.Pods, podOf(&list.Items[i]))
	}
	slices.SortFunc(out.Pods, func(a, b ops.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Log bounds.
const (
	defaultTailLines = 200
	maxTailLines     = 5000
	maxLogBytes      = 1 << 20
)

func podsLogs(ctx context.Context, p *Plane, c Caller, req ops.PodsLogsRequest) (ops.PodsLogsReply, error) {
	if err := required("pod", req.Pod); err != nil {
		return ops.PodsLogsReply{}, err
	}
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.PodsLogsReply{}, err
	}
	tail := req.TailLines
	switch {
	case tail <= 0:
		tail = defaultTailLines
	case tail > maxTailLines:
		tail = maxTailLines
	}
	limit := int64(maxLogBytes + 1)
	rc, err := b.Typed().CoreV1().Pods(req.Namespace).GetLogs(req.Pod, &corev1.PodLogOptions{Container: req.Container,
		TailLines: &tail, LimitBytes: &limit, Previous: req.Previous}).Stream(ctx)
	if err != nil {
		return ops.PodsLogsReply{}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxLogBytes+1))
	if err != nil {
		return ops.PodsLogsReply{}, err
	}
	out := ops.PodsLogsReply{Log: string(data)}
	if len(data) > maxLogBytes {
		out.Log, out.Truncated = string(data[:maxLogBytes]), true
	}
	return out, nil
}
