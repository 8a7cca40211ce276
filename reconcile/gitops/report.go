package gitops

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// Report is the outcome of one sweep, as logged, counted and served at
// GET /gitops.
type Report struct {
	// Cluster is the cluster the sweep applied to: "home" (the operator's own) or
	// <org>/<name> of a registered one (reconcile/fleet); empty without a fleet.
	Cluster string `json:"cluster,omitempty"`
	// Revision is the commit the sweep read; empty when it could not resolve one.
	Revision string    `json:"revision,omitempty"`
	Started  time.Time `json:"started"`
	Duration float64   `json:"durationSeconds"`
	// Triggered is when the oldest webhook (or watch) request this sweep served was fired;
	// unset for a sweep of the resync interval alone.
	Triggered *time.Time `json:"triggered,omitempty"`
	// Phases is where the sweep's time went.
	Phases Phases `json:"phases"`
	// Idle is true when the head was unchanged and no applied object had
	// moved, so the sweep sent the apiserver nothing.
	Idle    bool    `json:"idle"`
	Summary Summary `json:"summary"`
	// Results has one entry per applied object, in plan order; objects the
	// idle check found in sync are in-sync without an apply.
	Results []apply.Result `json:"results,omitempty"`
	// Paths is each git path's health (the worst of its objects'), by path; GET /gitops
	// serves it as the watches see it now, not as at the sweep.
	Paths []PathHealth `json:"paths,omitempty"`
	Skips []Skip       `json:"skips,omitempty"`
	// Files names the file each planned object came from (the deploy plane's rollback
	// commits there); not served.
	Files map[apply.ObjRef]string `json:"-"`
	// Suspended lists the paths `operator suspend` holds out of this sweep (their objects
	// are reported SUSPENDED, with drift).
	Suspended []string `json:"suspended,omitempty"`
	// Orphans are the objects the git field manager applied that git no longer declares,
	// with the revision that removed them; never deleted by the sweep.
	Orphans []Orphan `json:"orphans,omitempty"`
	// StateErrors say why the inventory could not be read or written this sweep.
	StateErrors []string `json:"stateErrors,omitempty"`
	// newlyOrphaned are the orphans this sweep found (one Event each).
	newlyOrphaned []InventoryEntry
	// Error says why the sweep stopped early (head, snapshot); it applied
	// nothing then, and retries on the next tick.
	Error string `json:"error,omitempty"`
}

// Phases is the time of each step of a sweep, in seconds: resolving the head, reading the
// snapshot (fetch and changed blobs), parsing the files, planning, resolving kinds and
// watches, and the idle check with the applies.
type Phases struct {
	Head    float64 `json:"headSeconds"`
	Fetch   float64 `json:"fetchSeconds"`
	Parse   float64 `json:"parseSeconds"`
	Plan    float64 `json:"planSeconds"`
	Resolve float64 `json:"resolveSeconds"`
	Apply   float64 `json:"applySeconds"`
}

// Summary counts a sweep's outcome, with the names of the reference loop.
type Summary struct {
	Files      int `json:"files"`
	Refetched  int `json:"refetched"`
	Created    int `json:"created"`
	Updated    int `json:"updated"`
	InSync     int `json:"inSync"`
	Errors     int `json:"errors"`
	Denied     int `json:"denied"`
	Skipped    int `json:"skipped"`
	OutOfScope int `json:"outOfScope"`
	// Applied is how many objects the sweep sent to the apiserver.
	Applied int `json:"applied"`
	// Held counts objects the ordering held back; Suspended those of suspended paths;
	// Orphaned the inventory's objects git no longer declares; InventoryOverflow the
	// objects the bounded inventory could not record.
	Held              int `json:"held,omitempty"`
	Suspended         int `json:"suspended,omitempty"`
	Orphaned          int `json:"orphaned,omitempty"`
	InventoryOverflow int `json:"inventoryOverflow,omitempty"`
	// Health counts the planned objects by kstatus.
	Health HealthCounts `json:"health"`
}

// OutOfScope reports whether a skip is the scope refusing a valid object
// (as opposed to a file or document that is not a usable object).
func (r Reason) OutOfScope() bool {
	switch r {
	case ReasonNoNamespace, ReasonNamespaceNotOwned, ReasonCRDNotAllowed, ReasonClusterScoped,
		ReasonClusterScopedWithNamespace, ReasonNotInApplyScope, ReasonOperatorObject, ReasonOperatorIdentity:
		return true
	}
	return false
}

