package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/reconcile/install"
)

// installPlaneFlags install the deploy plane as its own Deployment and Service.
type installPlaneFlags struct {
	separate bool
	replicas int32
}

// planeFlags are the names of the plane's own flags (those of `operator deploy-plane` that
// plane.Options binds) install passes to the plane's Deployment when set: all of them but the
// listen address, which is install's, and the client secret file, mounted from
// --deploy-plane-oidc-client-secret. Install already has every one of them (run binds the same
// plane.Options), so a new plane flag reaches the separate plane with no list to keep.
func planeFlags() []string {
	pf := pflag.NewFlagSet("deploy-plane", pflag.ContinueOnError)
	(&deploy.Options{}).BindFlags(pf, "")
	var names []string
	pf.VisitAll(func(fl *pflag.Flag) {
		if fl.Name != "deploy-plane-bind-address" && fl.Name != "deploy-plane-oidc-client-secret-file" {
			names = append(names, fl.Name)
		}
	})
	return names
}

// bind registers the flags on install's fs.
func (p *installPlaneFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&p.separate, "deploy-plane-separate", false, "Also install the /v1/deploy plane as its own Deployment and Service ("+install.PlaneName+
		", `operator deploy-plane` on port 80 of the Service) with the --deploy-plane-* flags given here and the git source's write path, so its rollback of a CR from git commits; needs --deploy-plane-oidc-issuer. The main Deployment then runs no plane.")
	fs.Int32Var(&p.replicas, "deploy-plane-replicas", 1, "Replicas of the separate deploy plane; each serves (no lease).")
}

// complete fills o.Plane from the flags, or refuses what the plane could not run with.
func (p *installPlaneFlags) complete(fs *pflag.FlagSet, o *install.InstallOptions) error {
	o.Plane = nil
	if !p.separate {
		if fs.Lookup("deploy-plane-replicas").Changed {
			return errors.New("--deploy-plane-replicas configures the separate deploy plane: add --deploy-plane-separate")
		}
		return nil
	}
	switch {
	case p.replicas < 1:
		return fmt.Errorf("--deploy-plane-replicas %d: want at least 1", p.replicas)
	case flagValue(fs.Lookup("deploy-plane-oidc-issuer")) == "":
		return errors.New("--deploy-plane-separate needs --deploy-plane-oidc-issuer: the plane never runs open")
	case fs.Lookup("deploy-plane-bind-address").Changed:
		return errors.New("--deploy-plane-separate and --deploy-plane-bind-address: the plane runs in its own Deployment or in the operator's, not both")
	}
	po := &install.PlaneOptions{Replicas: p.replicas, ClientSecret: o.PlaneClientSecret}
	for _, name := range planeFlags() {
		if fl := fs.Lookup(name); fl.Changed {
			po.Args = append(po.Args, "--"+name+"="+flagValue(fl))
		}
	}
	o.Plane = po
	return nil
}
