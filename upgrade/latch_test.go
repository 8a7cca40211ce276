package upgrade_test

import (
	"testing"

	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/upgrade"
)

func TestHoldWhenOff(t *testing.T) {
	const good, bad, next = "ghcr.io/x/app:v1", "ghcr.io/x/app:v2", "ghcr.io/x/app:v3"
	failed := &v1.UpgradeStatus{TargetImage: bad, Phase: string(upgrade.Failed), Message: "the candidate is crash-looping"}
	for _, tc := range []struct {
		name  string
		latch upgrade.Latch
		hold  string // the image held; "" is release
	}{
		{"latched Failed, same spec: lastGood kept", upgrade.Latch{Desired: bad, LastGood: good, Upgrade: failed, Generation: 4, LatchedGeneration: 4}, good},
		{"latched Failed, generation unknown: the image decides", upgrade.Latch{Desired: bad, LastGood: good, Upgrade: failed, Generation: 4}, good},
		{"rolling back: the candidate is known bad", upgrade.Latch{Desired: bad, LastGood: good, Generation: 2, LatchedGeneration: 2,
			Upgrade: &v1.UpgradeStatus{TargetImage: bad, Phase: string(upgrade.RollingBack)}}, good},
		{"machine on: Plan decides, no hold here", upgrade.Latch{MachineOn: true, Desired: bad, LastGood: good, Upgrade: failed, Generation: 4, LatchedGeneration: 4}, ""},
		{"new image in spec: released", upgrade.Latch{Desired: next, LastGood: good, Upgrade: failed, Generation: 5, LatchedGeneration: 4}, ""},
		{"same image, other spec edit: released", upgrade.Latch{Desired: bad, LastGood: good, Upgrade: failed, Generation: 5, LatchedGeneration: 4}, ""},
		{"spec back on lastGood: nothing to hold", upgrade.Latch{Desired: good, LastGood: good, Upgrade: failed, Generation: 5, LatchedGeneration: 4}, ""},
		{"no last good image: released", upgrade.Latch{Desired: bad, Upgrade: failed, Generation: 4, LatchedGeneration: 4}, ""},
		{"stable: nothing latched", upgrade.Latch{Desired: bad, LastGood: good, Generation: 4}, ""},
		{"pre-flighting when switched off: not a failure, released", upgrade.Latch{Desired: bad, LastGood: good, Generation: 4, LatchedGeneration: 4,
			Upgrade: &v1.UpgradeStatus{TargetImage: bad, Phase: string(upgrade.Preflighting)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := upgrade.HoldWhenOff(tc.latch)
			got := ""
			if h != nil {
				got = h.Image
				if h.Failed != bad || h.Message == "" {
					t.Errorf("hold %+v: want the failed image %s named and a message", h, bad)
				}
			}
			if got != tc.hold {
				t.Errorf("held %q, want %q", got, tc.hold)
			}
		})
	}
}
