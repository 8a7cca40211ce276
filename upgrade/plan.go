package upgrade

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Phase is the state of an upgrade. Stable is the absence of status.upgrade.
type Phase string

// The phases (reference-loop-behaviors §3.2).
const (
	Stable       Phase = ""
	Preflighting Phase = "Preflighting"
	Rolling      Phase = "Rolling"
	RollingBack  Phase = "RollingBack"
	Failed       Phase = "Failed"
)

// The results of a finished upgrade, as status.upgradeHistory records them.
const (
	ResultSucceeded       = "Succeeded"
	ResultRolledBack      = "RolledBack"
	ResultPreflightFailed = "PreflightFailed"
	ResultSuperseded      = "Superseded"
)

// Defaults and floors of the policy (wire-contract §2.5).
const (
	DefaultDeadline = 300 * time.Second
	MinDeadline     = 30 * time.Second
	DefaultSoak     = 60 * time.Second
	// MaxHistory is how many records status.upgradeHistory keeps, the oldest dropped first.
	MaxHistory = 10
)

// Boot is what a pre-flight pod came to.
type Boot int

// The boot outcomes.
const (
	Booting Boot = iota
	BootReady
	BootFailed
)

func (b Boot) String() string {
	switch b {
	case BootReady:
		return "Ready"
	case BootFailed:
		return "Failed"
	default:
		return "Booting"
	}
}

// Observed is everything Plan decides on, read from the CR's spec and status and the live
// cluster. Nothing else is consulted, so the same Observed gives the same Decision after a
// restart.
type Observed struct {
	// Name is the CR's name (the pre-flight resources are named after it).
	Name string
	// Desired is the image the spec asks for (repository:tag).
	Desired string
	// Running is container[0]'s image of the live Deployment; empty when there is none.
	Running string
	// Healthy is DeploymentHealthy of the live Deployment.
	Healthy bool
	// LastGood is status.lastGoodImage.
	LastGood string
	// Upgrade is status.upgrade; nil is Stable.
	Upgrade *v1.UpgradeStatus
	// History is status.upgradeHistory.
	History []v1.UpgradeRecord
	// Preflight is the pre-flight pod's outcome; consulted only in Preflighting.
	Preflight Boot
	// PreflightMessage says why a pre-flight failed (the pod's reason), for the record.
	PreflightMessage string
	// Crashloop is true when a pod running the target crash-loops; consulted only in Rolling.
	Crashloop bool
}

// Config is the resolved upgrade policy.
type Config struct {
	Preflight         bool
	PreflightDeadline time.Duration
	RolloutDeadline   time.Duration
	Soak              time.Duration
}

// ConfigFrom resolves a policy: deadlines default to 300 s and are floored at 30 s, the soak
// defaults to 60 s (0 turns it off), and pre-flight defaults to stateful.
func ConfigFrom(p *v1.UpgradePolicySpec, stateful bool) Config {
	c := Config{Preflight: stateful, PreflightDeadline: DefaultDeadline, RolloutDeadline: DefaultDeadline, Soak: DefaultSoak}
	if p == nil {
		return c
	}
	if p.Preflight != nil {
		c.Preflight = *p.Preflight
	}
	c.PreflightDeadline = seconds(p.PreflightDeadlineSeconds, DefaultDeadline)
	c.RolloutDeadline = seconds(p.RolloutDeadlineSeconds, DefaultDeadline)
	if p.SoakSeconds != nil && *p.SoakSeconds >= 0 {
		c.Soak = time.Duration(*p.SoakSeconds) * time.Second
	}
	return c
}

func seconds(v *int32, def time.Duration) time.Duration {
	if v == nil {
		return def
	}
	return time.Duration(*v) * time.Second
}

// Event is a transition worth an Event on the CR.
type Event struct {
	Reason  string
	Message string
	Warning bool
}

// The Event reasons (the registry's, kinds/condition).
const (
	ReasonBaselineAdopted   = condition.ReasonUpgradeBaselineAdopted
	ReasonStarted           = condition.ReasonUpgradeStarted
	ReasonPreflightPassed   = condition.ReasonUpgradePreflightPassed
	ReasonPreflightFailed   = condition.ReasonUpgradePreflightFailed
	ReasonSucceeded         = condition.ReasonUpgradeSucceeded
	ReasonRollingBack       = condition.ReasonUpgradeRollingBack
	ReasonRolledBack        = condition.ReasonUpgradeRolledBack
	ReasonSuperseded        = condition.ReasonUpgradeSuperseded
	ReasonHaltedNoBaseline  = condition.ReasonUpgradeHaltedNoBase
	ReasonRollbackOverdue   = condition.ReasonUpgradeRollbackOverdue
	ReasonFailedPhaseRepair = condition.ReasonUpgradeStatusRepaired
)

