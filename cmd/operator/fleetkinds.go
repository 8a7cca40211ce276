package main

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// fleetKindsOptions configures the Kind controllers on the registered clusters.
type fleetKindsOptions struct {
	On bool
}

func (o *fleetKindsOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.On, "fleet-kind-controllers", true,
		"With --fleet, run the Kind controllers on every registered cluster too (the Cluster objects of this cluster, each credential a Secret fleet-<sha256 prefix> in --namespace): "+
			"one cache and one controller per Kind for each, the CRs there materialized there; a bounded registration watches its namespaces only. Needs the kinds loop.")
}

// setupFleetKinds adds the Clusters runnable (leader only) when --fleet, --fleet-kind-controllers
// (default on) and the kinds loop are on and this cluster serves the Cluster Kind. f is the fleet to
// reach the clusters through; nil builds one over the manager's cache (the registrations)
// and a direct reader (the credential Secrets: one GET per registration per resync).
func setupFleetKinds(mgr ctrl.Manager, o *runOptions, f *fleet.Fleet, opts []reconcile.SetupOption, log logr.Logger) error {
	if !o.Fleet.On || !o.FleetKinds.On || !slices.Contains(o.Controllers, "kinds") {
		return nil
	}
	gvk := fleetv1.GroupVersion(o.APIGroup).WithKind(fleetv1.Kind)
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version); err != nil {
		return fmt.Errorf("--fleet-kind-controllers: the cluster does not serve %s (install the CRDs first): %w", gvk, err)
	}
	if f == nil {
		f = &fleet.Fleet{Registry: fleet.Registry{Reader: mgr.GetClient()},
			Store: fleet.SecretStore{Reader: mgr.GetAPIReader(), Namespace: o.Namespace}, Scheme: mgr.GetScheme(),
			AllowNonRoutable: o.Fleet.AllowNonRoutable}
	}
	return mgr.Add(&reconcile.Clusters{Home: mgr, Fleet: f, Registry: kindRegistry(kinds.Builtin(), o.Controllers), Group: o.APIGroup,
		Options: opts, Log: log})
}
