package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/openuniverse/operator/drive/plane"
	"github.com/openuniverse/operator/reconcile/install"
)

// installPlaneFlags install the deploy plane as its own Deployment and Service.
type installPlaneFlags struct {
	separate     bool
	replicas     int32
	clientSecret install.SecretKey
}

// planePassThrough are the plane's flags (`operator deploy-plane`) install takes as they are
// and passes to the plane's Deployment when set. The listen address is install's; the
// client secret file comes from a Secret (--deploy-plane-oidc-client-secret-secret).
var planePassThrough = []string{
	"deploy-plane-oidc-issuer", "deploy-plane-oidc-audience", "deploy-plane-org-claim", "deploy-plane-admin-claim",
	"deploy-plane-admin-values", "deploy-plane-org-label", "deploy-plane-public-url", "deploy-plane-oidc-client-id",
	"deploy-plane-oidc-scopes", "deploy-plane-keepalive",
}

// bind registers the flags on install's fs. A plane flag install already has (another
// pass-through) is shared, not registered twice.
func (p *installPlaneFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&p.separate, "deploy-plane-separate", false, "Also install the /v1/deploy plane as its own Deployment and Service ("+install.PlaneName+
		", `operator deploy-plane` on port 80 of the Service) with the --deploy-plane-* flags given here and the git source's write path, so its rollback of a CR from git commits; needs --deploy-plane-oidc-issuer.")
	fs.Int32Var(&p.replicas, "deploy-plane-replicas", 1, "Replicas of the separate deploy plane; each serves (no lease).")
	fs.StringVar(&p.clientSecret.Name, "deploy-plane-oidc-client-secret-secret", "", "Secret holding the dashboard sign-in's OAuth client secret (passed as --deploy-plane-oidc-client-secret-file).")
	fs.StringVar(&p.clientSecret.Key, "deploy-plane-oidc-client-secret-key", "client-secret", "Key of the client secret in --deploy-plane-oidc-client-secret-secret.")
	pf := pflag.NewFlagSet("deploy-plane", pflag.ContinueOnError)
	(&plane.Options{}).BindFlags(pf, "")
	for _, name := range planePassThrough {
		if fs.Lookup(name) == nil {
			fs.AddFlag(pf.Lookup(name))
		}
	}
}

// complete fills o.Plane from the flags, or refuses what the plane could not run with.
func (p *installPlaneFlags) complete(fs *pflag.FlagSet, o *install.InstallOptions) error {
	o.Plane = nil
	if !p.separate {
		for _, name := range []string{"deploy-plane-replicas", "deploy-plane-oidc-client-secret-secret"} {
			if fs.Lookup(name).Changed {
				return fmt.Errorf("--%s configures the separate deploy plane: add --deploy-plane-separate", name)
			}
		}
		return nil
	}
	if p.replicas < 1 {
		return fmt.Errorf("--deploy-plane-replicas %d: want at least 1", p.replicas)
	}
	if flagValue(fs.Lookup("deploy-plane-oidc-issuer")) == "" {
		return errors.New("--deploy-plane-separate needs --deploy-plane-oidc-issuer: the plane never runs open")
	}
	po := &install.PlaneOptions{Replicas: p.replicas, ClientSecret: p.clientSecret}
	if po.ClientSecret.Name == "" {
		po.ClientSecret = install.SecretKey{}
	}
	for _, name := range planePassThrough {
		if fl := fs.Lookup(name); fl.Changed {
			po.Args = append(po.Args, "--"+name+"="+flagValue(fl))
		}
	}
	o.Plane = po
	return nil
}
