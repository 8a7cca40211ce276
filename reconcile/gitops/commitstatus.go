package gitops

import (
	"fmt"

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
//   - failure: an object failed or was denied, the scope refused one, or a file is unusable;
//   - pending: objects are held back by the ordering, nothing failed;
//   - success: every object is applied or in sync (suspended paths aside).
//
// The description counts the report (applied, in sync, refused, held, orphaned, and failed,
// unusable, suspended when there are some). When prev is the status of the same commit in
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
	case s.Errors+s.Denied+s.OutOfScope+s.Skipped > 0:
		st.State, st.Description = commitstatus.Failure, Describe(s)
	case s.Held > 0:
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
	}{{s.Errors, "failed"}, {s.Skipped, "unusable"}, {s.Suspended, "suspended"}} {
		if extra.n > 0 {
			d += fmt.Sprintf(", %s %d", extra.name, extra.n)
		}
	}
	return commitstatus.Clip(d)
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
