package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/preview"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
)

// previewOptions are `operator preview`'s flags: the two refs, and the subset of run's
// settings the sweep reads them and judges them with (its git source, scope, limits, build
// settings and commit status host), bound under run's names.
type previewOptions struct {
	run        runOptions
	base, head string
	post       bool
}

func (o *previewOptions) bindFlags(fs *pflag.FlagSet) {
	r := &o.run
	fs.StringVar(&o.base, "base", "", "Revision the pull request merges into: a branch name, a full ref or a commit SHA (e.g. main).")
	fs.StringVar(&o.head, "head", "", "Revision previewed: a branch name, a full ref (refs/pull/7/head, refs/merge-requests/7/head) or a commit SHA.")
	fs.BoolVar(&o.post, "post", false, "Post the preview as one finished check on the head commit through --commit-status (a GitHub check run; a commit status on Gitea and GitLab).")
	fs.StringVar(&r.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	fs.StringVar(&r.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	fs.StringVar(&r.Namespace, "namespace", "universe-system", "Namespace the operator runs in: the sweep never writes its own objects there.")
	fs.StringSliceVar(&r.ProtectedSecrets, "gitops-protected-secrets", defaultProtectedSecrets,
		"Secrets of the operator's namespace git may never write (as operator run).")
	bindBuildFlags(fs, &r.Build)
	r.GitHub, r.Git, r.GitOps = github.DefaultOptions(), gitclone.DefaultOptions(), gitops.DefaultOptions()
	r.Source.BindFlags(fs)
	r.GitHub.BindFlags(fs)
	r.Git.BindFlags(fs)
	r.GitOps.BindScopeFlags(fs)
	r.GitOps.Limits.BindFlags(fs)
	r.CommitStatus = commitstatus.DefaultOptions()
	r.CommitStatus.BindFlags(fs)
	r.Controllers = []string{"gitops"} // the commit status checks of run, which posts for the sweep
}

// newPreviewCommand returns `operator preview`, which answers a pull request with what
// merging it would do to the live cluster.
func newPreviewCommand() *cobra.Command {
	o := &previewOptions{}
	cmd := &cobra.Command{
		Use:   "preview --base REF --head REF [--post]",
		Short: "Preview what merging a pull request would do to the live cluster",
		Long: "Read the two revisions from the git source operator run follows (--git-url or\n" +
			"--github-repository), parse and build the files that differ, plan them with the sweep's\n" +
			"scope (--gitops-namespaces …) and server-side dry-run what it admits against the live\n" +
			"cluster; print the Markdown report (created, changed, refused, orphaned, the pods that\n" +
			"roll) and then every object's unified diff (Secret values masked). With --post, post it\n" +
			"as one finished check named <--commit-status-context>/preview on the head commit.\n\n" +
			"A CI job runs, e.g. in a GitHub Actions pull_request workflow:\n" +
			"  operator preview --github-repository o/universe --gitops-token-file $TOKEN_FILE \\\n" +
			"    --gitops-namespaces apps --base ${{ github.base_ref }} \\\n" +
			"    --head ${{ github.event.pull_request.head.sha }}\n\n" +
			"Exit status: 0 nothing refused, 1 something refused (the check fails: a scope rule, an\n" +
			"immutable field, an apiserver refusal, an unusable file), 2 no preview (bad flags, an\n" +
			"unreadable ref, the apiserver unreachable, the check not posted).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The clone follows one branch: by default the base, when it names one.
			if b := o.base; b != "" && !strings.HasPrefix(b, "refs/") && !shaPattern.MatchString(b) {
				if !cmd.Flags().Changed("git-branch") {
					o.run.Git.Branch = b
				}
				if !cmd.Flags().Changed("github-branch") {
					o.run.GitHub.Branch = b
				}
			}
			return runPreview(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return codedError{code: 2, msg: err.Error()} })
	o.bindFlags(cmd.Flags())
	return cmd
}

var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

func runPreview(ctx context.Context, o *previewOptions, out io.Writer) error {
	r := &o.run
	fail := func(format string, args ...any) error { return codedError{code: 2, msg: fmt.Sprintf(format, args...)} }
	if err := kinds.ValidateGroup(r.APIGroup); err != nil {
		return fail("%v", err)
	}
	if err := validateBuild(r.Build); err != nil {
		return fail("%v", err)
	}
	switch {
	case o.base == "":
		return fail("preview: --base is required (the branch the pull request merges into, e.g. main)")
	case o.head == "":
		return fail("preview: --head is required (the pull request's head: a branch, a ref or a commit SHA)")
	}
	cs, err := previewCommitStatus(o)
	if err != nil {
		return fail("preview: %v", err)
	}
	scope, err := r.GitOps.Scope(self(r.Namespace, r.APIGroup, r.ProtectedSecrets))
	if err != nil {
		return fail("preview: gitops scope: %v", err)
	}
	creds, err := r.Source.Credentials()
	if err != nil {
		return fail("preview: --gitops-token-file: %v", err)
	}
	src, err := gitSource(r, creds)
	switch {
	case err != nil:
		return fail("preview: %v", err)
	case src == nil:
		return fail("preview: no git source: set --git-url or --github-repository")
	}
	rr, ok := src.(source.RefResolver)
	if !ok {
		return fail("preview: this git source cannot read other revisions")
	}
	c, err := previewClient(r.Kubeconfig)
	if err != nil {
		return fail("preview: %v", err)
	}
	base, err := readRevision(ctx, src, rr, "--base", o.base)
	if err != nil {
		return err
	}
	head, err := readRevision(ctx, src, rr, "--head", o.head)
	if err != nil {
		return err
	}

	pv := newPreviewer(c, r, scope).Preview(ctx, base, head)
	if err := writePreview(out, pv); err != nil {
		return fail("preview: write: %v", err)
	}
	if o.post {
		if err := postPreview(ctx, cs, pv); err != nil {
			return fail("preview: %v", err)
		}
	}
	if pv.Refused() {
		return codedError{code: 1, msg: fmt.Sprintf("preview: %d objects refused: %s", pv.Count(preview.Refused), pv.Summary())}
	}
	return nil
}

// previewClient is the client of the dry-runs, once the apiserver answers: the dry-runs'
// errors would otherwise read as the apiserver's refusals.
func previewClient(kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver client: %w", err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("apiserver %s unreachable: %w", cfg.Host, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return c, nil
}

// previewCommitStatus checks --post against --commit-status as operator run checks it
// (resolveCommitStatus: the repository defaults to the git source's).
func previewCommitStatus(o *previewOptions) (commitstatus.Options, error) {
	r := &o.run
	if !o.post {
		return r.CommitStatus, nil
	}
	if !r.CommitStatus.Enabled() {
		return r.CommitStatus, errors.New("--post needs --commit-status (github, gitea or gitlab) and --commit-status-token-file")
	}
	return resolveCommitStatus(r)
}

// readRevision resolves ref and reads its snapshot; an error names the flag and the ref.
func readRevision(ctx context.Context, src source.Source, rr source.RefResolver, flag, ref string) (*source.Snapshot, error) {
	sha, err := rr.Resolve(ctx, ref)
	if err != nil {
		msg := fmt.Sprintf("preview: %s %s: %v", flag, ref, err)
		if b, ok := strings.CutPrefix(ref, "origin/"); ok {
			msg += fmt.Sprintf(" (the git source reads the server's refs: name the branch, %s)", b)
		}
		return nil, codedError{code: 2, msg: msg}
	}
	snap, err := src.Snapshot(ctx, sha)
	if err != nil {
		return nil, codedError{code: 2, msg: fmt.Sprintf("preview: %s %s: %v", flag, ref, err)}
	}
	return snap, nil
}

// writePreview prints the report, then every object's diff: unbounded, unlike the check's.
func writePreview(w io.Writer, pv preview.Preview) error {
	var b strings.Builder
	b.WriteString(pv.Report())
	var diff strings.Builder
	for _, e := range pv.Entries {
		diff.WriteString(e.Diff)
	}
	if diff.Len() > 0 {
		b.WriteString("\n" + diff.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// postPreview posts pv's check on its head commit through the --commit-status provider.
func postPreview(ctx context.Context, cs commitstatus.Options, pv preview.Preview) error {
	tf, err := source.OpenTokenFile(cs.TokenFile)
	if err != nil {
		return fmt.Errorf("--commit-status-token-file: %w", err)
	}
	prov, err := commitstatus.NewProvider(cs, tf)
	if err != nil {
		return err
	}
	checker, ok := prov.(commitstatus.Checker)
	if !ok {
		return fmt.Errorf("--commit-status=%s cannot post a check", cs.Provider)
	}
	if err := checker.PostCheck(ctx, pv.Check(cs.Context)); err != nil {
		return fmt.Errorf("post the check: %w", err)
	}
	return nil
}
