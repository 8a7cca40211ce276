package preview

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
)

// Results of universe_operator_previews_total.
const (
	ResultPosted     = "posted"
	ResultFailed     = "failed"
	ResultSuperseded = "superseded"
	ResultDropped    = "dropped"
)

// Prometheus collectors; cmd/operator registers them (Metrics).
var metricPreviews = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "universe_operator_previews_total",
	Help: "Pull request previews by outcome: posted (the check is on the head commit), failed (a revision unreadable, or the host refused the check or did not answer), superseded (a newer head of the same pull request came first: not posted) or dropped (the full queue dropped the oldest pull request).",
}, []string{"result"})

// Metrics returns the package's collectors, for registration by the caller.
func Metrics() []prometheus.Collector { return []prometheus.Collector{metricPreviews} }

// Revisions reads a pull request's two revisions: the git source (source/github,
// source/gitclone).
type Revisions interface {
	source.RefResolver
	Snapshot(ctx context.Context, rev string) (*source.Snapshot, error)
}

// DefaultTimeout bounds one preview: resolving and reading both revisions, the dry-runs
// and posting the check.
const DefaultTimeout = 2 * time.Minute

// Worker is the queue's shell: Enqueue (the webhook's, never waits) and Run, the one
// goroutine that previews, one pull request at a time, and posts each check on its head
// commit. A git host, status host or apiserver outage holds only this goroutine: never
// the webhook's answer nor the sweep.
type Worker struct {
	previewer *Previewer
	revs      Revisions
	checks    commitstatus.Checker
	context   string
	branch    string
	// Timeout bounds one preview (DefaultTimeout when zero).
	Timeout time.Duration
	log     logr.Logger

	mu   sync.Mutex
	q    *Queue
	wake chan struct{}
}

// NewWorker returns a worker previewing with p the revisions revs reads, posting through
// checks under the commit status context (the check is <context>/preview); pull requests
// into another branch than branch (the swept one) are ignored. queue bounds the pending
// pull requests (DefaultQueue when < 1).
func NewWorker(p *Previewer, revs Revisions, checks commitstatus.Checker, context, branch string, queue int, log logr.Logger) *Worker {
	for _, r := range []string{ResultPosted, ResultFailed, ResultSuperseded, ResultDropped} {
		metricPreviews.WithLabelValues(r) // every outcome is a series from the start
	}
	return &Worker{previewer: p, revs: revs, checks: checks, context: context, branch: branch, log: log,
		q: NewQueue(queue), wake: make(chan struct{}, 1)}
}

// Enqueue queues pr for a preview and returns at once: "" when queued, else why not (it
// merges into another branch than the swept one; the same head is pending, in flight or
// posted).
func (w *Worker) Enqueue(pr gitops.PullRequest) string {
	if w.branch != "" && pr.BaseRef != w.branch {
		return fmt.Sprintf("it merges into %s, not the swept branch %s", pr.BaseRef, w.branch)
	}
	w.mu.Lock()
	a := w.q.Add(pr)
	w.mu.Unlock()
	metricPreviews.WithLabelValues(ResultSuperseded).Add(float64(a.Superseded))
	metricPreviews.WithLabelValues(ResultDropped).Add(float64(a.Dropped))
	if a.Dropped > 0 {
		w.log.Info("Preview queue full: dropped the oldest pull request", "max", w.q.max)
	}
	if a.Duplicate {
		return "head " + short(pr.HeadSHA) + " onto " + pr.BaseRef + " is already queued or previewed"
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return ""
}

// Run previews the queued pull requests until ctx is done.
func (w *Worker) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for ctx.Err() == nil {
			w.mu.Lock()
			pr, ok := w.q.Next()
			w.mu.Unlock()
			if !ok {
				break
			}
			result := w.preview(ctx, pr)
			w.mu.Lock()
			w.q.Done(result == ResultPosted)
			w.mu.Unlock()
			metricPreviews.WithLabelValues(result).Inc()
		}
	}
}

// Start implements manager.Runnable; NeedLeaderElection says every replica runs it (a
// replica previews the events it receives: it writes nothing to the cluster).
func (w *Worker) Start(ctx context.Context) error { w.Run(ctx); return nil }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (w *Worker) NeedLeaderElection() bool { return false }

// preview reads pr's base and head, previews merging them and posts the check; it returns
// the outcome.
func (w *Worker) preview(ctx context.Context, pr gitops.PullRequest) string {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	log := w.log.WithValues("pullRequest", pr.Number, "host", pr.Host, "head", short(pr.HeadSHA), "base", pr.BaseRef)
	ctx = logr.NewContext(ctx, log)
	base, head, err := w.read(ctx, pr)
	if moved, ok := errors.AsType[headMoved](err); ok {
		log.Info("Preview superseded: the pull request's head moved on; its own event previews it", "now", short(moved.now))
		return ResultSuperseded
	}
	if err != nil {
		log.Error(err, "Preview failed: a revision is unreadable")
		return ResultFailed
	}
	pv := w.previewer.Preview(ctx, base, head)
	w.mu.Lock()
	stale := w.q.Stale()
	w.mu.Unlock()
	if stale {
		log.Info("Preview superseded: a newer head of the pull request is queued; not posted")
		return ResultSuperseded
	}
	if err := w.checks.PostCheck(ctx, pv.Check(w.context)); err != nil {
		log.Error(err, "Preview not posted: the check was refused or not answered", "summary", pv.Summary())
		return ResultFailed
	}
	log.Info("Preview posted", "check", commitstatus.PreviewContext(w.context), "baseRevision", short(base.Revision),
		"refused", pv.Refused(), "summary", pv.Summary(), "seconds", time.Since(start).Seconds())
	return ResultPosted
}

// headMoved: the pull request's head ref points past the event's head.
type headMoved struct{ now string }

func (e headMoved) Error() string { return "the head moved on to " + short(e.now) }

// read resolves and reads pr's base (its base SHA, else its base branch now) and head (the
// ref the base repository keeps it under).
func (w *Worker) read(ctx context.Context, pr gitops.PullRequest) (base, head *source.Snapshot, err error) {
	baseSHA := ""
	if pr.BaseSHA != "" {
		if baseSHA, err = w.revs.Resolve(ctx, pr.BaseSHA); err != nil {
			logr.FromContextOrDiscard(ctx).V(1).Info("Base commit unreadable; previewing against the base branch", "baseSHA", short(pr.BaseSHA), "error", err.Error())
		}
	}
	if baseSHA == "" {
		if baseSHA, err = w.revs.Resolve(ctx, pr.BaseRef); err != nil {
			return nil, nil, fmt.Errorf("base %s: %w", pr.BaseRef, err)
		}
	}
	headSHA, err := w.revs.Resolve(ctx, pr.HeadRef)
	if err != nil {
		return nil, nil, fmt.Errorf("head %s: %w", pr.HeadRef, err)
	}
	if headSHA != pr.HeadSHA {
		return nil, nil, headMoved{now: headSHA}
	}
	if base, err = w.revs.Snapshot(ctx, baseSHA); err != nil {
		return nil, nil, fmt.Errorf("base %s: %w", short(baseSHA), err)
	}
	if head, err = w.revs.Snapshot(ctx, headSHA); err != nil {
		return nil, nil, fmt.Errorf("head %s: %w", short(headSHA), err)
	}
	return base, head, nil
}