// Tally counts results and skips. It is pure.
func Tally(files, refetched, applied int, results []apply.Result, skips []Skip) Summary {
	s := Summary{Files: files, Refetched: refetched, Applied: applied}
	for _, r := range results {
		switch r.Action {
		case apply.Created:
			s.Created++
		case apply.Updated:
			s.Updated++
		case apply.InSync:
			s.InSync++
		case apply.Denied:
			s.Denied++
		case Held:
			s.Held++
		case Suspended:
			s.Suspended++
		default:
			s.Errors++
		}
	}
	for _, sk := range skips {
		if sk.Reason.OutOfScope() {
			s.OutOfScope++
		} else {
			s.Skipped++
		}
	}
	return s
}

// logReport writes one line per object and per skip, then the summary.
// Messages are constant; no object content is ever logged.
func logReport(log logr.Logger, r *Report, files map[apply.ObjRef]string) {
	for _, res := range r.Results {
		kv := []any{"object", res.Object.String(), "action", res.Action, "health", res.Health, "file", files[res.Object], "revision", r.Revision}
		if res.Health != "" && res.Health != string(kstatus.CurrentStatus) && res.HealthMessage != "" {
			kv = append(kv, "healthMessage", res.HealthMessage)
		}
		switch res.Action {
		case apply.Created:
			log.Info("Created object", kv...)
		case apply.Updated:
			if len(res.DriftedBy) == 0 { // git changed it, or a writer we cannot name
				log.Info("Updated object", kv...)
				continue
			}
			log.Info("Reverted drift", append(kv, "driftedBy", res.DriftedBy)...)
		case apply.InSync:
			log.V(1).Info("In sync", kv...)
		case apply.Denied:
			log.Info("Apply denied, widen the operator's RBAC or narrow GITOPS_NAMESPACES", append(kv, "grant", res.Message)...)
		case Held:
			log.Info("Held back, what it depends on is not ready", append(kv, "path", res.Path, "reason", res.Reason, "message", res.Message)...)
		case Suspended:
			log.Info("Not applied, its path is suspended", append(kv, "path", res.Path, "message", res.Message, "driftedBy", res.DriftedBy)...)
		default:
			log.Info("Apply failed, retrying on the next sweep", append(kv, "error", res.Message)...)
		}
	}
	for _, s := range r.Skips {
		log.Info("Skipping, this object is not reconciled", "file", s.File, "doc", s.Doc, "object", s.Object(),
			"reason", s.Reason, "message", s.Message)
	}
	for _, o := range r.Orphans {
		log.Info("Orphaned: no longer in git, never pruned (operator orphans --delete)", "object", o.Object.String(),
			"file", o.File, "removedIn", o.RemovedIn, "createdByGitOps", o.Created)
	}
	for _, p := range r.Paths {
		if p.Health != string(kstatus.CurrentStatus) {
			log.Info("Path not healthy", "path", p.Path, "health", p.Health, "worst", p.Worst.String(), "message", p.Message,
				"current", p.Counts.Current, "inProgress", p.Counts.InProgress, "failed", p.Counts.Failed)
		}
	}
	for _, p := range r.Suspended {
		log.Info("Path suspended, not applied (operator resume PATH)", "path", p)
	}
	for _, e := range r.StateErrors {
		log.Info("Inventory not kept this sweep", "error", e)
	}
	s := r.Summary
	log.Info("Sweep complete (never prunes)", "healthy", r.Healthy(), "current", s.Health.Current, "inProgress", s.Health.InProgress,
		"failed", s.Health.Failed, "held", s.Held, "suspended", s.Suspended, "orphaned", s.Orphaned, "revision", r.Revision, "idle", r.Idle, "applied", s.Applied,
		"files", s.Files, "refetched", s.Refetched, "created", s.Created, "updated", s.Updated, "inSync", s.InSync,
		"errors", s.Errors, "denied", s.Denied, "skipped", s.Skipped, "outOfScope", s.OutOfScope,
		"durationSeconds", r.Duration)
}

// Prometheus collectors, registered once on controller-runtime's registry.
var (
	metricObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_operator_gitops_objects_total",
		Help: "Objects handled by git sweeps, by result: created, updated, in_sync, errors, denied, skipped, out_of_scope.",
	}, []string{"result"})
	metricDrift = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_operator_gitops_drift_reverted_total",
		Help: "Drift the git sweep reverted, by the kind of field manager that had changed the object (kubectl, helm, a known controller, or other).",
	}, []string{"manager"})
	metricSweeps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_operator_gitops_sweeps_total",
		Help: "Git sweeps by outcome: applied (sent objects), idle (sent nothing) or failed.",
	}, []string{"outcome"})
	metricApplied = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "universe_operator_gitops_applies_total",
		Help: "Objects the git sweep sent to the apiserver.",
	})
	metricRefetched = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "universe_operator_gitops_source_refetched_total",
		Help: "Files fetched from the git host rather than served from the SHA cache.",
	})
	metricOrphaned = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "universe_operator_gitops_orphaned_objects",
		Help: "Objects the git sweep applied that git no longer declares (never pruned; operator orphans lists them).",
	})
	metricHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "universe_operator_gitops_held_objects",
		Help: "Objects the last sweep held back: a dependsOn path or an earlier sync wave not ready, or a cycle.",
	})
	metricSuspended = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "universe_operator_gitops_suspended_objects",
		Help: "Objects of suspended paths in the last sweep (not applied).",
	})
	metricFiles = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "universe_operator_gitops_source_files",
		Help: "Manifest files at the last revision read.",
	})
)

