package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/github"
)

// resolveCommitStatus checks --commit-status* at start against the git sweep's flags: set,
// it needs the gitops loop and a repository; the repository defaults to --github-repository,
// else the path of --git-url, and GitHub's API root to --github-api-url.
func resolveCommitStatus(o *runOptions) (commitstatus.Options, error) {
	cs := o.CommitStatus
	if !cs.Enabled() {
		return cs, cs.Validate()
	}
	if !slices.Contains(o.Controllers, "gitops") || (o.Git.URL == "" && o.GitHub.Repository == "") {
		return cs, errors.New("--commit-status posts the git sweep's outcome: it needs the gitops loop (--controllers) and --git-url or --github-repository")
	}
	if cs.Repository == "" {
		cs.Repository = o.GitHub.Repository
		if cs.Repository == "" {
			cs.Repository = commitstatus.RepositoryOf(o.Git.URL)
		}
	}
	if cs.Provider == commitstatus.GitHub && cs.URL == "" && o.GitHub.Repository != "" && o.GitHub.BaseURL != github.DefaultBaseURL {
		cs.URL = o.GitHub.BaseURL
	}
	return cs, cs.Validate()
}

// setupCommitStatus gives the sweep a poster of its commits' statuses (leader only, as the
// sweep), its token file watched, and the fleet's sweeps the same poster, each cluster
// under its own context (commitstatus.ClusterContext); nothing without --commit-status. It
// returns the provider (the preview posts its checks through it), nil without one.
func setupCommitStatus(mgr ctrl.Manager, o commitstatus.Options, sw *gitops.Sweeper, fl *fleetSweeps, log logr.Logger) (commitstatus.Provider, error) {
	if !o.Enabled() {
		return nil, nil
	}
	tf, err := source.OpenTokenFile(o.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("--commit-status-token-file: %w", err)
	}
	prov, err := commitstatus.NewProvider(o, tf)
	if err != nil {
		return nil, err
	}
	p := commitstatus.NewPoster(prov, o, time.Now)
	sw.Statuses = p
	if fl != nil {
		fl.statuses, fl.statusContext = p, o.Context
	}
	if err := mgr.Add(watchFile(tf, log.WithName("token"))); err != nil {
		return nil, err
	}
	log.Info("Posting commit statuses", "provider", o.Provider, "repository", o.Repository, "context", o.Context, "perMinute", o.PerMinute,
		"fleetContexts", fl != nil)
	return prov, mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		p.Run(ctx, log)
		return nil
	}))
}
