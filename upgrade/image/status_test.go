package image

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

func TestStatusOf(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		o               Outcome
		ready, stalled  bool
		phase           v1.Phase
		latest, pushTag string
	}{
		{Outcome{Reason: ReasonNoNewTag, Current: "v1", Message: "at latest: v1"}, true, false, v1.PhaseRunning, "v1", ""},
		{Outcome{Reason: ReasonPushed, Current: "v1", Latest: "v2", Pushed: &Push{Tag: "v2", Commit: "abc", At: now}}, true, false, v1.PhaseRunning, "v2", "v2"},
		{Outcome{Reason: ReasonPushRejected, Current: "v1", Latest: "v2"}, false, false, v1.PhaseRunning, "v2", ""},
		{Outcome{Reason: ReasonRegistryError}, false, false, v1.PhaseRunning, "", ""},
		{Outcome{Reason: ReasonTagShapeMissing, Current: "v1-amd64"}, false, false, v1.PhaseRunning, "v1-amd64", ""},
		{Outcome{Reason: ReasonNoMatch}, false, true, v1.PhaseDegraded, "", ""},
		{Outcome{Reason: ReasonCurrentNotSemver, Current: "latest"}, false, true, v1.PhaseDegraded, "latest", ""},
		{Outcome{Reason: ReasonInvalidSpec}, false, true, v1.PhaseDegraded, "", ""},
	}
	for _, c := range cases {
		s := StatusOf(v1.ImageUpdateStatus{}, 3, c.o, now)
		if meta.IsStatusConditionTrue(s.Conditions, "Ready") != c.ready || meta.IsStatusConditionTrue(s.Conditions, "Stalled") != c.stalled ||
			s.Phase != c.phase || s.LatestTag != c.latest || s.LastPushedTag != c.pushTag || s.ObservedGeneration != 3 {
			t.Errorf("%s: %+v", c.o.Reason, s)
		}
		if r := meta.FindStatusCondition(s.Conditions, "Ready"); r.Reason != c.o.Reason {
			t.Errorf("%s: Ready reason %s", c.o.Reason, r.Reason)
		}
	}
	// the push fields survive later runs that push nothing; Stalled goes away when fixed
	s := StatusOf(v1.ImageUpdateStatus{}, 1, Outcome{Reason: ReasonPushed, Latest: "v2", Pushed: &Push{Tag: "v2", Commit: "abc", At: now}}, now)
	s = StatusOf(s, 1, Outcome{Reason: ReasonNoMatch}, now.Add(time.Minute))
	s = StatusOf(s, 2, Outcome{Reason: ReasonNoNewTag, Current: "v2"}, now.Add(2*time.Minute))
	if s.LastPushedTag != "v2" || s.LastCommit != "abc" || !s.LastPushTime.Time.Equal(now) || meta.FindStatusCondition(s.Conditions, "Stalled") != nil {
		t.Fatalf("%+v", s)
	}
	if !equalStatus(s, StatusOf(s, 2, Outcome{Reason: ReasonNoNewTag, Current: "v2"}, now.Add(time.Hour))) {
		t.Fatal("the same outcome later is a status change")
	}
}

// TestOutcomeTable: every reason of an ImageUpdate → its conditions → when it runs again.
func TestOutcomeTable(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	every := 120 * time.Second // intervalSeconds 120, no jitter
	for _, tc := range []struct {
		reason                      string
		ready, stalled, reconciling bool
		after                       time.Duration // with a registry Retry-After of 10 min
	}{
		{ReasonNoNewTag, true, false, false, every},
		{ReasonPushed, true, false, false, every},
		{ReasonTagShapeMissing, false, false, false, every},
		{ReasonPushRejected, false, false, true, 10 * time.Minute},
		{ReasonRegistryError, false, false, true, 10 * time.Minute},
		{ReasonGitError, false, false, true, 10 * time.Minute},
		{ReasonNamespaceUnreadable, false, false, true, 10 * time.Minute},
		{ReasonNoMatch, false, true, false, every},
		{ReasonCurrentNotSemver, false, true, false, every},
		{ReasonCredentialsError, false, true, false, every},
		{ReasonForeignFile, false, true, false, every},
		{kinds.ReasonOrgMismatch, false, true, false, every}, // a Namespace's label wakes nothing: never sooner
		{kinds.ReasonNamespaceHasNoOrg, false, true, false, every},
		{ReasonInvalidSpec, false, true, false, 0}, // the spec's change wakes it
	} {
		o := Outcome{Reason: tc.reason, Message: "m"}
		s := StatusOf(v1.ImageUpdateStatus{}, 1, o, now)
		got := [3]bool{meta.IsStatusConditionTrue(s.Conditions, condition.TypeReady), meta.IsStatusConditionTrue(s.Conditions, condition.TypeStalled),
			meta.IsStatusConditionTrue(s.Conditions, condition.TypeReconciling)}
		if got != [3]bool{tc.ready, tc.stalled, tc.reconciling} {
			t.Errorf("%s: ready, stalled, reconciling = %v", tc.reason, got)
		}
		if after := Requeue(ptr(int32(120)), o, 10*time.Minute, 0); after != tc.after {
			t.Errorf("%s: requeue after %s, want %s", tc.reason, after, tc.after)
		}
	}
}

func TestInterval(t *testing.T) {
	for _, c := range []struct {
		s    *int32
		u    float64
		want time.Duration
	}{
		{nil, 0, 300 * time.Second},
		{ptr(int32(10)), 0, 60 * time.Second},
		{ptr(int32(120)), 0.5, 126 * time.Second},
		{ptr(int32(60)), 0.999, 65990 * time.Millisecond},
	} {
		if got := Interval(c.s, 0, c.u); got.Round(10*time.Millisecond) != c.want {
			t.Errorf("%v %v: %v, want %v", c.s, c.u, got, c.want)
		}
	}
}

func TestFailedTags(t *testing.T) {
	obj := map[string]any{"status": map[string]any{
		"upgradeHistory": []any{
			map[string]any{"image": "ghcr.io/hanzoai/cloud:v1.2.0", "result": "RolledBack"},
			map[string]any{"image": "ghcr.io/hanzoai/cloud:v1.1.0", "result": "Succeeded"},
			map[string]any{"image": "ghcr.io/hanzoai/cloud:v1.3.0", "result": "PreflightFailed"},
			map[string]any{"image": "ghcr.io/other/db:v9", "result": "RolledBack"},
			// a tag pinned by digest failed as its tag
			map[string]any{"image": "ghcr.io/hanzoai/cloud:v1.5.0@sha256:" + strings.Repeat("ab", 32), "result": "RolledBack"},
			map[string]any{"image": "ghcr.io/hanzoai/cloud@sha256:" + strings.Repeat("cd", 32), "result": "RolledBack"},
		},
		"upgrade": map[string]any{"phase": "Failed", "targetImage": "ghcr.io/hanzoai/cloud:v1.4.0"},
	}}
	got := FailedTags(obj, normalizeRepo("ghcr.io/hanzoai/cloud"))
	if strings.Join(got, " ") != "v1.2.0 v1.3.0 v1.5.0 v1.4.0" {
		t.Fatalf("%v", got)
	}
	p, _ := ParsePolicy("")
	sel, err := Select(p, "v1.1.0", []string{"v1.2.0", "v1.3.0", "v1.4.0", "v1.5.0"}, got)
	if err != nil || sel.Tag != "" || sel.Failed != 4 {
		t.Fatalf("%+v %v", sel, err)
	}
}
