package drive

import (
	"fmt"
	"regexp"
	"strings"
)

// Mode is how far the apps drive loop may act.
type Mode string

// The drive modes. Off only logs, DryRun reports what it would write (Events
// DriveIntended), On writes the declared tag for allow-listed apps.
const (
	ModeOff    Mode = "off"
	ModeDryRun Mode = "dry-run"
	ModeOn     Mode = "on"
)

// ParseMode reads a mode as the reference reads APPS_DRIVE_MODE: on, true or drive give On;
// dry-run, dryrun or dry give DryRun; anything else, including empty, gives Off.
// Case-insensitive.
func ParseMode(s string) Mode {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "drive":
		return ModeOn
	case "dry-run", "dryrun", "dry":
		return ModeDryRun
	default:
		return ModeOff
	}
}

// AllowList holds the patterns of the apps the loop may write for: `*`, `org/*`, `org/app`
// or `org/app/env`. An empty list matches nothing.
type AllowList []string

// ParseAllowList splits s at commas and whitespace.
func ParseAllowList(s string) AllowList {
	return AllowList(strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}))
}

// Allows reports whether some pattern matches the app org/app/env.
func (a AllowList) Allows(org, app, env string) bool {
	for _, p := range a {
		parts := strings.Split(strings.TrimSpace(p), "/")
		switch {
		case len(parts) == 1 && parts[0] == "*":
			return true
		case len(parts) == 2 && parts[0] == org && (parts[1] == "*" || parts[1] == app):
			return true
		case len(parts) == 3 && parts[0] == org && parts[1] == app && parts[2] == env:
			return true
		}
	}
	return false
}

// Row is one entry (AppView) of the platform's apps table. Fields the loop does not use
// (repo, latestTag, releaseUrl, health, drift, …) are not decoded.
type Row struct {
	ID          string `json:"id"` // org/app/env
	Org         string `json:"org"`
	App         string `json:"app"`
	Env         string `json:"env"`
	Registry    string `json:"registry"` // image repository, the join key
	DeclaredTag string `json:"declaredTag,omitempty"`
	RunningTag  string `json:"runningTag,omitempty"`
	Cluster     string `json:"cluster,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// NeedsDrive is true when a tag is declared and differs from the running one (nothing
// running counts as drift).
func (r Row) NeedsDrive() bool { return r.DeclaredTag != "" && r.DeclaredTag != r.RunningTag }

// Name is the row's id, or org/app/env when the platform sent no id.
func (r Row) Name() string {
	if r.ID != "" {
		return r.ID
	}
	return r.Org + "/" + r.App + "/" + r.Env
}

// NamespaceOrDefault is the namespace the app runs in; default when the row names none.
func (r Row) NamespaceOrDefault() string {
	if r.Namespace == "" {
		return "default"
	}
	return r.Namespace
}

var semverTag = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// IsReleaseTag reports whether tag is a pinned release tag vX.Y.Z: no pre-release, no
// floating names such as latest.
func IsReleaseTag(tag string) bool { return semverTag.MatchString(tag) }

// Verdict is what the loop does with a row.
type Verdict string

// The verdicts, in the order of the gates.
const (
	VerdictSkip   Verdict = "Skip"   // in sync, or mode off: nothing to say
	VerdictRefuse Verdict = "Refuse" // the declared tag is not a release tag: never written
	VerdictReport Verdict = "Report" // dry-run, or not allow-listed: DriveIntended only
	VerdictWrite  Verdict = "Write"  // write the declared tag where the desired state lives
)

// Decision is the outcome of Decide for one row.
type Decision struct {
	Verdict Verdict
	// Target is registry:declaredTag, set from the release-tag gate on.
	Target string
	Reason string
}

// Decide applies the gates in order: in sync → Skip; a declared tag that is not vX.Y.Z →
// Refuse, whatever the mode (so a dry run never promises a write the loop would refuse);
// mode off → Skip; dry-run → Report; on → Write if allow-listed, else Report. It is pure.
func Decide(mode Mode, allow AllowList, r Row) Decision {
	if !r.NeedsDrive() {
		if r.DeclaredTag == "" {
			return Decision{Verdict: VerdictSkip, Reason: "no declared tag"}
		}
		return Decision{Verdict: VerdictSkip, Reason: "in sync"}
	}
	if !IsReleaseTag(r.DeclaredTag) {
		return Decision{Verdict: VerdictRefuse,
			Reason: fmt.Sprintf("declared tag %q is not a release tag (vX.Y.Z); refusing to drive %s", r.DeclaredTag, r.Name())}
	}
	target := r.Registry + ":" + r.DeclaredTag
	from := r.RunningTag
	if from == "" {
		from = "nothing running"
	}
	switch {
	case mode == ModeDryRun:
		return Decision{Verdict: VerdictReport, Target: target, Reason: fmt.Sprintf("dry-run: would drive %s from %s to %s", r.Name(), from, target)}
	case mode != ModeOn:
		return Decision{Verdict: VerdictSkip, Target: target, Reason: "drive mode off"}
	case !allow.Allows(r.Org, r.App, r.Env):
		return Decision{Verdict: VerdictReport, Target: target, Reason: fmt.Sprintf("%s is not in the drive allow-list; would drive from %s to %s", r.Name(), from, target)}
	default:
		return Decision{Verdict: VerdictWrite, Target: target, Reason: fmt.Sprintf("driving %s from %s to %s", r.Name(), from, target)}
	}
}
