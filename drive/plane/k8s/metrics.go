package k8s

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// podMetricsList is the part of metrics.k8s.io/v1beta1 PodMetricsList this op reads.
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Containers []struct {
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

func metricsPods(ctx context.Context, p *Plane, c Caller, req ops.MetricsPodsRequest) (ops.MetricsPodsReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.MetricsPodsReply{}, err
	}
	raw, err := b.Typed().CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", req.Namespace, "pods").DoRaw(ctx)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsServiceUnavailable(err):
		return ops.MetricsPodsReply{Available: false, Reason: "the cluster serves no metrics API (metrics.k8s.io): usage unknown, not zero"}, nil
	case err != nil:
		return ops.MetricsPodsReply{}, err
	}
	var list podMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return ops.MetricsPodsReply{}, err
	}
	out := ops.MetricsPodsReply{Available: true, Pods: []ops.PodUsage{}}
	for _, it := range list.Items {
		u := ops.PodUsage{Name: it.Metadata.Name}
		var cpu, mem resource.Quantity
		for _, ct := range it.Containers {
			if q, err := resource.ParseQuantity(ct.Usage["cpu"]); err == nil {
				cpu.Add(q)
			}
			if q, err := resource.ParseQuantity(ct.Usage["memory"]); err == nil {
				mem.Add(q)
			}
		}
		u.CPU, u.Memory = cpu.String(), mem.String()
		out.Pods = append(out.Pods, u)
	}
	slices.SortFunc(out.Pods, func(a, b ops.PodUsage) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
