// Command operator is the universe operator: it reads custom resources from the universe git
// repository, server-side applies them, turns each Kind into the workloads it stands for,
// and reports drift.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "operator",
		Short:         "GitOps operator for the universe repository",
		SilenceUsage:  true,
		SilenceErrors: false,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return envDefaults(cmd.Flags())
		},
	}
	root.AddCommand(newRunCommand(), newVersionCommand(), newCRDsCommand(), newRenderCommand(), newDiffCommand(), newInstallCommand())
	return root
}

// envDefaults lets every flag be set by an environment variable: --api-group by
// OPERATOR_API_GROUP, --leader-elect by OPERATOR_LEADER_ELECT, and so on. A flag given on
// the command line wins over the environment.
func envDefaults(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok && v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s: %w", envName(f.Name), serr)
			}
		}
	})
	return err
}

func envName(flag string) string {
	return "OPERATOR_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// exitCoder lets a command choose its exit status (diff: 1 means drift, 2 an error).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
