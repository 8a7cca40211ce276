package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
)

// newUninstallCommand returns `operator uninstall`, which deletes what `operator install`
// applied, and with --crds the CRDs.
func newUninstallCommand() *cobra.Command {
	var o install.UninstallOptions
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete the operator's own objects (what install applied); with --crds the CRDs too, once no CR is left",
		Long: "Delete the Deployments, Services, PodDisruptionBudget, RBAC and ServiceAccount `operator install`\n" +
			"applied for --api-group in --namespace: only objects that carry install's labels and were applied by\n" +
			"its field manager " + kinds.ManagerInstall + ". Anything else is left and listed: the Namespace\n" +
			"(it holds your Secrets and the Lease), an object with the labels that install did not apply.\n\n" +
			"With --crds, also delete the CRDs install applied, after refusing, and deleting nothing, while any CR\n" +
			"of them exists (they are named: deleting a CRD deletes its CRs). The CRDs every universe shares\n" +
			"(the chain family, lux.network) are kept while another universe's install is on the cluster.\n" +
			"Prints one line per object.",
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
			rep, err := install.Installer{Client: c}.Uninstall(cmd.Context(), o)
			w := cmd.OutOrStdout()
			failed := 0
			for _, r := range rep.Deleted {
				line := fmt.Sprintf("%s %s", r.Object, r.Action)
				if r.Action != apply.Deleted {
					line += ": " + r.Message
					failed++
				}
				fmt.Fprintln(w, line)
			}
			for _, k := range rep.Kept {
				fmt.Fprintf(w, "%s KEPT: %s\n", k.Object, k.Reason)
			}
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("uninstall: %d objects not deleted", failed)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe install was given.")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace install was given.")
	fs.BoolVar(&o.CRDs, "crds", false, "Also delete the CRDs install applied; refused while any of their CRs exists.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	return cmd
}
