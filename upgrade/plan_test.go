package upgrade

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

const (
	imgA = "ghcr.io/x/app:v1"
	imgB = "ghcr.io/x/app:v2"
	imgC = "ghcr.io/x/app:v3"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func tp(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

var (
	cfgPF   = Config{Preflight: true, PreflightDeadline: 300 * time.Second, RolloutDeadline: 300 * time.Second, Soak: 60 * time.Second}
	cfgNoPF = Config{Preflight: false, PreflightDeadline: 300 * time.Second, RolloutDeadline: 300 * time.Second, Soak: 60 * time.Second}
)

func inflight(phase Phase, target string, deadline time.Time) *v1.UpgradeStatus {
	return &v1.UpgradeStatus{TargetImage: target, Phase: string(phase), StartedAt: tp(t0), DeadlineAt: tp(deadline)}
}

// TestPlanTransitions is the transition table of reference-loop-behaviors §3.2, one row per
// named case of the reference implementation (and the cases this one adds).
func TestPlanTransitions(t *testing.T) {
	later := t0.Add(10 * time.Second)
	type want struct {
		image    string
		phase    Phase
		lastGood string
		result   string // the record's result, "" for none
		event    string
	}
	cases := []struct {
		name string
		o    Observed
		c    Config
		now  time.Time
		want want
	}{
		{"initial_create_when_nothing_running", Observed{Desired: imgA}, cfgPF, t0,
			want{image: imgA}},
		{"adopts_healthy_running_as_baseline", Observed{Desired: imgB, Running: imgA, Healthy: true}, cfgPF, t0,
			want{image: imgA, lastGood: imgA, event: ReasonBaselineAdopted}},
		{"no_baseline_no_disrupt_when_unhealthy", Observed{Desired: imgB, Running: imgA}, cfgPF, t0,
			want{image: imgA}},
		{"stable_keeps_baseline_current", Observed{Desired: imgA, Running: imgA, LastGood: imgA, Healthy: true}, cfgPF, t0,
			want{image: imgA, lastGood: imgA}},
		{"stable_unhealthy_does_not_roll_back_what_it_did_not_flip", Observed{Desired: imgA, Running: imgA, LastGood: imgA}, cfgPF, t0,
			want{image: imgA, lastGood: imgA}},
		{"start_upgrade_pre_flights_and_does_not_flip", Observed{Name: "web", Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true}, cfgPF, t0,
			want{image: imgA, phase: Preflighting, lastGood: imgA, event: ReasonStarted}},
		{"start_without_preflight_flips_into_rolling", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true}, cfgNoPF, t0,
			want{image: imgB, phase: Rolling, lastGood: imgA, event: ReasonStarted}},
		{"desired_equals_last_good_converges_without_preflight", Observed{Desired: imgA, Running: imgB, LastGood: imgA, Healthy: true}, cfgPF, t0,
			want{image: imgA, lastGood: imgA}},
		{"creating_with_a_baseline_recreates_the_baseline", Observed{Desired: imgB, LastGood: imgA}, cfgPF, t0,
			want{image: imgA, lastGood: imgA}},
		{"candidate_already_running_is_rolled_not_marked_good", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true}, cfgPF, t0,
			want{image: imgB, phase: Rolling, lastGood: imgA, event: ReasonStarted}},
		{"preflight_ready_flips_to_rolling", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: BootReady,
			Upgrade: inflight(Preflighting, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgB, phase: Rolling, lastGood: imgA, event: ReasonPreflightPassed}},
		{"preflight_failed_never_flips_and_is_terminal", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: BootFailed,
			Upgrade: inflight(Preflighting, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Failed, lastGood: imgA, result: ResultPreflightFailed, event: ReasonPreflightFailed}},
		{"preflight_timeout_fails_closed", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: Booting,
			Upgrade: inflight(Preflighting, imgB, t0.Add(30*time.Second))}, cfgPF, t0.Add(31 * time.Second),
			want{image: imgA, phase: Failed, lastGood: imgA, result: ResultPreflightFailed, event: ReasonPreflightFailed}},
		{"preflight_booting_within_deadline_waits", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: Booting,
			Upgrade: inflight(Preflighting, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Preflighting, lastGood: imgA}},
		{"unparseable_preflight_deadline_fails_closed", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: Booting,
			Upgrade: &v1.UpgradeStatus{TargetImage: imgB, Phase: string(Preflighting)}}, cfgPF, later,
			want{image: imgA, phase: Failed, lastGood: imgA, result: ResultPreflightFailed, event: ReasonPreflightFailed}},
		{"rolling_success_marks_last_good_and_clears", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, Config{RolloutDeadline: 300 * time.Second}, later,
			want{image: imgB, lastGood: imgB, result: ResultSucceeded, event: ReasonSucceeded}},
		{"rolling_crashloop_auto_rolls_back", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Crashloop: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: RollingBack, lastGood: imgA, event: ReasonRollingBack}},
		{"rolling_deadline_auto_rolls_back", Observed{Desired: imgB, Running: imgB, LastGood: imgA,
			Upgrade: inflight(Rolling, imgB, t0.Add(30*time.Second))}, cfgPF, t0.Add(30 * time.Second),
			want{image: imgA, phase: RollingBack, lastGood: imgA, event: ReasonRollingBack}},
		{"rolling_within_deadline_holds_on_candidate", Observed{Desired: imgB, Running: imgB, LastGood: imgA,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgB, phase: Rolling, lastGood: imgA}},
		{"rolling_healthy_but_unsoaked_holds_and_anchors_soak", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgB, phase: Rolling, lastGood: imgA}},
		{"rolling_soak_complete_succeeds_and_marks_last_good", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: withStable(inflight(Rolling, imgB, t0.Add(300*time.Second)), t0)}, cfgPF, t0.Add(60 * time.Second),
			want{image: imgB, lastGood: imgB, result: ResultSucceeded, event: ReasonSucceeded}},
		{"rolling_crash_during_soak_rolls_back_and_never_marks_good", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true, Crashloop: true,
			Upgrade: withStable(inflight(Rolling, imgB, t0.Add(300*time.Second)), t0)}, cfgPF, t0.Add(59 * time.Second),
			want{image: imgA, phase: RollingBack, lastGood: imgA, event: ReasonRollingBack}},
		{"rolling_healthy_past_deadline_soaks_rather_than_rolling_back", Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: withStable(inflight(Rolling, imgB, t0.Add(30*time.Second)), t0.Add(20*time.Second))}, cfgPF, t0.Add(40 * time.Second),
			want{image: imgB, phase: Rolling, lastGood: imgA}},
		{"rolling_crashloop_with_no_baseline_halts_terminal_not_rollback", Observed{Desired: imgB, Running: imgA, Crashloop: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Failed, result: ResultRolledBack, event: ReasonHaltedNoBaseline}},
		{"rollingback_with_no_baseline_halts_terminal_not_onto_candidate", Observed{Desired: imgB, Running: imgA,
			Upgrade: inflight(RollingBack, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Failed, result: ResultRolledBack, event: ReasonHaltedNoBaseline}},
		{"unparseable_rolling_deadline_is_treated_as_expired", Observed{Desired: imgB, Running: imgB, LastGood: imgA,
			Upgrade: &v1.UpgradeStatus{TargetImage: imgB, Phase: string(Rolling), DeadlineAt: &metav1.Time{}}}, cfgPF, later,
			want{image: imgA, phase: RollingBack, lastGood: imgA, event: ReasonRollingBack}},
		{"rollback_completes_when_last_good_healthy", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true,
			Upgrade: inflight(RollingBack, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Failed, lastGood: imgA, result: ResultRolledBack, event: ReasonRolledBack}},
		{"rollback_holds_last_good_until_healthy", Observed{Desired: imgB, Running: imgB, LastGood: imgA,
			Upgrade: inflight(RollingBack, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: RollingBack, lastGood: imgA}},
		{"rollback_past_its_deadline_keeps_last_good_and_says_so", Observed{Desired: imgB, Running: imgB, LastGood: imgA,
			Upgrade: inflight(RollingBack, imgB, t0.Add(30*time.Second))}, cfgPF, t0.Add(31 * time.Second),
			want{image: imgA, phase: RollingBack, lastGood: imgA, event: ReasonRollbackOverdue}},
		{"failed_terminal_holds_on_last_good_and_never_reattempts", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: BootReady,
			Upgrade: inflight(Failed, imgB, t0)}, cfgPF, later,
			want{image: imgA, phase: Failed, lastGood: imgA}},
		{"unknown_phase_is_held_as_failed", Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true,
			Upgrade: inflight("Sideways", imgB, t0)}, cfgPF, later,
			want{image: imgA, phase: Failed, lastGood: imgA, event: ReasonFailedPhaseRepair}},
		{"new_image_supersedes_a_failed_attempt", Observed{Name: "web", Desired: imgC, Running: imgA, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Failed, imgB, t0)}, cfgPF, later,
			want{image: imgA, phase: Preflighting, lastGood: imgA, event: ReasonStarted}},
		{"retarget_mid_preflight_supersedes_and_records", Observed{Name: "web", Desired: imgC, Running: imgA, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Preflighting, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Preflighting, lastGood: imgA, result: ResultSuperseded, event: ReasonStarted}},
		{"retarget_to_last_good_mid_rolling_converges_back", Observed{Desired: imgA, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, lastGood: imgA, result: ResultSuperseded, event: ReasonSuperseded}},
		{"retarget_mid_rolling_pre_flights_on_last_good_not_the_unproven_candidate", Observed{Name: "web", Desired: imgC, Running: imgB, LastGood: imgA, Healthy: true,
			Upgrade: inflight(Rolling, imgB, t0.Add(300*time.Second))}, cfgPF, later,
			want{image: imgA, phase: Preflighting, lastGood: imgA, result: ResultSuperseded, event: ReasonStarted}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Plan(tc.o, tc.c, tc.now)
			got := want{image: d.Image, phase: d.Phase(), lastGood: d.LastGood}
			if d.Record != nil {
				got.result = d.Record.Result
			}
			if d.Event != nil {
				got.event = d.Event.Reason
			}
			if got != tc.want {
				t.Errorf("Plan() = %+v (%s), want %+v", got, d.Reason, tc.want)
			}
			if d.Image == "" {
				t.Error("Plan() left the image empty")
			}
			if d.WantPreflight() != (d.Phase() == Preflighting) {
				t.Error("WantPreflight disagrees with the phase")
			}
			if (d.Record != nil) != (len(d.History) == len(tc.o.History)+1) {
				t.Errorf("a record must extend the history by one: record=%v history=%d", d.Record, len(d.History))
			}
		})
	}
}

