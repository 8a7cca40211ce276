package k8s

import (
	"context"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func clustersList(ctx context.Context, p *Plane, c Caller, _ ops.ClustersListRequest) (ops.ClustersListReply, error) {
	list, err := p.fleet.List(ctx, c.Org)
	if list == nil {
		list = []ops.Cluster{}
	}
	return ops.ClustersListReply{Clusters: list}, err
}

func clustersGet(ctx context.Context, p *Plane, c Caller, req ops.ClustersGetRequest) (ops.ClustersGetReply, error) {
	if err := required("cluster", req.Cluster); err != nil {
		return ops.ClustersGetReply{}, err
	}
	cl, err := p.fleet.Get(ctx, c.Org, req.Cluster)
	return ops.ClustersGetReply{Cluster: cl}, err
}

func clustersRegister(ctx context.Context, p *Plane, c Caller, req ops.ClustersRegisterRequest) (ops.ClustersRegisterReply, error) {
	if err := required("cluster", req.Cluster, "endpoint", req.Endpoint, "kubeconfig", req.Kubeconfig); err != nil {
		return ops.ClustersRegisterReply{}, err
	}
	cl, err := p.fleet.Register(ctx, c.Org, req)
	if err != nil {
		return ops.ClustersRegisterReply{}, err
	}
	rep := ops.ClustersRegisterReply{Cluster: cl}
	b, err := p.fleet.Reach(ctx, c.Org, req.Cluster)
	if err == nil {
		rep.Version, err = b.Status()
	}
	if err != nil {
		rep.Probe = err.Error()
	}
	return rep, nil
}

func clustersDeregister(ctx context.Context, p *Plane, c Caller, req ops.ClustersDeregisterRequest) (ops.ClustersDeregisterReply, error) {
	if err := required("cluster", req.Cluster); err != nil {
		return ops.ClustersDeregisterReply{}, err
	}
	if err := p.fleet.Deregister(ctx, c.Org, req.Cluster); err != nil {
		return ops.ClustersDeregisterReply{}, err
	}
	return ops.ClustersDeregisterReply{Deregistered: true}, nil
}

func clustersStatus(ctx context.Context, p *Plane, c Caller, req ops.ClustersStatusRequest) (ops.ClustersStatusReply, error) {
	b, err := p.reach(ctx, c, req.Cluster, "")
	if err != nil {
		return ops.ClustersStatusReply{}, err
	}
	v, err := b.Status()
	if err != nil {
		return ops.ClustersStatusReply{Reachable: false, Error: err.Error()}, nil
	}
	return ops.ClustersStatusReply{Reachable: true, Version: v}, nil
}