// Decision is what the shell must do now.
type Decision struct {
	// Image is what the Deployment must run now; never empty when Desired is not.
	Image string
	// Upgrade is the next status.upgrade; nil is Stable.
	Upgrade *v1.UpgradeStatus
	// LastGood is the next status.lastGoodImage.
	LastGood string
	// History is the next status.upgradeHistory (at most MaxHistory records).
	History []v1.UpgradeRecord
	// Record is the record this decision appended, if any.
	Record *v1.UpgradeRecord
	// Event is set when this decision is a transition.
	Event *Event
	// Reason says, in a few words, why Image is what it is.
	Reason string
}

// Phase is the next phase.
func (d Decision) Phase() Phase {
	if d.Upgrade == nil {
		return Stable
	}
	return Phase(d.Upgrade.Phase)
}

// WantPreflight is true when the pre-flight resources must exist.
func (d Decision) WantPreflight() bool { return d.Phase() == Preflighting }

// Plan is the upgrade state machine: from what is observed and the policy, what the
// Deployment must run, the next status, and the record of a finished upgrade. It is pure; now
// is truncated to the second, the precision status times are stored at, so a decision
// re-derived from a stored status after a restart is the same.
//
// Invariant: while the candidate is unproven (Preflighting, RollingBack) or failed (Failed),
// Image is lastGood; the candidate runs only in Rolling, after a passed pre-flight; lastGood
// advances only after a healthy, soaked candidate.
func Plan(o Observed, c Config, now time.Time) Decision {
	now = now.UTC().Truncate(time.Second)
	p := planner{o: o, c: c, now: now}
	d := p.plan()
	d.History = o.History
	if d.Record != nil {
		d.Record.At = p.at()
		d.History = AppendHistory(o.History, *d.Record)
	}
	if d.LastGood == "" {
		d.LastGood = o.LastGood
	}
	return d
}

// AppendHistory appends r, dropping the oldest records beyond MaxHistory. h is not modified.
func AppendHistory(h []v1.UpgradeRecord, r v1.UpgradeRecord) []v1.UpgradeRecord {
	out := make([]v1.UpgradeRecord, 0, MaxHistory)
	out = append(out, h...)
	out = append(out, r)
	if len(out) > MaxHistory {
		out = out[len(out)-MaxHistory:]
	}
	return out
}

type planner struct {
	o   Observed
	c   Config
	now time.Time
}

func (p planner) at() *metav1.Time { t := metav1.NewTime(p.now); return &t }

func (p planner) after(d time.Duration) *metav1.Time {
	if d < MinDeadline {
		d = MinDeadline
	}
	t := metav1.NewTime(p.now.Add(d))
	return &t
}

// expired: an empty or zero deadline counts as expired (fail-closed).
func (p planner) expired(t *metav1.Time) bool {
	return t == nil || t.IsZero() || !p.now.Before(t.Time)
}

func (p planner) plan() Decision {
	u := p.o.Upgrade
	if u == nil {
		return p.planStable()
	}
	if p.o.Desired != u.TargetImage {
		d := p.planStable()
		if Phase(u.Phase) != Failed {
			d.Record = &v1.UpgradeRecord{Image: u.TargetImage, FromImage: p.o.LastGood, Result: ResultSuperseded,
				Message: "superseded by " + p.o.Desired}
			if d.Event == nil {
				d.Event = &Event{Reason: ReasonSuperseded, Message: fmt.Sprintf("upgrade to %s superseded by %s", u.TargetImage, p.o.Desired)}
			} else {
				d.Event.Message = fmt.Sprintf("upgrade to %s superseded; %s", u.TargetImage, d.Event.Message)
			}
		}
		return d
	}
	switch Phase(u.Phase) {
	case Preflighting:
		return p.planPreflighting(u)
	case Rolling:
		return p.planRolling(u)
	case RollingBack:
		return p.planRollingBack(u)
	case Failed:
		return p.planFailed(u, nil)
	default:
		return p.planFailed(u, &Event{Reason: ReasonFailedPhaseRepair, Warning: true,
			Message: fmt.Sprintf("status.upgrade.phase %q is not a phase; the upgrade to %s is held as Failed", u.Phase, u.TargetImage)})
	}
}

