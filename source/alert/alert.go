package alert

// Kind names what happened.
type Kind string

// The alert kinds.
const (
	// SweepFailed: a git sweep stopped early or refused objects, after one that did not (or
	// the first sweep of the process).
	SweepFailed Kind = "SweepFailed"
	// SweepRecovered: the first git sweep that does not fail after a SweepFailed, sent only
	// to a target that was sent that SweepFailed (Gate.Recover), once.
	SweepRecovered Kind = "SweepRecovered"
	// DriftReverted: the sweep re-applied objects someone else had changed, naming who.
	DriftReverted Kind = "DriftReverted"
	// UpgradeRolledBack: the upgrade machine reached RollingBack or Failed.
	UpgradeRolledBack Kind = "UpgradeRolledBack"
	// ImageUpdateCommitted: an ImageUpdate pushed a tag bump to git.
	ImageUpdateCommitted Kind = "ImageUpdateCommitted"
)

// recovers names the failure each recovery kind ends (of the same cluster and object);
// ends is its inverse.
var (
	recovers = map[Kind]Kind{SweepRecovered: SweepFailed}
	ends     = map[Kind]bool{SweepFailed: true}
)

// Event is one alert, in public words only: what the loops already say in Events, logs and
// GET /gitops, never a Secret's data or a token.
type Event struct {
	Kind Kind
	// Warning is true for a failure, false for news (a commit).
	Warning bool
	// Cluster is the cluster it happened on (a fleet's <org>/<name>, "home"); empty
	// without a fleet.
	Cluster string
	// Object is "Kind namespace/name", or empty for a sweep.
	Object string
	// Revision is the git commit concerned, if any.
	Revision string
	// Summary is one line; Details a few more (objects, files), each bounded by the sink.
	Summary string
	Details []string
	// Key groups repeats (Gate); empty means Kind, Cluster and Object. A failure a recovery
	// ends (SweepFailed) keeps the empty key: its recovery finds it by cluster and object.
	Key string
}

// key is the deduplication key of e.
func (e Event) key() string {
	if e.Key != "" {
		return e.Key
	}
	return string(e.Kind) + "|" + e.Cluster + "|" + e.Object
}

// Hook receives alerts. Alert must not block (Sink's never does); a nil Hook in a loop
// means no alerts.
type Hook interface {
	Alert(Event)
}
