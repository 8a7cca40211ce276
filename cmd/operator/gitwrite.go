package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/upgrade/image"
)

// gitWrite is the operator's one source.CRCommitter: the CR write path of upgrade/image over
// the sweep's own source (to find the file declaring a CR at the head) and a writer for the
// same repository and branch (go-git, or the GitHub git data API), with the operator's
// token. The drive loop commits declared tags through it, the upgrade machine its reverts
// (revertInGit) and the deploy plane its rollbacks. Its writer is a wakingWriter: a commit
// wakes the git sweep, so the change is applied at once, and no caller asks the sweep itself.
//
// It is created before the Kind controllers are set up and filled once the sweep is, so the
// controllers can hold it; nothing calls it before the manager starts.
type gitWrite struct {
	w *image.CRWriter
}

var _ source.CRCommitter = (*gitWrite)(nil)

var errNoGitWrite = errors.New("no git write path: the git sweep is not running in this process")

// wantGitWrite reports whether run sets up the git sweep, and so a write path.
func wantGitWrite(o *runOptions) bool {
	return slices.Contains(o.Controllers, loopGitOps) && (o.Git.URL != "" || o.GitHub.Repository != "")
}

// open fills g once setupGitOps has run (o.commits is the sweep's source); wake asks the
// sweep for a pass after a commit (nil: none to ask).
func (g *gitWrite) open(o *runOptions, wake func(ctx context.Context) error, log logr.Logger) error {
	if o.commits == nil {
		return errNoGitWrite
	}
	creds, err := o.Source.Credentials()
	if err != nil {
		return fmt.Errorf("--gitops-token-file: %w", err)
	}
	repo, branch := o.Git.URL, o.Git.Branch
	if repo == "" {
		repo, branch = o.GitHub.Repository, o.GitHub.Branch
	}
	w, err := waking(writers(o, credsOrNil(creds)), wake, log)(repo, nil)
	if err != nil {
		return fmt.Errorf("git write path: %w", err)
	}
	g.w = &image.CRWriter{Source: o.commits, Writer: w, Branch: branch, Limits: o.GitOps.Limits}
	return nil
}

// CommitImage commits c to the file declaring the CR; the writer wakes the sweep.
func (g *gitWrite) CommitImage(ctx context.Context, c source.CRImage) (source.Result, error) {
	if g.w == nil {
		return source.Result{}, errNoGitWrite
	}
	res, err := g.w.Commit(ctx, c)
	return res.Result, err
}
