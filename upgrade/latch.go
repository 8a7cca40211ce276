package upgrade

import (
	"fmt"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// ReasonLatchedMachineOff is the reason of the UpgradeLatched condition: the machine is off
// (--upgrade-fsm, or the CR's own gate) yet the CR stays on its last good image because its
// last upgrade failed and its spec has not changed since.
const ReasonLatchedMachineOff = "UpgradeFSMOffLatchKept"

// Latch is what the closed gate sees of a CR's failed upgrade.
type Latch struct {
	// MachineOn: the machine runs for this CR (both gates open); Plan decides then, not this.
	MachineOn bool
	// Desired is the image the spec asks for (repository:tag).
	Desired string
	// LastGood is status.lastGoodImage.
	LastGood string
	// Upgrade is status.upgrade; nil is Stable.
	Upgrade *v1.UpgradeStatus
	// Generation is the CR's metadata.generation; LatchedGeneration is the generation the
	// machine last saw the latch at (the observedGeneration of its UpgradeFailed or
	// UpgradeLatched condition), 0 when unknown (then only the image decides).
	Generation, LatchedGeneration int64
}

// Hold is the decision to keep a latched CR on its last good image with the machine off.
type Hold struct {
	// Image is the image production keeps running (lastGood); Failed is the one that failed.
	Image, Failed string
	Message       string
}

// HoldWhenOff decides, for a CR the upgrade machine does not run for (nil when it does), whether production stays
// on lastGood: only when the last upgrade failed (Failed, or RollingBack on its way there), the
// spec still names the image that failed and the spec did not change since the latch. Any spec
// change (a new image, or any edit that bumps the generation) releases it: spec.image is then
// applied directly, as the closed gate always does. nil is release.
func HoldWhenOff(l Latch) *Hold {
	u := l.Upgrade
	if l.MachineOn || u == nil || (Phase(u.Phase) != Failed && Phase(u.Phase) != RollingBack) {
		return nil
	}
	if l.LastGood == "" || l.LastGood == l.Desired || u.TargetImage != l.Desired {
		return nil
	}
	if l.LatchedGeneration != 0 && l.Generation != l.LatchedGeneration {
		return nil
	}
	why := u.Message
	if why == "" {
		why = string(u.Phase)
	}
	return &Hold{Image: l.LastGood, Failed: u.TargetImage,
		Message: fmt.Sprintf("the upgrade machine is off, but the upgrade to %s failed (%s): production stays on %s until the spec changes", u.TargetImage, why, l.LastGood)}
}
