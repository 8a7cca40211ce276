package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
)

// Cluster is a registration as the fleet answers it. There is no credential field: the
// credential is at Ref.
type Cluster struct {
	Name       string
	Org        string
	Provider   string
	Endpoint   string
	Nodes      int32
	GPUs       fleetv1.GPUs
	Namespaces []string // empty: the whole cluster
	Registered time.Time
	Default    bool
	// version is the Cluster object's generation: a cached Bound is rebuilt when the
	// registration's spec changes, not when a loop writes its status.
	version string
}

// Ref is the derived location of the registration's credential.
func (c Cluster) Ref() (CredentialRef, error) { return RefOf(c.Org, c.Name) }

// FromCR is the registration a Cluster object declares. Namespaces are sorted and unique.
func FromCR(cr *fleetv1.Cluster) Cluster {
	c := Cluster{
		Name: cr.Name, Org: cr.Spec.Org, Provider: cr.Spec.Provider, Endpoint: cr.Spec.Endpoint,
		Nodes: cr.Spec.Nodes, Namespaces: slices.Compact(slices.Sorted(slices.Values(cr.Spec.Namespaces))),
		Default: cr.Spec.Default, version: strconv.FormatInt(cr.Generation, 10),
	}
	if cr.Spec.GPUs != nil {
		c.GPUs = *cr.Spec.GPUs
	}
	if cr.Status.Registered != nil {
		c.Registered = cr.Status.Registered.Time
	}
	return c
}

// ErrNoCluster: the caller's org has no cluster of that name (whether or not another org
// has one: the answer is the same).
var ErrNoCluster = errors.New("no such cluster")

// Registry reads the registrations: the Cluster objects of the home cluster. Reader may be
// the manager's cache.
type Registry struct {
	Reader client.Reader
}

// Lookup returns cluster name of the caller's org, looked up in that org's index only.
func (r Registry) Lookup(ctx context.Context, caller Caller, name string) (Cluster, error) {
	if caller.org == "" {
		return Cluster{}, ErrNoCaller
	}
	if err := ValidName(name); err != nil {
		return Cluster{}, fmt.Errorf("cluster %q of org %s: %w", name, caller.org, ErrNoCluster)
	}
	var cr fleetv1.Cluster
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: name}, &cr); err != nil {
		if apierrors.IsNotFound(err) {
			return Cluster{}, fmt.Errorf("cluster %q of org %s: %w", name, caller.org, ErrNoCluster)
		}
		return Cluster{}, fmt.Errorf("cluster %q of org %s: %w", name, caller.org, err)
	}
	if cr.Spec.Org != caller.org {
		return Cluster{}, fmt.Errorf("cluster %q of org %s: %w", name, caller.org, ErrNoCluster)
	}
	return FromCR(&cr), nil
}

// List returns the caller's org's registrations, sorted by name.
func (r Registry) List(ctx context.Context, caller Caller) ([]Cluster, error) {
	if caller.org == "" {
		return nil, ErrNoCaller
	}
	var list fleetv1.ClusterList
	if err := r.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list clusters of org %s: %w", caller.org, err)
	}
	var out []Cluster
	for i := range list.Items {
		if list.Items[i].Spec.Org == caller.org {
			out = append(out, FromCR(&list.Items[i]))
		}
	}
	slices.SortFunc(out, func(a, b Cluster) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}
