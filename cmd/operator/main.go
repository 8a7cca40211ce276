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
	root.AddCommand(newRunCommand(), newVersionCommand(), newCRDsCommand(), newRenderCommand(), newDiffCommand(), newInstallCommand(), newUpCommand(), newDeployPlaneCommand(), newUninstallCommand())
	return root
}

// envDefaults lets every flag be set by an environment variable: --api-group by
// OPERATOR_API_GROUP, --leader-elect by OPERATOR_LEADER_ELECT, and so on. The existing
// operator's variables (GITOPS_TOKEN_FILE, GITOPS_REPO, …) are read too, so a Deployment
// written for it keeps working. A flag given on the command line wins over the environment.
func envDefaults(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, name := range envNames(f.Name) {
			if v, ok := os.LookupEnv(name); ok && v != "" {
				if serr := fs.Set(f.Name, v); serr != nil {
					err = fmt.Errorf("environment %s: %w", name, serr)
				}
				return
			}
		}
	})
	return err
}

// legacyEnv maps the existing operator's git-loop variables to our flags.
var legacyEnv = map[string]string{
	"github-repository":  "GITOPS_REPO",
	"github-branch":      "GITOPS_BRANCH",
	"github-path":        "GITOPS_CRS_PATH",
	"github-api-url":     "GITOPS_GITHUB_API",
	"gitops-token-file":  "GITOPS_TOKEN_FILE",
	"gitops-namespaces":  "GITOPS_NAMESPACES",
	"gitops-apply-scope": "GITOPS_APPLY_SCOPE",
	"drive-platform-url": "APPS_PLATFORM_URL",
	"drive-org-id":       "APPS_ORG_ID",
	"drive-cluster":      "APPS_CLUSTER",
	"drive-mode":         "APPS_DRIVE_MODE",
	"drive-allow":        "APPS_DRIVE_ALLOW",
	"agent-deploy-mode":  "AGENT_DEPLOY_MODE",
	"upgrade-fsm":        "UPGRADE_FSM_ENABLED",
}

// envNames lists the variables that may set flag, most specific first.
func envNames(flag string) []string {
	names := []string{"OPERATOR_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
	if legacy, ok := legacyEnv[flag]; ok {
		names = append(names, legacy)
	}
	return names
}

// exitCoder lets a command choose its exit status (diff: 1 means drift, 2 an error).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
