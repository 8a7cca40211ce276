package gitops

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openuniverse/operator/reconcile/apply"
)

func TestSummarize(t *testing.T) {
	results := []apply.Result{
		{Action: apply.Created}, {Action: apply.Updated}, {Action: apply.Updated},
		{Action: apply.InSync}, {Action: apply.Failed}, {Action: apply.Denied},
	}
	skips := []Skip{
		{Reason: ReasonUnparseable}, {Reason: ReasonKustomization}, {Reason: ReasonTypeless}, {Reason: ReasonDuplicate},
		{Reason: ReasonNoName}, {Reason: ReasonNamespaceNotOwned}, {Reason: ReasonNotInApplyScope}, {Reason: ReasonNoNamespace},
		{Reason: ReasonCRDNotAllowed}, {Reason: ReasonClusterScopedWithNamespace},
		{Reason: ReasonClusterScoped}, {Reason: ReasonOperatorObject},
	}
	want := Summary{Files: 9, Refetched: 2, Applied: 5, Created: 1, Updated: 2, InSync: 1, Errors: 1, Denied: 1, Skipped: 5, OutOfScope: 7}
	if diff := cmp.Diff(want, Tally(9, 2, 5, results, skips)); diff != "" {
		t.Errorf("Tally (-want +got):\n%s", diff)
	}
}
