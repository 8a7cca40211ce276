package preview

import (
	"strings"
	"testing"

	"github.com/openuniverse/operator/reconcile/gitops"
)

func pr(n int, head string) gitops.PullRequest {
	return gitops.PullRequest{Host: gitops.HostGitHub, Number: n, BaseRef: "main", BaseSHA: strings.Repeat("b", 40), HeadSHA: strings.Repeat(head, 40)}
}

// TestQueue: one pending event per pull request (a newer head replaces it), duplicates
// refused, the oldest pull request dropped when full, one in flight, a finished preview
// stale when a newer head of its pull request is pending.
func TestQueue(t *testing.T) {
	q := NewQueue(2)
	if a := q.Add(pr(1, "a")); !a.Queued || a.Superseded+a.Dropped != 0 {
		t.Fatalf("first: %+v", a)
	}
	if a := q.Add(pr(1, "a")); a.Queued || !a.Duplicate {
		t.Fatalf("the same head again (a redelivery): %+v, want a duplicate", a)
	}
	if a := q.Add(pr(1, "c")); !a.Queued || a.Superseded != 1 || q.Len() != 1 {
		t.Fatalf("a newer head: %+v, len %d; want it to replace the pending one", a, q.Len())
	}
	q.Add(pr(2, "d"))
	if a := q.Add(pr(3, "e")); !a.Queued || a.Dropped != 1 || q.Len() != 2 {
		t.Fatalf("a third pull request in a queue of 2: %+v, len %d; want the oldest dropped", a, q.Len())
	}
	got, ok := q.Next()
	if !ok || got.Number != 2 {
		t.Fatalf("next %+v %v, want #2 (#1 was dropped)", got, ok)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a second preview in flight")
	}
	if a := q.Add(pr(2, "d")); !a.Duplicate {
		t.Fatalf("the in-flight head again: %+v, want a duplicate", a)
	}
	if q.Stale() {
		t.Fatal("stale without a newer head")
	}
	q.Add(pr(2, "f"))
	if !q.Stale() {
		t.Fatal("not stale with a newer head of #2 pending")
	}
	q.Done(false)
	got, _ = q.Next()
	if got.Number != 3 {
		t.Fatalf("next %+v, want #3", got)
	}
	q.Done(true)
	if a := q.Add(pr(3, "e")); !a.Duplicate {
		t.Fatalf("a posted head again: %+v, want a duplicate", a)
	}
	next := pr(3, "e")
	next.BaseSHA = strings.Repeat("9", 40)
	if a := q.Add(next); !a.Queued {
		t.Fatalf("the posted head on a new base: %+v, want it queued", a)
	}
	got, _ = q.Next()
	if got.Number != 2 || got.HeadSHA != strings.Repeat("f", 40) {
		t.Fatalf("next %+v, want #2's newer head", got)
	}
}
