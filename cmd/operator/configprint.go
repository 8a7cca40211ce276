package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newConfigCommand returns `operator config print`: the effective configuration of
// `operator run` with the same flags, environment and --config, each value with its origin.
func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show the configuration operator run would use"}
	o := &runOptions{}
	print := &cobra.Command{
		Use:   "print [operator run flags]",
		Short: "Print the effective configuration of operator run: every setting, its value and where it came from",
		Long: "Resolve the settings exactly as `operator run` does (flag > OPERATOR_* env > the Rust\n" +
			"operator's variables > --config file > legacy default > default) and print them as YAML\n" +
			"that --config accepts, each line commented with its origin. Credentials are masked:\n" +
			"tokens given as values (APPS_SERVICE_TOKEN …) print as ***. Then which loops would run,\n" +
			"and why, and the warnings run would log.",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationConfig: "run"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd.Flags(), o, os.Environ())
			if err != nil {
				return err
			}
			printConfig(cmd.OutOrStdout(), cmd.Flags(), o, l)
			return nil
		},
	}
	o.BindFlags(print.Flags())
	cmd.AddCommand(print)
	return cmd
}

func printConfig(w io.Writer, fs *pflag.FlagSet, o *runOptions, l *loaded) {
	fmt.Fprintln(w, "# operator run: effective configuration")
	fmt.Fprintln(w, "# precedence: flag > env (OPERATOR_*) > legacy env (Rust operator) > file (--config) > legacy default > default")
	if l.Legacy {
		fmt.Fprintf(w, "# legacy mode: on (%s set): every loop's master switch defaults off\n", strings.Join(l.Markers, ", "))
	} else {
		fmt.Fprintln(w, "# legacy mode: off (no Rust operator loop variable set)")
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		// no run flag holds a secret (tokens come from files, or the environment below)
		fmt.Fprintf(w, "%s: %s  # %s\n", f.Name, strconv.Quote(flagValue(f)), l.describe(f.Name))
	})
	fmt.Fprintln(w, "# credentials given as values, held in memory (never written):")
	for _, c := range []struct {
		name string
		t    *memoryToken
	}{{"drive token (--drive-token-file unset)", o.driveToken}, {"agent cloud token (--agent-cloud-token-file unset)", o.agentToken}} {
		if c.t != nil {
			fmt.Fprintf(w, "#   %s: *** (legacy env %s)\n", c.name, c.t.From)
		}
	}
	fmt.Fprintln(w, "# loops:")
	for _, d := range l.Loops {
		state := "off"
		if d.On {
			state = "on"
		}
		fmt.Fprintf(w, "#   %s: %s (%s)\n", d.Loop, state, d.Why)
	}
	for _, warn := range l.Warnings {
		fmt.Fprintf(w, "# WARNING %s\n", warn)
	}
}
