// Command operator is the universe operator: it reads custom resources from the universe git
// repository, server-side applies them, turns each Kind into the workloads it stands for,
// and reports drift.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
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
			if cmd.Annotations[annotationConfig] == "run" {
				return nil // operator run and config print resolve their flags with loadConfig
			}
			logger, err := newLogger("console", "info") // the CLI commands print lines for people
			if err != nil {
				return err
			}
			ctrl.SetLogger(logger)
			return envDefaults(cmd.Flags())
		},
	}
	root.AddCommand(newRunCommand(), newVersionCommand(), newCRDsCommand(), newRenderCommand(), newDiffCommand(), newInstallCommand(), newUpCommand(), newDeployPlaneCommand(), newConfigCommand(), newUninstallCommand(), newK8sCommand(),
		newOrphansCommand(), newSuspendCommand(false), newSuspendCommand(true), newPreviewCommand())
	return root
}

// annotationConfig marks the commands whose flags are the run configuration, resolved by
// loadConfig (flags, OPERATOR_*, the Rust operator's variables, --config).
const annotationConfig = "openuniverse.dev/config"

// envDefaults lets every flag of the other commands (install, up, render …) be set by
// OPERATOR_<FLAG>: --api-group by OPERATOR_API_GROUP, and so on. A flag given on the
// command line wins over the environment.
func envDefaults(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := envFlag(f.Name)
		if v, ok := os.LookupEnv(name); ok && v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s: %w", name, serr)
			}
		}
	})
	return err
}

// exitCoder lets a command choose its exit status (diff: 1 means drift, 2 an error).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
