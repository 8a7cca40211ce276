package image

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Condition reasons of an ImageUpdate.
const (
	ReasonNoNewTag         = "NoNewTag"         // the file is at the newest allowed tag
	ReasonPushed           = "Pushed"           // a commit with the new tag was pushed
	ReasonPushRejected     = "PushRejected"     // the push lost every retry to other writers
	ReasonRegistryError    = "RegistryError"    // listing tags failed (outage, 401, 429)
	ReasonNoMatch          = "NoMatch"          // the file has no site for the repository
	ReasonTagShapeMissing  = "TagShapeMissing"  // newer versions exist, none in the file's shape
	ReasonCurrentNotSemver = "CurrentNotSemver" // the file's tag cannot be ordered
	ReasonInvalidSpec      = "InvalidSpec"      // policy, repository or path does not parse
	ReasonCredentialsError = "CredentialsError" // a named Secret is missing or malformed
	ReasonGitError         = "GitError"         // reading or writing the repository failed
	ReasonForeignFile      = "ForeignFile"      // the file declares no object of the CR's namespace
	// ReasonNamespaceUnreadable: the CR's Namespace could not be read (tenancy is unknown).
	ReasonNamespaceUnreadable = "NamespaceUnreadable"
)

// tenancyReason: the reasons of kinds.Tenancy's refusals.
func tenancyReason(reason string) bool {
	switch reason {
	case kinds.ReasonNamespaceHasNoOrg, kinds.ReasonOrgMismatch, kinds.ReasonInvalidOrg, kinds.ReasonNamespaceMismatch:
		return true
	}
	return false
}

// Outcome is what one run of an ImageUpdate observed and did; Summarize turns it into status.
type Outcome struct {
	Reason  string
	Message string
	// Current is the tag the file held; Latest the newest tag the policy allows (Current
	// when nothing is newer).
	Current, Latest string
	// Pushed is set when a commit was pushed.
	Pushed *Push
}

// Push describes a pushed commit.
type Push struct {
	Tag, Commit string
	At          time.Time
}

// stalled reports reasons that need a person: the spec, a Secret or the file must change.
func stalled(reason string) bool {
	switch reason {
	case ReasonNoMatch, ReasonCurrentNotSemver, ReasonInvalidSpec, ReasonCredentialsError, ReasonForeignFile:
		return true
	}
	return tenancyReason(reason)
}

// ready reports reasons that mean the file is where the policy wants it.
func ready(reason string) bool { return reason == ReasonNoNewTag || reason == ReasonPushed }

// Summarize computes the next status from the previous one and an outcome: Ready and
// Stalled conditions, phase Running or Degraded, latestTag, and the push fields only when a
// push happened. It is pure; now stamps changed conditions and a push.
func Summarize(prev v1.ImageUpdateStatus, generation int64, o Outcome, now time.Time) v1.ImageUpdateStatus {
	next := *prev.DeepCopy()
	next.ObservedGeneration = generation
	next.Message = o.Message
	if o.Latest != "" {
		next.LatestTag = o.Latest
	} else if o.Current != "" {
		next.LatestTag = o.Current
	}
	if o.Pushed != nil {
		t := metav1.NewTime(o.Pushed.At)
		next.LastPushedTag, next.LastCommit, next.LastPushTime = o.Pushed.Tag, o.Pushed.Commit, &t
	}
	mt := metav1.NewTime(now)
	set := func(typ string, st metav1.ConditionStatus) {
		meta.SetStatusCondition(&next.Conditions, metav1.Condition{Type: typ, Status: st, Reason: o.Reason,
			Message: o.Message, ObservedGeneration: generation, LastTransitionTime: mt})
	}
	if ready(o.Reason) {
		set("Ready", metav1.ConditionTrue)
	} else {
		set("Ready", metav1.ConditionFalse)
	}
	if stalled(o.Reason) {
		set("Stalled", metav1.ConditionTrue)
		next.Phase = v1.PhaseDegraded
	} else {
		meta.RemoveStatusCondition(&next.Conditions, "Stalled")
		next.Phase = v1.PhaseRunning
	}
	return next
}

// Interval is the wait until the next run: intervalSeconds (300 when unset, never under 60)
// plus up to 10% jitter from u in [0, 1), or the registry's Retry-After when longer.
func Interval(seconds *int32, retryAfter time.Duration, u float64) time.Duration {
	s := int32(300)
	if seconds != nil {
		s = *seconds
	}
	s = max(s, 60)
	d := time.Duration(s) * time.Second
	d += time.Duration(u * float64(d) / 10)
	return max(d, retryAfter)
}
