package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/dir"
)

// newDiffCommand returns `operator diff`, which compares some manifests, and what their
// custom resources build, with a live cluster by server-side dry-run.
func newDiffCommand() *cobra.Command {
	var group, kubeconfig string
	cmd := &cobra.Command{
		Use:   "diff <file|dir>",
		Short: "Diff manifests and what they build against the live cluster",
		Long: "Server-side dry-run the objects `operator render` prints, and the custom resources\n" +
			"themselves, against the live cluster; print a unified diff per drifted object (Secret\n" +
			"values masked) and a summary line. The custom resources and plain objects are compared\n" +
			"under the field manager universe-operator-gitops, the children under universe-operator.\n\n" +
			"Exit status: 0 no drift, 1 drift, 2 an error (as flux diff).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kinds.ValidateGroup(group); err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			snap, err := dir.Read(args[0], cmd.InOrStdin())
			if err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			c, err := client.New(cfg, client.Options{})
			if err != nil {
				return codedError{code: 2, msg: fmt.Sprintf("create client: %v", err)}
			}
			objs, fileErrs := source.Parse(snap)
			d := &reconcile.Differ{Client: c, Renderer: reconcile.Renderer{Registry: kinds.Builtin(), APIGroup: group}}
			rs := d.Diff(cmd.Context(), objs)
			if err := reconcile.WriteDiff(cmd.OutOrStdout(), rs); err != nil {
				return codedError{code: 2, msg: fmt.Sprintf("write: %v", err)}
			}
			for _, fe := range fileErrs {
				fmt.Fprintln(cmd.ErrOrStderr(), fe.Error())
			}
			for _, r := range rs {
				if r.Err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), r.Err.Error())
				}
			}
			s := reconcile.Summarize(rs)
			code := s.ExitCode()
			if len(fileErrs) > 0 {
				code = 2
			}
			switch code {
			case 0:
				return nil
			case 1:
				return codedError{code: 1, msg: fmt.Sprintf("drift: %d objects would change", s.Drifted())}
			default:
				return codedError{code: 2, msg: fmt.Sprintf("diff: %d objects failed, %d files unreadable", s.Failed, len(fileErrs))}
			}
		},
	}
	cmd.Flags().StringVar(&group, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	return cmd
}
