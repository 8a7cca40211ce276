package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/upgrade/image"
)

// gitWrite is the operator's write path to the universe repository the git sweep follows:
// the CR write path of upgrade/image over the sweep's own source (to find the file declaring
// a CR at the head) and a writer for the same repository and branch (go-git, or the GitHub
// git data API), with the operator's token. The drive loop commits declared tags through it,
// the upgrade machine its reverts (revertInGit) and the deploy plane its rollbacks.
//
// It is created before the Kind controllers are set up and filled once the sweep is, so the
// controllers can hold it; nothing calls it before the manager starts.
type gitWrite struct {
	c     *image.CRCommitter
	sweep func() // the sweep's trigger, fired after a revert commit
}

var errNoGitWrite = errors.New("no git write path: the git sweep is not running in this process")

// wantGitWrite reports whether run sets up the git sweep, and so a write path.
func wantGitWrite(o *runOptions) bool {
	return slices.Contains(o.Controllers, loopGitOps) && (o.Git.URL != "" || o.GitHub.Repository != "")
}

// open fills g once setupGitOps has run (o.commits is the sweep's source).
func (g *gitWrite) open(o *runOptions, sweep func()) error {
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
	w, err := writers(o, credsOrNil(creds))(repo, nil)
	if err != nil {
		return fmt.Errorf("git write path: %w", err)
	}
	g.c = &image.CRCommitter{Source: o.commits, Writer: w, Branch: branch, Limits: o.GitOps.Limits}
	g.sweep = sweep
	return nil
}

// CommitTag is drive's TagCommitter: the declared tag into the file declaring the CR, never
// another repository.
func (g *gitWrite) CommitTag(ctx context.Context, c drive.TagChange) (string, error) {
	if g.c == nil {
		return "", errNoGitWrite
	}
	res, err := g.c.Commit(ctx, image.ImageChange{CR: image.Object{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name},
		Repository: c.Repository, Tag: c.To, Message: c.Message})
	return res.Commit, err
}

// SetImage is the GitWriter of the deploy plane (a rollback) and of the upgrade machine (a
// revert): the image into the file declaring the CR, then a sweep so it is applied at once.
func (g *gitWrite) SetImage(ctx context.Context, file string, gvk schema.GroupVersionKind, namespace, name, img, message string) (string, error) {
	if g.c == nil {
		return "", errNoGitWrite
	}
	commit, err := g.c.SetImage(ctx, file, gvk, namespace, name, img, message)
	if err == nil && g.sweep != nil {
		g.sweep()
	}
	return commit, err
}
