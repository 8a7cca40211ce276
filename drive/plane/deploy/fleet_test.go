package deploy

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// registrations is a cache of Cluster objects, in memory: the list is all the route reads
// (no selector, no namespace), so no apiserver behaviour is stood in for.
type registrations []fleetv1.Cluster

func (r registrations) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	panic("the clusters route lists, it never gets")
}

func (r registrations) List(_ context.Context, l client.ObjectList, _ ...client.ListOption) error {
	l.(*fleetv1.ClusterList).Items = slices.Clone(r)
	return nil
}

var _ client.Reader = registrations(nil)

func registration(name, org string, reached metav1.ConditionStatus, ns ...string) fleetv1.Cluster {
	c := fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleetv1.ClusterSpec{Org: org, Endpoint: "https://" + name + ".example:6443", Namespaces: ns}}
	if reached != "" {
		c.Status.Conditions = []metav1.Condition{{Type: "Reached", Status: reached, Reason: "R", Message: "m " + name}}
	}
	return c
}

// TestClustersRouteListsTheCallersRegistrations: the clusters route answers an org's
// caller its org's registrations only (org other's cluster is not named, even to a caller
// guessing it), an admin every org's, and a caller without an org none; each registration
// is served as Argo CD's cluster — its endpoint as server, its name, its bound, the
// fleet's condition Reached as connection state — and never a credential.
func TestClustersRouteListsTheCallersRegistrations(t *testing.T) {
	reg := &fleet.Registry{Reader: registrations{
		registration("b", "acme", metav1.ConditionTrue, "acme-web"),
		registration("c", "other", metav1.ConditionFalse),
		registration("d", "acme", ""),
	}}
	s := &Server{c: Config{Fleet: reg}}
	names := func(id Identity) []string {
		t.Helper()
		cs, err := s.registered(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	for _, tc := range []struct {
		id   Identity
		want []string
	}{
		{Identity{Org: "acme"}, []string{"b", "d"}},
		{Identity{Org: "other"}, []string{"c"}},
		{Identity{Org: "nobody"}, nil},
		{Identity{Org: "../acme"}, nil},
		{Identity{}, nil},
		{Identity{Admin: true}, []string{"b", "c", "d"}},
	} {
		if got := names(tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("%+v sees %v, want %v", tc.id, got, tc.want)
		}
	}
	if cs, _ := (&Server{}).registered(t.Context(), Identity{Admin: true}); len(cs) != 0 {
		t.Errorf("without a fleet the route lists registrations: %+v", cs)
	}

	b := RegisteredCluster(fleet.FromCR(ptr.To(registration("b", "acme", metav1.ConditionTrue, "acme-web"))))
	if b.Server != "https://b.example:6443" || b.Name != "b" || !slices.Equal(b.Namespaces, []string{"acme-web"}) ||
		b.ConnectionState.Status != "Successful" || b.Project != ProjectOf("acme") || b.Labels["hanzo.ai/org"] != "acme" {
		t.Errorf("registration b as a cluster: %+v", b)
	}
	if c := RegisteredCluster(fleet.FromCR(ptr.To(registration("c", "other", metav1.ConditionFalse)))); c.ConnectionState.Status != "Failed" || c.ConnectionState.Message != "m c" {
		t.Errorf("a registration the fleet cannot reach: %+v", c.ConnectionState)
	}
	if d := RegisteredCluster(fleet.FromCR(ptr.To(registration("d", "acme", "")))); d.ConnectionState.Status != "Unknown" {
		t.Errorf("a registration not reached yet: %+v", d.ConnectionState)
	}
}
