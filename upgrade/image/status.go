package image

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Condition reasons of an ImageUpdate (the registry's, kinds/condition); Class gives each
// its class.
const (
	ReasonNoNewTag            = condition.ReasonNoNewTag
	ReasonPushed              = condition.ReasonPushed
	ReasonPushRejected        = condition.ReasonPushRejected
	ReasonRegistryError       = condition.ReasonRegistryError
	ReasonNoMatch             = condition.ReasonNoMatch
	ReasonTagShapeMissing     = condition.ReasonTagShapeMissing
	ReasonCurrentNotSemver    = condition.ReasonCurrentNotSemver
	ReasonInvalidSpec         = condition.ReasonInvalidSpec
	ReasonCredentialsError    = condition.ReasonCredentialsError
	ReasonGitError            = condition.ReasonGitError
	ReasonForeignFile         = condition.ReasonForeignFile
	ReasonNamespaceUnreadable = condition.ReasonNamespaceUnreadable
)

// classes: what each reason means. The file in git, a Secret and a Namespace's labels wake
// no ImageUpdate, so what waits on them is Blocked (looked at again at the interval); only
// a spec that does not parse is Terminal.
var classes = map[string]condition.Class{
	ReasonNoNewTag:            condition.Ready,
	ReasonPushed:              condition.Ready,
	ReasonTagShapeMissing:     condition.Idle,
	ReasonPushRejected:        condition.Transient,
	ReasonRegistryError:       condition.Transient,
	ReasonGitError:            condition.Transient,
	ReasonNamespaceUnreadable: condition.Transient,
	ReasonNoMatch:             condition.Blocked,
	ReasonCurrentNotSemver:    condition.Blocked,
	ReasonCredentialsError:    condition.Blocked,
	ReasonForeignFile:         condition.Blocked,
	ReasonInvalidSpec:         condition.Terminal,
	// kinds.Tenancy's refusals (kinds.TenancyError is Blocked)
	kinds.ReasonNamespaceHasNoOrg: condition.Blocked,
	kinds.ReasonOrgMismatch:       condition.Blocked,
	kinds.ReasonInvalidOrg:        condition.Blocked,
	kinds.ReasonNamespaceMismatch: condition.Blocked,
}

// Class is the class of an outcome's reason; an unknown reason is Transient.
func Class(reason string) condition.Class {
	if c, ok := classes[reason]; ok {
		return c
	}
	return condition.Transient
}

// Outcome is what one run of an ImageUpdate observed and did; StatusOf turns it into status.
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

// StatusOf computes the next status from the previous one and an outcome: the conditions
// of its class (condition.Verdict), phase Degraded when Stalled and Running otherwise, latestTag, and the push fields only when a
// push happened. It is pure; now stamps changed conditions and a push.
func StatusOf(prev v1.ImageUpdateStatus, generation int64, o Outcome, now time.Time) v1.ImageUpdateStatus {
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
	v := condition.Verdict{Class: Class(o.Reason), Reason: o.Reason, Message: o.Message}
	next.Conditions = v.Conditions(next.Conditions, generation, metav1.NewTime(now))
	next.Phase = v1.PhaseRunning
	if v.Class.Stalled() {
		next.Phase = v1.PhaseDegraded
	}
	return next
}

// Requeue is when to run o's ImageUpdate again: the interval, the registry's Retry-After
// when longer after a Transient failure, never for a spec that does not parse (its change
// wakes the controller). u is the jitter's draw.
func Requeue(seconds *int32, o Outcome, retryAfter time.Duration, u float64) time.Duration {
	every := Interval(seconds, 0, u)
	return Class(o.Reason).After(condition.Intervals{Retry: max(every, retryAfter), Progress: every, Resync: every})
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
