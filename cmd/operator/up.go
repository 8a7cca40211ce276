package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
	"github.com/openuniverse/operator/source/dir"
)

// newUpCommand returns `operator up`: install, then apply a directory of manifests through
// the git sweep's apply path, as if it were the universe repository.
func newUpCommand() *cobra.Command {
	f := &installFlags{}
	var manifests string
	cmd := &cobra.Command{
		Use:   "up --manifests DIR",
		Short: "Install the operator, then apply a directory of manifests as the git sweep would",
		Long: "Run `operator install` (with its flags: every installable flag of `operator run`, e.g.\n" +
			"--upgrade-fsm), then apply the manifests under DIR through the git sweep's own path: the\n" +
			"same scope (--gitops-namespaces, --gitops-apply-scope, --gitops-allow-crds), the same plan\n" +
			"(CRDs, then Namespaces, then the rest; malformed files and objects out of scope skipped by\n" +
			"name), the same server-side apply under the field manager " + kinds.ManagerGitOps + ".\n" +
			"Nothing is ever deleted. Prints one line per object (CREATE, UPDATE or in-sync), one per\n" +
			"skip, and a summary. Exit status 1 when anything failed or was skipped.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if manifests == "" {
				return fmt.Errorf("--manifests is required")
			}
			if err := f.complete(); err != nil {
				return err
			}
			return up(cmd.Context(), cmd.OutOrStdout(), f.kubeconfig, manifests, f.o, f.run.GitOps)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&manifests, "manifests", "", "Directory of manifests to apply (walked recursively for .yaml and .yml files).")
	f.bind(fs)
	return cmd
}

func up(ctx context.Context, out io.Writer, kubeconfig, manifests string, o install.InstallOptions, g gitops.Options) error {
	src, err := dir.New(manifests)
	if err != nil {
		return fmt.Errorf("--manifests: %w", err)
	}
	scope, err := g.Scope(self(o.Namespace, o.APIGroup, defaultProtectedSecrets))
	if err != nil {
		return fmt.Errorf("gitops scope: %w", err)
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	// One discovery for install and the sweep: install's client maps the CRD list and tells
	// an unchanged CRD is served from it, and the sweep resolves its kinds from the same.
	mapper, err := gitops.NewMapper(cfg)
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Mapper: mapper})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	rs, err := install.Installer{Client: c, Registry: kinds.Builtin()}.Install(ctx, o)
	changed := false
	for _, r := range rs {
		fmt.Fprintf(out, "install %s %s%s\n", r.Object, r.Action, failureMessage(r))
		if r.Action == apply.Failed || r.Action == apply.Denied {
			err = fmt.Errorf("install: %s %s", r.Object, r.Action)
		}
		changed = changed || r.Action == apply.Created || r.Action == apply.Updated
	}
	if err != nil {
		return err
	}
	if changed {
		mapper.Reset() // install created or changed kinds: read discovery again
	}
	// The bundle install parsed and converted is garbage now: collect it, so the sweep's heap
	// goal starts from what the sweep keeps rather than from install's peak (the sweep of
	// 1 000 objects would otherwise grow into it before the next cycle).
	runtime.GC()
	g.State = gitState(o.Namespace) // the inventory: a second up of the same manifests applies nothing
	g.MetadataOnly = true           // one sweep: no status watches, health from the applies' responses
	g.Mapper = mapper
	sweeper, err := gitops.NewSweeper(cfg, src, scope, g)
	if err != nil {
		return err
	}
	defer sweeper.Close()
	rep := sweeper.Sweep(ctx)
	if rep.Error != "" {
		return fmt.Errorf("apply %s: %s", manifests, rep.Error)
	}
	return printUp(out, manifests, &rep)
}

// printUp prints one line per object and per skip, then the summary, and returns an error
// when any object failed or was skipped.
func printUp(out io.Writer, dir string, rep *gitops.Report) error {
	for _, r := range rep.Results {
		msg := failureMessage(r)
		if f := rep.Files[r.Object]; f != "" && msg != "" {
			msg = " (" + f + ")" + msg // the file to fix
		}
		fmt.Fprintf(out, "%s %s%s\n", r.Object, r.Action, msg)
	}
	for _, s := range rep.Skips {
		fmt.Fprintf(out, "SKIPPED %s (%s)\n", s, s.Reason)
	}
	s := rep.Summary
	fmt.Fprintf(out, "up %s: %d files, %d objects: %d created, %d updated, %d in-sync, %d failed, %d denied, %d skipped, %d out of scope (never prunes)\n",
		dir, s.Files, len(rep.Results), s.Created, s.Updated, s.InSync, s.Errors, s.Denied, s.Skipped, s.OutOfScope)
	if bad := s.Errors + s.Denied + s.Skipped + s.OutOfScope; bad > 0 {
		return fmt.Errorf("up: %d of the manifests under %s were not applied", bad, dir)
	}
	return nil
}

func failureMessage(r apply.Result) string {
	if r.Action == apply.Failed || r.Action == apply.Denied {
		return ": " + r.Message
	}
	return ""
}
