package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
)

// planeGit is the git write path of `operator deploy-plane` run alone: the repository the
// operator's sweep follows, named by the same flags as `operator run` (--git-url … or
// --github-repository …, the token from --gitops-token-file), so a rollback of a CR that
// came from git commits to that repository as it does in `operator run`, instead of
// answering 501. The plane runs no sweep: the commit wakes the leader's through the webhook
// relay (wake).
type planeGit struct {
	Source source.Options
	Git    gitclone.Options
	GitHub github.Options
	Limits source.Limits
}

// bindFlags registers the git source flags of `operator run` that the write path needs.
func (p *planeGit) bindFlags(fs *pflag.FlagSet) {
	p.Git, p.GitHub, p.Limits = gitclone.DefaultOptions(), github.DefaultOptions(), source.DefaultLimits()
	p.Source.BindFlags(fs)
	p.Git.BindFlags(fs)
	p.GitHub.BindFlags(fs)
	p.Limits.BindFlags(fs)
}

// repoURL is the repository as a dashboard shows it.
func (p *planeGit) repoURL() string {
	return repoURL(&runOptions{Git: p.Git, GitHub: p.GitHub})
}

// branch is the branch the write path commits to.
func (p *planeGit) branch() string {
	if p.Git.URL == "" && p.GitHub.Repository != "" {
		return p.GitHub.Branch
	}
	return p.Git.Branch
}

// open returns the write path and the repository's source (which also describes commits
// for the plane's revision metadata); both nil when no repository is set: a rollback of a
// CR from git then answers 501, naming what to commit.
func (p *planeGit) open(wake func(context.Context) error) (*gitWrite, source.Source, error) {
	o := &runOptions{Source: p.Source, Git: p.Git, GitHub: p.GitHub}
	o.GitOps.Limits = p.Limits
	if o.Git.URL == "" && o.GitHub.Repository == "" {
		return nil, nil, nil
	}
	if o.Git.URL != "" && o.GitHub.Repository != "" {
		return nil, nil, errors.New("set one of --git-url and --github-repository, not both")
	}
	creds, err := o.Source.Credentials()
	if err != nil {
		return nil, nil, fmt.Errorf("--gitops-token-file: %w", err)
	}
	o.Git.MaxFileBytes, o.GitHub.MaxFileBytes = p.Limits.FileBytes, p.Limits.FileBytes
	var src source.Source
	if o.Git.URL != "" {
		src, err = gitclone.New(credsOrNil(creds), o.Git)
	} else {
		src, err = github.New(credsOrNil(creds), o.GitHub)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("git source: %w", err)
	}
	o.commits = src
	gw := &gitWrite{}
	if err := gw.open(o, wake, ctrl.Log.WithName("git-write")); err != nil {
		return nil, nil, err
	}
	return gw, src, nil
}
