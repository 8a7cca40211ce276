package main

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/upgrade/image"
)

// sweepAsk asks the git sweep for a pass now: the sweep's own trigger when it runs in this
// process and this process leads (or runs without leader election), else the webhook relay
// the leader's sweep watches (a standby replica, or the standalone deploy plane). With
// neither it is deploy.ErrNoSweep. The deploy plane's sync and every commit (wakingWriter) ask
// through it.
type sweepAsk struct {
	sweeper *gitops.Sweeper // nil: no sweep runs in this process
	elected <-chan struct{} // closed once this process leads
	relay   *gitops.Relay   // nil: no relay to ask through
}

func (a *sweepAsk) ask(ctx context.Context) error {
	if a.sweeper != nil {
		select {
		case <-a.elected:
			a.sweeper.Trigger().Fire()
			return nil
		default:
		}
	}
	if a.relay == nil {
		return deploy.ErrNoSweep
	}
	return a.relay.Record(ctx)
}

// wakingWriter is the operator's writer of a repository: after every write that landed a
// commit it asks the git sweep for a pass, so the commit is applied at once instead of at the
// next resync. Every commit the operator makes (the CR write path of source.CRCommitter and
// ImageUpdate's pushes) goes through it: it is the one place that wakes the sweep after a
// commit. A commit that landed is success even when the sweep cannot be asked: the failure is
// logged, and the sweep's resync applies the commit.
type wakingWriter struct {
	source.Writer
	wake func(ctx context.Context) error
	log  logr.Logger
}

func (w wakingWriter) Write(ctx context.Context, c source.Change) (source.Result, error) {
	res, err := w.Writer.Write(ctx, c)
	if err != nil || res.Commit == "" {
		return res, err
	}
	if err := w.wake(ctx); err != nil {
		w.log.Error(err, "committed, but the git sweep could not be asked for a pass; its resync applies the commit",
			"commit", res.Commit, "branch", res.Branch)
	}
	return res, nil
}

// waking makes every writer of open a wakingWriter; with no wake (no sweep to ask) it
// returns open.
func waking(open image.WriterFor, wake func(ctx context.Context) error, log logr.Logger) image.WriterFor {
	if wake == nil {
		return open
	}
	return func(repo string, c *image.GitCredentials) (source.Writer, error) {
		w, err := open(repo, c)
		if err != nil {
			return nil, err
		}
		return wakingWriter{Writer: w, wake: wake, log: log}, nil
	}
}
