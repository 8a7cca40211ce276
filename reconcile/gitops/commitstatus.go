package gitops

import (
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"

	"github.com/openuniverse/operator/source/commitstatus"
)

// CommitStatuses takes the status of the commit each sweep applied (commitstatus.Poster):
// Enqueue must return at once, queueing, never posting, so a git host's outage never
// holds a sweep.
type CommitStatuses interface {
	Enqueue(commitstatus.Status) bool
}

// startedDescription is the description of the pending status a sweep posts when it
// starts on a revision it has not applied.
const startedDescription = "sweep started"

// startedStatus is the status of a sweep starting on rev.
func startedStatus(rev string) commitstatus.Status {
	return commitstatus.Status{SHA: rev, State: commitstatus.Pending, Description: startedDescription}
}

// StatusOf is the commit status of a finished sweep's report, and false when the report
// names no revision (the head could not be resolved). It is pure:
//   - error: the sweep stopped before applying (snapshot, decryption keys);
//   - failure: an object failed or was denied, the scope refused one, a file is unusable, or
//     an applied object's health is Failed (kstatus: a rollout past its progress deadline);
//   - pending: objects are held back by the ordering, or still rolling out (health
//     InProgress, NotFound or Terminating), nothing failed;
//   - success: every object is applied or in sync (suspended paths aside) and Current (or of
//     unknown health: no watch covers it, as the ordering counts it).
//
// The description counts the report (applied, in sync, refused, held, orphaned, and failed,
// unusable, suspended, rolling out, unhealthy when there are some). When prev is the status of the same commit in
// the same state, prev is returned as it is: a resync that finds the commit as it was, or
// reverts drift, posts nothing new; only a change of state does.
func StatusOf(prev commitstatus.Status, r *Report) (commitstatus.Status, bool) {
	if r.Revision == "" {
		return commitstatus.Status{}, false
	}
	st := commitstatus.Status{SHA: r.Revision}
	s := r.Summary
	switch {
	case r.Error != "":
		st.State, st.Description = commitstatus.Error, "sweep failed before applying; see the operator's log and GET /gitops"
	case s.Errors+s.Denied+s.OutOfScope+s.Skipped+s.Health.Failed > 0:
		st.State, st.Description = commitstatus.Failure, Describe(s)
	case s.Held > 0 || rollingOut(s.Health) > 0:
		st.State, st.Description = commitstatus.Pending, Describe(s)
	default:
		st.State, st.Description = commitstatus.Success, Describe(s)
	}
	if prev.SHA == st.SHA && prev.State == st.State && prev.Description != startedDescription {
		return prev, true
	}
	return st, true
}

// Describe is the one-line count of a sweep for a commit status.
func Describe(s Summary) string {
	d := fmt.Sprintf("applied %d, in sync %d, refused %d, held %d, orphaned %d",
		s.Created+s.Updated, s.InSync, s.Denied+s.OutOfScope, s.Held, s.Orphaned)
	for _, extra := range []struct {
		n    int
		name string
	}{{s.Errors, "failed"}, {s.Skipped, "unusable"}, {s.Suspended, "suspended"}, {rollingOut(s.Health), "rolling out"}, {s.Health.Failed, "unhealthy"}} {
		if extra.n > 0 {
			d += fmt.Sprintf(", %s %d", extra.name, extra.n)
		}
	}
	return commitstatus.Clip(d)
}

// rollingOut counts the objects on their way to Current: InProgress, NotFound, Terminating.
func rollingOut(h HealthCounts) int { return h.InProgress + h.NotFound + h.Terminating }

// Settling reports whether a report's health may still move on its own: an object rolling
// out or Failed. While the last report settles, a watch seeing an object turn Current or
// Failed fires a sweep (0 requests when idle), so the commit status and the alerts follow
// the health without waiting for the resync; an object turning Failed fires one whatever
// the report. It is pure.
func Settling(r *Report) bool {
	return r.Error == "" && (rollingOut(r.Summary.Health) > 0 || r.Summary.Health.Failed > 0)
}

// settles is whether a health change to h ends a settling report's wait for it.
func settles(h kstatus.Status) bool {
	return h == kstatus.CurrentStatus || h == kstatus.FailedStatus
}

// postStarted enqueues the pending status of a sweep starting on rev, unless rev is the
// commit of the last status (a retry of a sweep that failed on it).
func (s *Sweeper) postStarted(rev string) {
	if s.Statuses == nil || rev == "" || rev == s.status.SHA {
		return
	}
	s.status = startedStatus(rev)
	s.Statuses.Enqueue(s.status)
}

// postFinished enqueues the status of r's commit.
func (s *Sweeper) postFinished(r *Report) {
	if s.Statuses == nil {
		return
	}
	if st, ok := StatusOf(s.status, r); ok {
		s.status = st
		s.Statuses.Enqueue(st)
	}
}
