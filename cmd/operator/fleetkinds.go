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
// (default on) and the kinds loop are on and this cluster serves the Cluster Kind. It reaches the
// clusters through the process's fleet (shared, built by run: runFleet), read over the
// manager's cache (the registrations) and a direct reader (the credential Secrets: one GET per
// registration per resync).
func setupFleetKinds(mgr ctrl.Manager, o *runOptions, shared *fleet.Fleet, opts []reconcile.SetupOption, log logr.Logger) error {
	if !o.Fleet.On || !o.FleetKinds.On || !slices.Contains(o.Controllers, "kinds") {
		return nil
	}
	gvk := fleetv1.GroupVersion(o.APIGroup).WithKind(fleetv1.Kind)
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version); err != nil {
		return fmt.Errorf("--fleet-kind-controllers: the cluster does not serve %s (install the CRDs first): %w", gvk, err)
	}
	f := shared.Reading(fleet.Registry{Reader: mgr.GetClient()}, fleet.SecretStore{Reader: mgr.GetAPIReader(), Namespace: o.Namespace})
	return mgr.Add(&reconcile.Clusters{Home: mgr, Fleet: f, Registry: kindRegistry(kinds.Builtin(), o.Controllers), Group: o.APIGroup,
		Options: opts, Log: log})
}

// runFleet is the one fleet of `operator run`: the clients of each registered cluster (one
// set, whichever loop reached it first), the manager's scheme, --fleet-allow-non-routable.
// The fleet's sweeps, its Kind controllers and the cluster plane each read the registrations
// and credentials through their own readers (fleet.Fleet.Reading). Nil when none of them runs.
func runFleet(mgr ctrl.Manager, o *runOptions) *fleet.Fleet {
	if !o.Fleet.On && !o.K8sPlane.Enabled() {
		return nil
	}
	return &fleet.Fleet{Scheme: mgr.GetScheme(), AllowNonRoutable: o.Fleet.AllowNonRoutable}
}