func withStable(u *v1.UpgradeStatus, at time.Time) *v1.UpgradeStatus {
	u.StableSince = tp(at)
	return u
}

func TestPlanPreflightStartNamesAndDeadlines(t *testing.T) {
	o := Observed{Name: "web", Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true}
	d := Plan(o, Config{Preflight: true, PreflightDeadline: 5 * time.Second}, t0.Add(300*time.Millisecond))
	u := d.Upgrade
	n := NamesOf("web", imgB)
	if u.PreflightPod != n.Pod || u.PreflightClone != n.Clone || u.PreflightSnapshot != n.Snapshot {
		t.Errorf("names = %q %q %q, want %+v", u.PreflightPod, u.PreflightClone, u.PreflightSnapshot, n)
	}
	// deadline_is_floored, and times are whole seconds (what the apiserver stores).
	if want := t0.Add(MinDeadline); !u.DeadlineAt.Time.Equal(want) {
		t.Errorf("deadline = %v, want the 30 s floor %v", u.DeadlineAt, want)
	}
	if !u.StartedAt.Time.Equal(t0) {
		t.Errorf("startedAt = %v, want %v truncated to the second", u.StartedAt, t0)
	}
	// The flip keeps startedAt.
	d2 := Plan(Observed{Name: "web", Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Upgrade: u, Preflight: BootReady},
		Config{Preflight: true, RolloutDeadline: 0}, t0.Add(10*time.Second))
	if !d2.Upgrade.StartedAt.Time.Equal(t0) || !d2.Upgrade.DeadlineAt.Time.Equal(t0.Add(10*time.Second+MinDeadline)) {
		t.Errorf("rolling: startedAt %v deadline %v", d2.Upgrade.StartedAt, d2.Upgrade.DeadlineAt)
	}
}