// planStable: no upgrade in flight.
func (p planner) planStable() Decision {
	o := p.o
	switch {
	case o.LastGood == "" && o.Running == "":
		return Decision{Image: o.Desired, Reason: "creating (no deployment yet)"}
	case o.LastGood == "" && o.Healthy:
		return Decision{Image: o.Running, LastGood: o.Running, Reason: "adopted the running image as the baseline",
			Event: &Event{Reason: ReasonBaselineAdopted, Message: "adopted " + o.Running + " as the last good image"}}
	case o.LastGood == "":
		return Decision{Image: o.Running, Reason: "awaiting a first healthy baseline"}
	case o.Desired == o.LastGood && o.Running == o.LastGood:
		return Decision{Image: o.LastGood, Reason: "stable"}
	case o.Desired == o.LastGood:
		return Decision{Image: o.LastGood, Reason: "converging on the last good image"}
	case o.Running == "":
		// Recreate production at what was proven; the candidate then goes through the gate.
		return Decision{Image: o.LastGood, Reason: "creating at the last good image"}
	case o.Running == o.Desired:
		// The candidate already runs (applied while the gate was closed, or a rollback had
		// not finished when the spec went back to it): it is unproven, so it is rolled like any
		// candidate: soaked before it becomes last good, rolled back if it crash-loops.
		u := &v1.UpgradeStatus{TargetImage: o.Desired, Phase: string(Rolling), StartedAt: p.at(),
			DeadlineAt: p.after(p.c.RolloutDeadline), Message: o.Desired + " already runs; proving it"}
		return Decision{Image: o.Desired, Upgrade: u, Reason: "the candidate already runs; proving it",
			Event: &Event{Reason: ReasonStarted, Message: fmt.Sprintf("upgrade %s → %s: already running, soaking before it becomes last good", o.LastGood, o.Desired)}}
	}
	return p.start()
}

func (p planner) start() Decision {
	o := p.o
	u := &v1.UpgradeStatus{TargetImage: o.Desired, StartedAt: p.at()}
	if p.c.Preflight {
		names := NamesOf(o.Name, o.Desired)
		u.Phase = string(Preflighting)
		u.DeadlineAt = p.after(p.c.PreflightDeadline)
		u.PreflightPod, u.PreflightClone, u.PreflightSnapshot = names.Pod, names.Clone, names.Snapshot
		u.Message = "pre-flighting " + o.Desired
		return Decision{Image: o.LastGood, Upgrade: u, Reason: "pre-flighting the candidate",
			Event: &Event{Reason: ReasonStarted, Message: fmt.Sprintf("upgrade %s → %s: pre-flight started", o.LastGood, o.Desired)}}
	}
	u.Phase = string(Rolling)
	u.DeadlineAt = p.after(p.c.RolloutDeadline)
	u.Message = "rolling out " + o.Desired
	return Decision{Image: o.Desired, Upgrade: u, Reason: "rolling out the candidate",
		Event: &Event{Reason: ReasonStarted, Message: fmt.Sprintf("upgrade %s → %s: rolling out (no pre-flight)", o.LastGood, o.Desired)}}
}

// hold is the image production is held on while the candidate is unproven or failed.
func (p planner) hold(target string) string {
	switch {
	case p.o.LastGood != "":
		return p.o.LastGood
	case p.o.Running != "":
		return p.o.Running // no baseline (a corrupt status): never move production
	}
	return target
}

func (p planner) planPreflighting(u *v1.UpgradeStatus) Decision {
	o := p.o
	switch {
	case o.Preflight == BootReady:
		n := u.DeepCopy()
		n.Phase, n.DeadlineAt, n.StableSince = string(Rolling), p.after(p.c.RolloutDeadline), nil
		n.PreflightPod, n.PreflightClone, n.PreflightSnapshot = "", "", ""
		n.Message = "pre-flight passed; rolling out " + u.TargetImage
		return Decision{Image: u.TargetImage, Upgrade: n, Reason: "pre-flight passed",
			Event: &Event{Reason: ReasonPreflightPassed, Message: "pre-flight of " + u.TargetImage + " passed; rolling out"}}
	case o.Preflight == BootFailed || p.expired(u.DeadlineAt):
		msg := "pre-flight failed"
		if o.Preflight != BootFailed {
			msg = "pre-flight did not become ready before its deadline"
		}
		if o.PreflightMessage != "" {
			msg += ": " + o.PreflightMessage
		}
		n := u.DeepCopy()
		n.Phase, n.Message, n.DeadlineAt = string(Failed), msg, nil
		n.PreflightPod, n.PreflightClone, n.PreflightSnapshot = "", "", ""
		return Decision{Image: p.hold(u.TargetImage), Upgrade: n, Reason: msg,
			Record: &v1.UpgradeRecord{Image: u.TargetImage, FromImage: o.LastGood, Result: ResultPreflightFailed, Message: msg},
			Event:  &Event{Reason: ReasonPreflightFailed, Warning: true, Message: u.TargetImage + ": " + msg + "; production stays on " + p.hold(u.TargetImage)}}
	}
	return Decision{Image: p.hold(u.TargetImage), Upgrade: u, Reason: "pre-flight booting"}
}

