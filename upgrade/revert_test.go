package upgrade

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

func TestRevertDue(t *testing.T) {
	failed := func(revert string) *v1.UpgradeStatus {
		return &v1.UpgradeStatus{TargetImage: imgB, Phase: string(Failed), Message: "auto-rolled-back to last-good " + imgA, RevertCommit: revert}
	}
	cases := []struct {
		name         string
		d            Decision
		asks, fromGt bool
		want         bool
	}{
		{"failed, asked, from git", Decision{Upgrade: failed(""), LastGood: imgA}, true, true, true},
		{"not asked", Decision{Upgrade: failed(""), LastGood: imgA}, false, true, false},
		{"not from git: never", Decision{Upgrade: failed(""), LastGood: imgA}, true, false, false},
		{"already reverted for this failure", Decision{Upgrade: failed("abc123"), LastGood: imgA}, true, true, false},
		{"no last good image (halted)", Decision{Upgrade: failed("")}, true, true, false},
		{"last good is the failed target", Decision{Upgrade: failed(""), LastGood: imgB}, true, true, false},
		{"still rolling back", Decision{Upgrade: &v1.UpgradeStatus{TargetImage: imgB, Phase: string(RollingBack)}, LastGood: imgA}, true, true, false},
		{"stable", Decision{LastGood: imgA}, true, true, false},
	}
	for _, c := range cases {
		got := RevertDue(c.d, c.asks, c.fromGt)
		if (got != nil) != c.want {
			t.Errorf("%s: RevertDue = %+v, want due %v", c.name, got, c.want)
			continue
		}
		if got != nil && (got.Image != imgA || got.Failed != imgB) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

// TestRevertOncePerFailure: a rolled-back upgrade reaches Failed and a revert is due; once
// the shell records the commit, replaying the same observations (a restart) plans no second
// revert; the revert applied (spec back at lastGood) leaves the machine Stable.
func TestRevertOncePerFailure(t *testing.T) {
	o := Observed{Name: "web", Desired: imgB, Running: imgA, Healthy: true, LastGood: imgA,
		Upgrade: &v1.UpgradeStatus{TargetImage: imgB, Phase: string(RollingBack), StartedAt: tp(t0), DeadlineAt: tp(t0.Add(time.Hour)), Message: "the candidate is crash-looping; rolling back to " + imgA}}
	d := Plan(o, cfgNoPF, t0.Add(time.Minute))
	rv := RevertDue(d, true, true)
	if d.Phase() != Failed || rv == nil {
		t.Fatalf("phase %s, revert %+v", d.Phase(), rv)
	}
	msg := rv.Message("Service", "apps", "web")
	for _, want := range []string{"upgrade: revert apps/web to " + imgA + "\n\n", "to " + imgB + " failed: the candidate is crash-looping", "Production runs " + imgA} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	rec := d.Upgrade.DeepCopy()
	rec.RevertCommit = "0badc0ffee"
	o2 := Observed{Name: "web", Desired: imgB, Running: imgA, Healthy: true, LastGood: imgA, Upgrade: rec, History: d.History}
	for i := 0; i < 3; i++ {
		d2 := Plan(o2, cfgNoPF, t0.Add(time.Duration(2+i)*time.Minute))
		if RevertDue(d2, true, true) != nil || d2.Upgrade.RevertCommit != "0badc0ffee" {
			t.Fatalf("replay %d: a second revert is due or the record was lost: %+v", i, d2.Upgrade)
		}
	}
	o2.Desired = imgA // the sweep applied the revert commit
	if d3 := Plan(o2, cfgNoPF, t0.Add(5*time.Minute)); d3.Phase() != Stable || d3.Image != imgA || d3.Record != nil {
		t.Fatalf("after the revert: phase %s image %s record %+v", d3.Phase(), d3.Image, d3.Record)
	}
}
