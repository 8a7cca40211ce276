package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/openuniverse/operator/kinds"
)

// newCRDsCommand returns `operator crds`, which prints the CRD bundle of a universe: the
// universe and kms families rewritten to --api-group, the chain family at bootno.de.
func newCRDsCommand() *cobra.Command {
	var group, out string
	var luxNetworkKinds bool
	cmd := &cobra.Command{
		Use:   "crds",
		Short: "Print the CustomResourceDefinitions for an API group",
		Long: "Print the CustomResourceDefinitions of every Kind for the universe API group: the universe\n" +
			"family at <group>, KMSSecret at kms.<group> and the chain family at bootno.de. With --out,\n" +
			"write them to <dir>/<group>.yaml instead. --lux-network-kinds appends the luxfi operator's CRDs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bundle, err := kinds.Bundle(group)
			if err != nil {
				return err
			}
			if luxNetworkKinds {
				lux, err := kinds.LuxNetworkBundle()
				if err != nil {
					return err
				}
				bundle = append(bundle, lux...)
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(bundle)
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil { //nolint:gosec // G301: CRD manifests to commit and share, not secrets
				return fmt.Errorf("create %s: %w", out, err)
			}
			path := filepath.Join(out, group+".yaml")
			if err := os.WriteFile(path, bundle, 0o644); err != nil { //nolint:gosec // G306: CRD manifests to commit and share, not secrets
				return fmt.Errorf("write %s: %w", path, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&group, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	cmd.Flags().StringVar(&out, "out", "", "Directory to write <api-group>.yaml to; stdout when empty.")
	cmd.Flags().BoolVar(&luxNetworkKinds, "lux-network-kinds", false,
		"Also print the luxfi operator's lux.network/v1alpha1 CRDs (LuxNetwork, LuxChain, LuxIndexer, LuxExplorer,\n"+
			"LuxGateway, LuxMPC) and secrets.lux.network/v1alpha1 KMSSecret, unchanged, so its CRs are served and stored as written.")
	return cmd
}