func (p planner) planRolling(u *v1.UpgradeStatus) Decision {
	o := p.o
	if !o.Crashloop && o.Running == u.TargetImage && o.Healthy {
		anchor := p.now
		if s := u.StableSince; s != nil && !s.IsZero() && !s.After(p.now) {
			anchor = s.Time
		}
		if p.now.Sub(anchor) >= p.c.Soak {
			return Decision{Image: u.TargetImage, LastGood: u.TargetImage, Reason: "upgrade succeeded",
				Record: &v1.UpgradeRecord{Image: u.TargetImage, FromImage: o.LastGood, Result: ResultSucceeded, Message: "healthy and soaked"},
				Event:  &Event{Reason: ReasonSucceeded, Message: fmt.Sprintf("upgrade %s → %s succeeded (healthy for %s)", o.LastGood, u.TargetImage, p.c.Soak)}}
		}
		n := u.DeepCopy()
		t := metav1.NewTime(anchor)
		n.StableSince = &t
		n.Message = fmt.Sprintf("healthy; soaking for %s", p.c.Soak)
		return Decision{Image: u.TargetImage, Upgrade: n, Reason: "soaking the candidate"}
	}
	if o.Crashloop || p.expired(u.DeadlineAt) {
		why := "the rollout missed its deadline"
		if o.Crashloop {
			why = "the candidate is crash-looping"
		}
		if o.LastGood == "" {
			return p.halt(u, why)
		}
		n := u.DeepCopy()
		n.Phase, n.DeadlineAt, n.StableSince = string(RollingBack), p.after(p.c.RolloutDeadline), nil
		n.Message = why + "; rolling back to " + o.LastGood
		return Decision{Image: o.LastGood, Upgrade: n, Reason: why,
			Event: &Event{Reason: ReasonRollingBack, Warning: true, Message: fmt.Sprintf("%s: %s; rolling back to %s", u.TargetImage, why, o.LastGood)}}
	}
	n := u.DeepCopy()
	n.StableSince = nil
	n.Message = "rolling out " + u.TargetImage
	return Decision{Image: u.TargetImage, Upgrade: n, Reason: "rolling out the candidate"}
}

// halt: a rollback is due but there is no baseline to go back to (a corrupt status). The
// upgrade ends Failed and production is held where it is, never flipped onto the candidate.
func (p planner) halt(u *v1.UpgradeStatus, why string) Decision {
	msg := why + "; no last good image to roll back to"
	n := u.DeepCopy()
	n.Phase, n.Message, n.DeadlineAt, n.StableSince = string(Failed), msg, nil, nil
	img := p.o.Running
	if img == "" {
		img = u.TargetImage
	}
	return Decision{Image: img, Upgrade: n, Reason: msg,
		Record: &v1.UpgradeRecord{Image: u.TargetImage, Result: ResultRolledBack, Message: msg},
		Event:  &Event{Reason: ReasonHaltedNoBaseline, Warning: true, Message: u.TargetImage + ": " + msg}}
}

func (p planner) planRollingBack(u *v1.UpgradeStatus) Decision {
	o := p.o
	if o.LastGood == "" {
		return p.halt(u, "rolling back")
	}
	if o.Running == o.LastGood && o.Healthy {
		n := u.DeepCopy()
		n.Phase, n.DeadlineAt, n.StableSince = string(Failed), nil, nil
		n.Message = "auto-rolled-back to last-good " + o.LastGood
		return Decision{Image: o.LastGood, Upgrade: n, Reason: "rolled back",
			Record: &v1.UpgradeRecord{Image: u.TargetImage, FromImage: o.LastGood, Result: ResultRolledBack, Message: u.Message},
			Event:  &Event{Reason: ReasonRolledBack, Warning: true, Message: fmt.Sprintf("rolled back from %s to %s", u.TargetImage, o.LastGood)}}
	}
	d := Decision{Image: o.LastGood, Upgrade: u, Reason: "rolling back"}
	if p.expired(u.DeadlineAt) && u.Message != overdue(o.LastGood) {
		// Nothing is safer than the last good image: keep applying it, and say so.
		n := u.DeepCopy()
		n.Message = overdue(o.LastGood)
		d.Upgrade = n
		d.Event = &Event{Reason: ReasonRollbackOverdue, Warning: true, Message: n.Message}
	}
	return d
}

func overdue(lastGood string) string {
	return "the rollback to " + lastGood + " is past its deadline and not healthy yet; still applying it"
}

// planFailed: the latch. The same target is never re-attempted; only a new spec image
// reopens the machine.
func (p planner) planFailed(u *v1.UpgradeStatus, ev *Event) Decision {
	n := u
	if Phase(u.Phase) != Failed {
		n = u.DeepCopy()
		n.Phase = string(Failed)
	}
	img := p.hold(u.TargetImage)
	return Decision{Image: img, Upgrade: n, Reason: "upgrade to " + u.TargetImage + " failed; change spec.image to retry", Event: ev}
}