func TestPlanSoakAnchor(t *testing.T) {
	u := inflight(Rolling, imgB, t0.Add(300*time.Second))
	o := Observed{Desired: imgB, Running: imgB, LastGood: imgA, Healthy: true, Upgrade: u}
	d := Plan(o, cfgPF, t0.Add(5*time.Second))
	if d.Upgrade.StableSince == nil || !d.Upgrade.StableSince.Time.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("soak anchor = %v, want now", d.Upgrade.StableSince)
	}
	// rolling_unhealthy_resets_the_soak_anchor
	o.Upgrade, o.Healthy = d.Upgrade, false
	d = Plan(o, cfgPF, t0.Add(30*time.Second))
	if d.Upgrade.StableSince != nil || d.Phase() != Rolling {
		t.Errorf("unhealthy: stableSince %v phase %s, want cleared, Rolling", d.Upgrade.StableSince, d.Phase())
	}
	// A stableSince in the future (corrupt) is re-anchored at now, never credited.
	o.Upgrade, o.Healthy = withStable(u.DeepCopy(), t0.Add(time.Hour)), true
	d = Plan(o, cfgPF, t0.Add(30*time.Second))
	if d.Phase() != Rolling || !d.Upgrade.StableSince.Time.Equal(t0.Add(30*time.Second)) {
		t.Errorf("future anchor: phase %s stableSince %v", d.Phase(), d.Upgrade.StableSince)
	}
}

