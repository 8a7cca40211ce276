package drive

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// TestAgentOutcomeTable: each thing an AgentDeployment reconcile meets → its conditions and
// phase → when it runs again.
func TestAgentOutcomeTable(t *testing.T) {
	a := &Agents{Resync: 5 * time.Minute}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	tenancy := &kinds.TenancyError{Reason: kinds.ReasonOrgMismatch, Message: "spec.org orgb is not the namespace's org hanzo"}
	for _, tc := range []struct {
		name                        string
		o                           agentObservation
		reason                      string
		ready, stalled, reconciling bool
		phase                       v1.Phase
		after                       time.Duration
	}{
		{"bound and ready", agentObservation{agentReady: true, binding: BindingBound, verdict: condition.Verdict{Class: condition.Ready, Reason: ReasonAgentBound}},
			ReasonAgentBound, true, false, false, v1.PhaseRunning, 5 * time.Minute},
		{"bound, agent starting", agentObservation{binding: BindingBound, verdict: condition.Verdict{Class: condition.Progressing, Reason: ReasonAgentNotReady}},
			ReasonAgentNotReady, false, false, true, v1.PhasePending, 30 * time.Second},
		{"read-only", agentObservation{binding: BindingPending, verdict: condition.Verdict{Class: condition.Idle, Reason: ReasonReadOnly}},
			ReasonReadOnly, false, false, false, v1.PhasePending, 5 * time.Minute},
		{"cloud down", agentObservation{binding: BindingError, verdict: condition.Verdict{Class: condition.Transient, Reason: condition.ReasonCloudError}},
			condition.ReasonCloudError, false, false, true, v1.PhaseDegraded, 30 * time.Second},
		{"machine taken", agentObservation{binding: BindingError, verdict: condition.Verdict{Class: condition.Blocked, Reason: condition.ReasonMachineTaken}},
			condition.ReasonMachineTaken, false, true, false, v1.PhaseDegraded, 5 * time.Minute},
		{"tenancy refusal", agentObservation{binding: BindingError, verdict: condition.Of(tenancy)},
			kinds.ReasonOrgMismatch, false, true, false, v1.PhaseDegraded, 5 * time.Minute},
		{"invalid spec.org", agentObservation{binding: BindingError, verdict: condition.Of(condition.TerminalError(kinds.ReasonInvalidOrg, errors.New("spec.org: empty")))},
			kinds.ReasonInvalidOrg, false, true, false, v1.PhaseDegraded, 0},
		{"namespace unreadable", agentObservation{binding: BindingError, verdict: condition.Of(condition.TransientError(condition.ReasonNamespaceUnreadable, errors.New("timeout")))},
			condition.ReasonNamespaceUnreadable, false, false, true, v1.PhaseDegraded, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := v1.AgentDeploymentStatus{}
			prev.Conditions = []metav1.Condition{{Type: condition.TypeStalled, Status: metav1.ConditionTrue, Reason: "Old"}}
			st := agentStatus(prev, 2, tc.o, now)
			got := [3]bool{meta.IsStatusConditionTrue(st.Conditions, condition.TypeReady), meta.IsStatusConditionTrue(st.Conditions, condition.TypeStalled),
				meta.IsStatusConditionTrue(st.Conditions, condition.TypeReconciling)}
			if got != [3]bool{tc.ready, tc.stalled, tc.reconciling} {
				t.Errorf("ready, stalled, reconciling = %v, want %v", got, [3]bool{tc.ready, tc.stalled, tc.reconciling})
			}
			if r := meta.FindStatusCondition(st.Conditions, condition.TypeReady); r == nil || r.Reason != tc.reason || r.ObservedGeneration != 2 {
				t.Errorf("Ready = %+v, want reason %s", r, tc.reason)
			}
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if after := tc.o.verdict.Class.After(a.intervals()); after != tc.after {
				t.Errorf("requeue after %s, want %s", after, tc.after)
			}
		})
	}
}
