package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/preview"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
)

// resolvePreview checks --preview at start, before any cluster is reached: the preview
// previews the swept repository's pull requests and posts its check through the commit
// status provider.
func resolvePreview(o *runOptions) error {
	switch {
	case !o.Preview:
		return nil
	case !slices.Contains(o.Controllers, loopGitOps) || (o.Git.URL == "" && o.GitHub.Repository == ""):
		return errors.New("--preview previews the pull requests of the swept repository: it needs the gitops loop (--controllers) and --git-url or --github-repository")
	case !o.CommitStatus.Enabled():
		return errors.New("--preview posts its check through the commit status API: it needs --commit-status (github, gitea or gitlab)")
	}
	return nil
}

// previewRevisions is the git source as the preview reads it: it must resolve a pull
// request's refs (source.RefResolver).
func previewRevisions(src source.Source) (preview.Revisions, error) {
	revs, ok := src.(preview.Revisions)
	if !ok {
		return nil, fmt.Errorf("--preview: the git source (%T) cannot read a pull request's revisions", src)
	}
	return revs, nil
}

// newPreviewer is the preview of operator run --preview and operator preview: the builtin
// builders dry-running through c, the sweep's scope and parse limits.
func newPreviewer(c client.Client, o *runOptions, scope gitops.Scope) *preview.Previewer {
	return &preview.Previewer{Differ: builtinDiffer(c, o.APIGroup, o.Build), Scope: scope, Mapper: c.RESTMapper(), Limits: o.GitOps.Limits}
}

// setupPreview gives the webhook the preview's queue (wh.PullRequests) and adds its worker,
// on every replica: a replica previews the pull request events it receives, writing
// nothing to the cluster (server-side dry-runs only). Nothing without --preview.
func setupPreview(mgr ctrl.Manager, cfg *rest.Config, o *runOptions, src source.Source, checks commitstatus.Provider, scope gitops.Scope,
	wh *gitops.Webhook, log logr.Logger) error {
	if !o.Preview {
		return nil
	}
	revs, err := previewRevisions(src)
	if err != nil {
		return err
	}
	checker, ok := checks.(commitstatus.Checker)
	if !ok {
		return fmt.Errorf("--preview: the --commit-status provider %s posts no checks", o.CommitStatus.Provider)
	}
	// uncached (a dry-run reads what the caches do not hold), on the manager's RESTMapper:
	// no second discovery
	c, err := client.New(cfg, client.Options{Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("--preview: create client: %w", err)
	}
	p := newPreviewer(c, o, scope)
	branch := o.Git.Branch
	if o.GitHub.Repository != "" {
		branch = o.GitHub.Branch
	}
	w := preview.NewWorker(p, revs, checker, o.CommitStatus.Context, branch, preview.DefaultQueue, log)
	wh.PullRequests = w
	log.Info("Previewing pull requests", "check", commitstatus.PreviewContext(o.CommitStatus.Context), "branch", branch,
		"queue", preview.DefaultQueue, "provider", o.CommitStatus.Provider)
	return mgr.Add(w)
}
