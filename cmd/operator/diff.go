package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/dir"
)

// newDiffCommand returns `operator diff`, which compares some manifests, and what their
// custom resources build, with a live cluster by server-side dry-run.
func newDiffCommand() *cobra.Command {
	var group, kubeconfig, namespace string
	var takeover bool
	var build kinds.Context
	limits := source.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "diff <file|dir>  |  diff --takeover -n <ns>",
		Short: "Diff manifests and what they build against the live cluster",
		Long: "Server-side dry-run the objects `operator render` prints, and the custom resources\n" +
			"themselves, against the live cluster; print a unified diff per drifted object (Secret\n" +
			"values masked) and a summary line. The custom resources and plain objects are compared\n" +
			"under the field manager universe-operator-gitops, the children under universe-operator.\n\n" +
			"Exit status: 0 no drift, 1 drift, 2 an error (as flux diff).\n\n" +
			"With --takeover -n <ns>, take the CRs from the cluster instead: for every CR of the namespace,\n" +
			"print what this operator's first reconcile would do to its children (in sync, field ownership\n" +
			"only, create, configure, kept immutable, leftover, delete), by dry-run only. Exit status 0 when\n" +
			"the takeover changes nothing but field ownership, 1 when it changes more, 2 on an error.",
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kinds.ValidateGroup(group); err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			if err := validateBuild(build); err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			if takeover {
				return diffTakeover(cmd, build, group, kubeconfig, namespace, args)
			}
			if len(args) != 1 {
				return codedError{code: 2, msg: "diff: one file or directory (or --takeover -n <ns>)"}
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
			objs, fileErrs := source.ParseLimited(snap, limits)
			d := builtinDiffer(c, group, build)
			rs := d.Diff(cmd.Context(), objs)
			if err := render.WriteDiff(cmd.OutOrStdout(), rs); err != nil {
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
			s := render.CountDiffs(rs)
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
	cmd.Flags().BoolVar(&takeover, "takeover", false, "Report what taking over the namespace's CRs from another operator would change (dry-run only).")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "Namespace to take over, with --takeover.")
	bindBuildFlags(cmd.Flags(), &build)
	limits.BindFlags(cmd.Flags())
	return cmd
}

// diffTakeover runs `operator diff --takeover -n <ns>`.
func diffTakeover(cmd *cobra.Command, build kinds.Context, group, kubeconfig, namespace string, args []string) error {
	if len(args) != 0 || namespace == "" {
		return codedError{code: 2, msg: "diff --takeover: takes no file, and needs -n <namespace>"}
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return codedError{code: 2, msg: err.Error()}
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return codedError{code: 2, msg: fmt.Sprintf("create client: %v", err)}
	}
	d := builtinDiffer(c, group, build)
	rs, err := d.Takeover(cmd.Context(), namespace)
	if werr := render.WriteTakeover(cmd.OutOrStdout(), rs); werr != nil {
		return codedError{code: 2, msg: fmt.Sprintf("write: %v", werr)}
	}
	if err != nil {
		return codedError{code: 2, msg: "diff --takeover: " + err.Error()}
	}
	s := render.CountTakeover(rs)
	switch s.ExitCode() {
	case 0:
		return nil
	case 1:
		return codedError{code: 1, msg: "takeover changes more than field ownership"}
	default:
		return codedError{code: 2, msg: fmt.Sprintf("diff --takeover: %d children failed", s[render.ChangeFailed])}
	}
}

// builtinDiffer is the one Differ of the commands and the planes: the builtin Kinds'
// builders for group with build, dry-running through c.
func builtinDiffer(c client.Client, group string, build kinds.Context) *render.Differ {
	return &render.Differ{Client: c, Renderer: render.Renderer{Registry: kinds.Builtin(), APIGroup: group, Build: build}}
}