func TestHistoryIsBounded(t *testing.T) {
	var h []v1.UpgradeRecord
	for i := range 25 {
		h = AppendHistory(h, v1.UpgradeRecord{Image: string(rune('a' + i)), Result: ResultSucceeded})
	}
	if len(h) != MaxHistory || h[0].Image != string(rune('a'+15)) || h[9].Image != string(rune('a'+24)) {
		t.Errorf("history = %d records from %q to %q", len(h), h[0].Image, h[len(h)-1].Image)
	}
	// Through Plan too: a full history stays full and ends with the new record.
	o := Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true, Preflight: BootFailed, History: h,
		Upgrade: inflight(Preflighting, imgB, t0.Add(time.Hour))}
	d := Plan(o, cfgPF, t0)
	if len(d.History) != MaxHistory || d.History[MaxHistory-1].Result != ResultPreflightFailed || len(o.History) != MaxHistory || o.History[9].Image != h[9].Image {
		t.Errorf("plan history = %d, last %+v", len(d.History), d.History[len(d.History)-1])
	}
}

func TestConfigFrom(t *testing.T) {
	c := ConfigFrom(nil, true)
	if c != (Config{Preflight: true, PreflightDeadline: DefaultDeadline, RolloutDeadline: DefaultDeadline, Soak: DefaultSoak}) {
		t.Errorf("defaults = %+v", c)
	}
	c = ConfigFrom(&v1.UpgradePolicySpec{Preflight: ptr.To(false), SoakSeconds: ptr.To[int32](0), RolloutDeadlineSeconds: ptr.To[int32](5)}, true)
	if c.Preflight || c.Soak != 0 || c.RolloutDeadline != 5*time.Second {
		t.Errorf("explicit = %+v", c)
	}
	// The floor is applied where deadlines are set (deadline_is_floored).
	d := Plan(Observed{Desired: imgB, Running: imgA, LastGood: imgA, Healthy: true}, c, t0)
	if !d.Upgrade.DeadlineAt.Time.Equal(t0.Add(MinDeadline)) {
		t.Errorf("rollout deadline %v, want floored at 30 s", d.Upgrade.DeadlineAt)
	}
}

func TestNames(t *testing.T) {
	a, b := NamesOf("web", imgA), NamesOf("web", imgB)
	if a != NamesOf("web", imgA) || a.Hash == b.Hash || len(a.Hash) != 8 {
		t.Errorf("target hash must be stable and distinct: %+v %+v", a, b)
	}
	if a.Pod != "web-preflight-"+a.Hash || a.Clone != a.Pod+"-clone" || a.Snapshot != a.Pod+"-snap" || a.Egress != a.Pod+"-egress" {
		t.Errorf("names = %+v", a)
	}
	long := NamesOf("a-very-long-service-name-that-goes-on-and-on-and-on-x", imgA)
	seen := map[string]bool{}
	for _, n := range []string{long.Pod, long.Clone, long.Snapshot, long.Egress} {
		if len(n) > 63 || n[len(n)-1] == '-' || seen[n] {
			t.Errorf("name %q (%d) is not a distinct DNS label", n, len(n))
		}
		seen[n] = true
	}
}
