package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
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
	var group string
	cmd := &cobra.Command{
		Use:   "render <file|dir|->",
		Short: "Print the objects the controllers would apply for some manifests",
		Long: "Read YAML manifests (a file, a directory recursively, or - for stdin) and print, as one\n" +
			"YAML stream, what the operator would apply: each custom resource a Kind serves becomes the\n" +
			"objects its builder materializes, any other object is printed as it is; both normalized as\n" +
			"the apply path sees them. Secret values are masked. No cluster is needed.\n\n" +
			"Errors name the file and object; the other files are still rendered. Exit status 2 when\n" +
			"any object failed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return render(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), group, args[0])
		},
	}
	cmd.Flags().StringVar(&group, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	return cmd
}

func render(stdout, stderr io.Writer, stdin io.Reader, group, path string) error {
	if err := kinds.ValidateGroup(group); err != nil {
		return codedError{code: 2, msg: err.Error()}
	}
	snap, err := dir.Read(path, stdin)
	if err != nil {
		return codedError{code: 2, msg: err.Error()}
	}
	objs, fileErrs := source.Parse(snap)
	rs := reconcile.Renderer{Registry: kinds.Builtin(), APIGroup: group}.Render(objs)
	if err := reconcile.WriteYAML(stdout, rs); err != nil {
		return codedError{code: 2, msg: fmt.Sprintf("write: %v", err)}
	}
	failed := len(fileErrs)
	for _, fe := range fileErrs {
		fmt.Fprintln(stderr, fe.Error())
	}
	for _, err := range reconcile.Errors(rs) {
		failed++
		fmt.Fprintln(stderr, err.Error())
	}
	if failed > 0 {
		return codedError{code: 2, msg: fmt.Sprintf("render: %d of the inputs failed", failed)}
	}
	return nil
}
