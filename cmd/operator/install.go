package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/install"
)

// defaultImage is the operator image of this build.
func defaultImage() string { return "ghcr.io/openuniverse/operator:" + version }

// newInstallCommand returns `operator install`, which server-side applies the CRD bundle
// and the operator's Deployment with its RBAC.
func newInstallCommand() *cobra.Command {
	o := install.InstallOptions{}
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the CRDs and the operator (Namespace, RBAC, Deployment) into the cluster",
		Long: "Server-side apply the CRD bundle of --api-group, then, unless --crds-only, the operator's\n" +
			"Namespace, ServiceAccount, least-privilege ClusterRole and binding, leader-election Role\n" +
			"and binding, and Deployment, under the field manager " + reconcile.ManagerInstall + ".\n" +
			"Idempotent: a second run reports every object in-sync. Prints one line per object.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.NewWithWatch(cfg, client.Options{})
			if err != nil {
				return fmt.Errorf("create client: %w", err)
			}
			rs, err := install.Installer{Client: c, Registry: kinds.Builtin()}.Install(cmd.Context(), o)
			failed := 0
			for _, r := range rs {
				line := fmt.Sprintf("%s %s", r.Object, r.Action)
				if r.Action == reconcile.Failed || r.Action == reconcile.Denied {
					line += ": " + r.Message
					failed++
				}
				fmt.Fprintln(cmd.OutOrStdout(), line)
			}
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("install: %d objects failed", failed)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace the operator runs in.")
	fs.StringVar(&o.Image, "image", defaultImage(), "Operator container image.")
	fs.BoolVar(&o.CRDsOnly, "crds-only", false, "Install the CRDs only.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	return cmd
}
