package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/dir"
)

// codedError is a command failure with its exit status (see exitCoder).
type codedError struct {
	code int
	msg  string
}

func (e codedError) Error() string { return e.msg }
func (e codedError) ExitCode() int { return e.code }

// newRenderCommand returns `operator render`, which prints the objects the controllers
// would apply for the manifests at a path, with no cluster.
func newRenderCommand() *cobra.Command {
	var group, namespace, kubeconfig string
	var fromCluster bool
	var build kinds.Context
	limits := source.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "render <file|dir|->  |  render --from-cluster <kind>/<name> -n <ns>  |  render --from-cluster <ns> <name>",
		Short: "Print the objects the controllers would apply for some manifests",
		Long: "Read YAML manifests (a file, a directory recursively, or - for stdin) and print, as one\n" +
			"YAML stream, what the operator would apply: each custom resource a Kind serves becomes the\n" +
			"objects its builder materializes, any other object is printed as it is; both normalized as\n" +
			"the apply path sees them. Secret values are masked. No cluster is needed.\n\n" +
			"Errors name the file and object; the other files are still rendered. Exit status 2 when\n" +
			"any object failed.\n\n" +
			"With --from-cluster, read one CR as it is in the cluster instead (read only) and print what\n" +
			"the controller builds for it, with its uid in the owner references: <kind>/<name> -n <ns>\n" +
			"(kind as kubectl takes it, e.g. hanzodns/dns or luxruntime.bootno.de/mainnet), or <ns> <name>\n" +
			"for a LuxRuntime, Network or LuxNetwork.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateBuild(build); err != nil {
				return codedError{code: 2, msg: err.Error()}
			}
			if fromCluster {
				return renderFromCluster(cmd, build, group, kubeconfig, namespace, args)
			}
			if len(args) != 1 {
				return codedError{code: 2, msg: "render: one file, directory or - (two arguments only with --from-cluster)"}
			}
			return renderFile(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), build, group, args[0], limits)
		},
	}
	cmd.Flags().StringVar(&group, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	cmd.Flags().BoolVar(&fromCluster, "from-cluster", false, "Read the CR from the cluster (<kind>/<name> -n <ns>, or <ns> <name> for a network).")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "Namespace of the CR, with --from-cluster <kind>/<name>.")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig, with --from-cluster; empty means $KUBECONFIG or in-cluster.")
	bindBuildFlags(cmd.Flags(), &build)
	limits.BindFlags(cmd.Flags())
	return cmd
}

// renderFromCluster reads one CR from the cluster and renders it through the same builder.
func renderFromCluster(cmd *cobra.Command, build kinds.Context, group, kubeconfig, namespace string, args []string) error {
	if err := kinds.ValidateGroup(group); err != nil {
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
	reg := kinds.Builtin()
	var cr *unstructured.Unstructured
	if len(args) == 2 {
		cr, err = render.FetchNetwork(cmd.Context(), c, reg, group, args[0], args[1])
	} else {
		mapper, merr := render.KindMapper(cfg)
		if merr != nil {
			return codedError{code: 2, msg: fmt.Sprintf("discovery: %v", merr)}
		}
		cr, err = render.FetchCR(cmd.Context(), c, mapper, reg, group, namespace, args[0])
	}
	if err != nil {
		return codedError{code: 2, msg: "render --from-cluster: " + err.Error()}
	}
	// with its inputs from the cluster (a LuxNetwork's LuxChains), as the controller builds it
	rd := render.Renderer{Registry: reg, APIGroup: group, Build: build}.RenderFromCluster(cmd.Context(), c, source.Object{Obj: cr, File: "cluster"})
	if err := render.WriteYAML(cmd.OutOrStdout(), []render.Rendered{rd}); err != nil {
		return codedError{code: 2, msg: fmt.Sprintf("write: %v", err)}
	}
	if rd.Err != nil {
		return codedError{code: 2, msg: rd.Err.Error()}
	}
	return nil
}

func renderFile(stdout, stderr io.Writer, stdin io.Reader, build kinds.Context, group, path string, limits source.Limits) error {
	if err := kinds.ValidateGroup(group); err != nil {
		return codedError{code: 2, msg: err.Error()}
	}
	snap, err := dir.Read(path, stdin)
	if err != nil {
		return codedError{code: 2, msg: err.Error()}
	}
	objs, fileErrs := source.ParseLimited(snap, limits)
	rs := render.Renderer{Registry: kinds.Builtin(), APIGroup: group, Build: build}.Render(objs)
	if err := render.WriteYAML(stdout, rs); err != nil {
		return codedError{code: 2, msg: fmt.Sprintf("write: %v", err)}
	}
	failed := len(fileErrs)
	for _, fe := range fileErrs {
		fmt.Fprintln(stderr, fe.Error())
	}
	for _, err := range render.Errors(rs) {
		failed++
		fmt.Fprintln(stderr, err.Error())
	}
	if failed > 0 {
		return codedError{code: 2, msg: fmt.Sprintf("render: %d of the inputs failed", failed)}
	}
	return nil
}