// Metrics lists the sweep's collectors; cmd/operator registers them once, with every loop's.
func Metrics() []prometheus.Collector {
	return []prometheus.Collector{metricObjects, metricDrift, metricSweeps, metricApplied, metricRefetched, metricFiles,
		metricOrphaned, metricHeld, metricSuspended}
}

// count adds a report to the Prometheus collectors.
func count(r *Report) {
	s := r.Summary
	switch {
	case r.Error != "":
		metricSweeps.WithLabelValues("failed").Inc()
		return
	case r.Idle:
		metricSweeps.WithLabelValues("idle").Inc()
	default:
		metricSweeps.WithLabelValues("applied").Inc()
	}
	for result, n := range map[string]int{
		"created": s.Created, "updated": s.Updated, "in_sync": s.InSync, "errors": s.Errors,
		"denied": s.Denied, "skipped": s.Skipped, "out_of_scope": s.OutOfScope,
	} {
		metricObjects.WithLabelValues(result).Add(float64(n))
	}
	for _, res := range r.Results {
		for _, m := range res.DriftedBy {
			metricDrift.WithLabelValues(ManagerLabel(m)).Inc()
		}
	}
	metricApplied.Add(float64(s.Applied))
	metricRefetched.Add(float64(s.Refetched))
	metricFiles.Set(float64(s.Files))
	metricOrphaned.Set(float64(s.Orphaned))
	metricHeld.Set(float64(s.Held))
	metricSuspended.Set(float64(s.Suspended))
}

// ServeHTTP serves GET /gitops: the last sweep's Report as JSON, or null
// before the first sweep (and on a replica that is not the leader).
func (s *Sweeper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	var out *Report
	if last := s.Last(); last != nil {
		pub := last.Public()
		if last.Error == "" {
			pub.WithHealth(s.healthOf) // as the watches see it now
		}
		out = &pub
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Public is the report as GET /gitops serves it: no object content and no
// error text that can carry data. A failure the apiserver reported is its
// status code, reason, the field paths of its causes and its message with
// every quoted value masked (the values an admission webhook or validation
// may echo are left out), truncated; a file that does
// not parse is the parser's line, not its message (which can quote a key or
// value); a file refused by a limit or its encoding keeps the operator's own
// wording (it quotes nothing from the file). A failed or denied object's
// message starts with the file that declared it. The log keeps the full
// messages.
func (r Report) Public() Report {
	r.Results = slices.Clone(r.Results)
	for i, res := range r.Results {
		if res.Action == apply.Failed && res.Err != nil {
			r.Results[i].Message = apply.PublicMessage(res.Err, res.Message) // the masking the Kind controllers share
		}
		if f := r.Files[res.Object]; f != "" && (res.Action == apply.Failed || res.Action == apply.Denied) {
			r.Results[i].Message = f + ": " + r.Results[i].Message // the file to fix
		}
		r.Results[i].Err = nil
	}
	r.Skips = slices.Clone(r.Skips)
	for i, sk := range r.Skips {
		if sk.Reason == ReasonInvalidPathFile {
			r.Skips[i].Message = "not a valid " + PathFile + lineOf(sk.Message) + " (want only dependsOn: [paths]; the operator log has the parser's message); every object of its path is held"
		}
		if sk.Reason == ReasonUnparseable && !sk.ours {
			r.Skips[i].Message = "not applied, none of this file is: malformed yaml" + lineOf(sk.Message) + " (the operator log has the parser's message)"
		}
	}
	return r
}

var lineRE = regexp.MustCompile(`line \d+`)

func lineOf(msg string) string {
	if l := lineRE.FindString(msg); l != "" {
		return " at " + l
	}
	return ""
}

// knownManagers are the field managers named in the drift metric; any other
// is "other", so a writer cannot mint label values (each a new time series).
var knownManagers = []string{
	kinds.ManagerKinds, kinds.ManagerGitOps, "kube-controller-manager", "kube-scheduler",
	"helm", "argocd-controller", "kustomize-controller", "helm-controller", "flux-client-side-apply",
}

// ManagerLabel bounds a field manager's name to a fixed set of label values:
// every kubectl flavour is "kubectl", known controllers keep their name, the
// rest is "other".
func ManagerLabel(m string) string {
	switch {
	case strings.HasPrefix(m, "kubectl"):
		return "kubectl"
	case slices.Contains(knownManagers, m):
		return m
	}
	return "other"
}
