package gitops

import (
	"fmt"
	"sort"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source/alert"
)

// maxAlertLines bounds the objects and files one alert names.
const maxAlertLines = 10

// Failing reports whether a sweep failed: it stopped early (Error), or the apiserver refused
// objects (failed, denied), or the plan refused them (skips, out of scope), or an applied
// object's health is Failed (a rollout past its progress deadline). It is pure.
func Failing(r *Report) bool {
	s := r.Summary
	return r.Error != "" || s.Errors > 0 || s.Denied > 0 || s.Skipped > 0 || s.OutOfScope > 0 || s.Health.Failed > 0
}

// Alerts are the alerts of sweep r after prev (nil before the first): SweepFailed on the
// transition into failing only, SweepRecovered on the transition out of it (the gate sends
// it only where the failure went), and one DriftReverted naming the objects whose drift r
// reverted and who had changed them. Their words are GET /gitops's (Report.Public: the
// apiserver's messages with every quoted value masked, no object content). It is pure.
func Alerts(prev, r *Report) []alert.Event {
	var out []alert.Event
	pub := r.Public()
	if Failing(r) && (prev == nil || !Failing(prev)) {
		out = append(out, sweepFailed(&pub))
	}
	if prev != nil && Failing(prev) && !Failing(r) {
		out = append(out, alert.Event{Kind: alert.SweepRecovered, Cluster: r.Cluster, Revision: r.Revision,
			Summary: fmt.Sprintf("revision %s: nothing failing (%s)", short(r.Revision), Describe(r.Summary))})
	}
	var drift []string
	for _, res := range pub.Results {
		if res.Action == apply.Updated && len(res.DriftedBy) > 0 {
			drift = append(drift, res.Object.String()+" (changed by "+strings.Join(res.DriftedBy, ", ")+")")
		}
	}
	if len(drift) > 0 {
		sort.Strings(drift)
		out = append(out, alert.Event{Kind: alert.DriftReverted, Warning: true, Cluster: r.Cluster, Revision: r.Revision,
			Summary: fmt.Sprintf("reverted %d object(s) to git revision %s", len(drift), short(r.Revision)), Details: drift,
			// the same objects drifted by the same writers again are repeats of this alert
			Key: string(alert.DriftReverted) + "|" + r.Cluster + "|" + strings.Join(drift, ";")})
	}
	return out
}

func sweepFailed(pub *Report) alert.Event {
	e := alert.Event{Kind: alert.SweepFailed, Warning: true, Cluster: pub.Cluster, Revision: pub.Revision}
	s := pub.Summary
	switch {
	case pub.Error != "":
		e.Summary = "stopped before applying, retrying on the next tick: " + pub.Error
	default:
		e.Summary = fmt.Sprintf("revision %s: %d failed, %d denied, %d refused by scope, %d skipped, %d unhealthy (GET /gitops has each)",
			short(pub.Revision), s.Errors, s.Denied, s.OutOfScope, s.Skipped, s.Health.Failed)
	}
	for _, res := range pub.Results {
		switch {
		case res.Action == apply.Failed || res.Action == apply.Denied:
			e.Details = append(e.Details, res.Object.String()+": "+string(res.Action)+": "+res.Message)
		case res.Health == string(kstatus.FailedStatus):
			e.Details = append(e.Details, res.Object.String()+": health Failed: "+res.HealthMessage)
		}
	}
	for _, sk := range pub.Skips {
		line := sk.File + ": " + string(sk.Reason)
		if o := sk.Object(); o != "" {
			line = sk.File + ": " + o + ": " + string(sk.Reason)
		}
		e.Details = append(e.Details, line+": "+sk.Message)
	}
	if len(e.Details) > maxAlertLines {
		e.Details = append(e.Details[:maxAlertLines], fmt.Sprintf("… and %d more", len(e.Details)-maxAlertLines))
	}
	return e
}

// alert hands the alerts of r to the hook; nil sends none.
func (s *Sweeper) alert(prev, r *Report) {
	if s.Alerts == nil {
		return
	}
	for _, e := range Alerts(prev, r) {
		s.Alerts.Alert(e)
	}
}
