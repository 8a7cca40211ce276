package deploy

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// registered are the fleet's registrations id may see: its org's (looked up in that org's
// index), every org's for an admin. No credential is read or served.
func (s *Server) registered(ctx context.Context, id Identity) ([]Cluster, error) {
	if s.c.Fleet == nil || (!id.Admin && id.Org == "") {
		return nil, nil
	}
	var list []fleet.Cluster
	var err error
	if id.Admin {
		list, err = s.c.Fleet.All(ctx)
	} else {
		caller, cerr := fleet.PathCaller(id.Org) // the token's validated org claim
		if cerr != nil {
			return nil, nil // an org that cannot name a credential has no cluster
		}
		list, err = s.c.Fleet.List(ctx, caller)
	}
	if err != nil {
		return nil, err
	}
	out := make([]Cluster, 0, len(list))
	for _, fc := range list {
		out = append(out, RegisteredCluster(fc))
	}
	return out, nil
}

// RegisteredCluster is a registration as Argo CD's cluster: its endpoint and name, its
// namespaces bound, its org as label and project, and the fleet's condition Reached as its
// connection state. It is pure.
func RegisteredCluster(fc fleet.Cluster) Cluster {
	state := ConnectionState{Status: "Unknown", Message: "the fleet has not reached it yet"}
	if cond := meta.FindStatusCondition(fc.Conditions, "Reached"); cond != nil {
		state = ConnectionState{Status: "Failed", Message: cond.Message, AttemptedAt: timePtr(cond.LastTransitionTime.Time)}
		if cond.Status == metav1.ConditionTrue {
			state.Status = "Successful"
		}
	}
	labels := map[string]string{kinds.OrgLabel: fc.Org}
	if fc.Provider != "" {
		labels["provider"] = fc.Provider
	}
	return Cluster{Server: fc.Endpoint, Name: fc.Name, Namespaces: fc.Namespaces, Project: ProjectOf(fc.Org), Labels: labels,
		ConnectionState: state, Info: ClusterInfo{ConnectionState: state}}
}
