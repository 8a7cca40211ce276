package upgrade

import (
	"fmt"
	"strings"
)

// Telling git the truth (spec.upgradePolicy.revertInGit): when an upgrade of a CR applied
// from the universe repository ends Failed, the repository still names the failed image. The
// shell then commits the image back to lastGood in the CR's file, once per failure: the
// commit is recorded in status.upgrade.revertCommit, and a repeat after a restart finds the
// file already at lastGood (no second commit).

// GitRevert is the commit due after a failed upgrade.
type GitRevert struct {
	// Image is what the file must name: the last good image production runs.
	Image string
	// Failed is the image the upgrade failed on (the file's current one).
	Failed string
	// Reason is the failure: the message of the upgrade's record in status.upgradeHistory,
	// else status.upgrade.message.
	Reason string
}

// RevertDue returns the revert to commit for decision d, nil when none is due: the upgrade is
// latched Failed, the CR asks (revertInGit) and came from the git sweep (fromGit), a last good
// image exists and differs from the failed target, and no revert is recorded for this
// failure yet.
func RevertDue(d Decision, asks, fromGit bool) *GitRevert {
	u := d.Upgrade
	switch {
	case !asks || !fromGit || u == nil || Phase(u.Phase) != Failed:
		return nil
	case u.RevertCommit != "" || d.LastGood == "" || d.LastGood == u.TargetImage:
		return nil
	}
	reason := u.Message
	for i := len(d.History) - 1; i >= 0; i-- { // the record says why (crash-loop, deadline, pre-flight)
		if h := d.History[i]; h.Image == u.TargetImage && h.Result != ResultSucceeded {
			if h.Message != "" {
				reason = h.Message
			}
			break
		}
	}
	return &GitRevert{Image: d.LastGood, Failed: u.TargetImage, Reason: reason}
}

// Message is the commit message of the revert of kind namespace/name: the subject names
// both images, the body the failure.
func (g GitRevert) Message(kind, namespace, name string) string {
	reason := strings.TrimSpace(g.Reason)
	if reason == "" {
		reason = "the upgrade failed"
	}
	return fmt.Sprintf("upgrade: revert %s/%s to %s\n\nThe upgrade of %s %s/%s to %s failed: %s.\n"+
		"Production runs %s; this commit makes the repository say so (spec.upgradePolicy.revertInGit).\n",
		namespace, name, g.Image, kind, namespace, name, g.Failed, strings.TrimSuffix(reason, "."), g.Image)
}
