package preview

import (
	"github.com/openuniverse/operator/reconcile/gitops"
)

// DefaultQueue is how many pull requests wait for a preview at most.
const DefaultQueue = 16

// maxPosted is how many pull requests' last posted head the queue remembers.
const maxPosted = 256

// Queue is the pure core of the preview's queue (no goroutine, no clock, not safe for
// concurrent use: the Worker holds a lock around it). It holds at most one pending event
// per pull request, and one in flight at a time:
//   - a newer head of a pull request replaces its pending one (superseded);
//   - an event equal (head and base) to the pending, the in-flight or the last posted one of
//     its pull request is a duplicate, not queued (a redelivery; GitLab's update of a title);
//   - when Max pull requests are pending, the oldest is dropped for a new one;
//   - a finished preview whose pull request has a newer head pending is stale: not posted
//     (superseded), since the reviewer sees the newer head's check.
type Queue struct {
	max      int
	pending  []gitops.PullRequest // oldest first, one per pull request
	inflight *gitops.PullRequest
	posted   map[int]string // pull request → its last posted head and base
	order    []int          // posted's keys, oldest first
}

// Added says what Queue.Add did with an event.
type Added struct {
	// Queued: the event waits for its preview.
	Queued bool
	// Duplicate: equal to one pending, in flight or posted; not queued.
	Duplicate bool
	// Superseded counts the pending events of the same pull request it replaced (0 or 1);
	// Dropped the other pull requests' pending events dropped to make room (0 or 1).
	Superseded, Dropped int
}

// NewQueue returns a queue of at most max pending pull requests (DefaultQueue when max < 1).
func NewQueue(max int) *Queue {
	if max < 1 {
		max = DefaultQueue
	}
	return &Queue{max: max, posted: map[int]string{}}
}

func revisions(pr gitops.PullRequest) string { return pr.HeadSHA + " " + pr.BaseRef + " " + pr.BaseSHA }

// Add queues pr (see Queue).
func (q *Queue) Add(pr gitops.PullRequest) Added {
	if q.inflight != nil && q.inflight.Number == pr.Number && revisions(*q.inflight) == revisions(pr) ||
		q.posted[pr.Number] == revisions(pr) {
		return Added{Duplicate: true}
	}
	var a Added
	for i, p := range q.pending {
		if p.Number != pr.Number {
			continue
		}
		if revisions(p) == revisions(pr) {
			return Added{Duplicate: true}
		}
		q.pending = append(q.pending[:i], q.pending[i+1:]...)
		a.Superseded++
		break
	}
	if len(q.pending) >= q.max {
		q.pending = q.pending[1:]
		a.Dropped++
	}
	q.pending = append(q.pending, pr)
	a.Queued = true
	return a
}

// Len is the number of pending pull requests.
func (q *Queue) Len() int { return len(q.pending) }

// Next takes the oldest pending event and holds it in flight; false when none is pending
// or one is in flight already.
func (q *Queue) Next() (gitops.PullRequest, bool) {
	if q.inflight != nil || len(q.pending) == 0 {
		return gitops.PullRequest{}, false
	}
	pr := q.pending[0]
	q.pending = q.pending[1:]
	q.inflight = &pr
	return pr, true
}

// Stale reports whether the in-flight preview's pull request has a newer head pending: its
// result is not to be posted.
func (q *Queue) Stale() bool {
	if q.inflight == nil {
		return false
	}
	for _, p := range q.pending {
		if p.Number == q.inflight.Number {
			return true
		}
	}
	return false
}

// Done ends the in-flight preview; posted says its check was posted, so an equal event is
// a duplicate from now on.
func (q *Queue) Done(posted bool) {
	if q.inflight == nil {
		return
	}
	pr := *q.inflight
	q.inflight = nil
	if !posted {
		return
	}
	if _, ok := q.posted[pr.Number]; !ok {
		q.order = append(q.order, pr.Number)
		if len(q.order) > maxPosted {
			delete(q.posted, q.order[0])
			q.order = q.order[1:]
		}
	}
	q.posted[pr.Number] = revisions(pr)
}
