package deploy

import (
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SweepReport is the git sweep's last report as the plane reads it (cmd/operator converts
// gitops.Report: drive never imports the sweep).
type SweepReport struct {
	RepoURL, Branch string
	// Revision is the commit the sweep read; Error why it stopped early.
	Revision, Error string
	Started         time.Time
	Duration        time.Duration
	Idle            bool
	Results         []SweepResult
	Skips           []SweepSkip
}

// SweepResult is the sweep's outcome for one object: Created, Updated, InSync, Adopted,
// Failed or Denied.
type SweepResult struct {
	Group, Version, Kind, Namespace, Name string
	Action, Message                       string
	DriftedBy                             []string
}

// SweepSkip is a file, document or object the sweep did not apply, and why.
type SweepSkip struct {
	File, Object, Message, Namespace string
}

// SweepReports answers the sweep's last report (nil before the first sweep).
type SweepReports interface {
	LastSweep() *SweepReport
}

// GitopsAppName is the name of the row that stands for the git sweep.
const GitopsAppName = "gitops"

// failed reports whether a sweep action did not apply its object.
func failed(action string) bool { return action == "Failed" || action == "Denied" }

// ProjectSweep is the git sweep as one Application row: its repository, the revision it read,
// one resource per object it applies (Synced, or OutOfSync where it failed or was denied),
// the last sweep as the operation state, and its skips as ExcludedResourceWarning conditions.
// visible filters the objects by namespace (a member sees its org's only). It is pure.
func ProjectSweep(r *SweepReport, controllerNamespace string, visible func(namespace string) bool) Application {
	app := Application{TypeMeta: metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application"}}
	app.Name, app.Namespace = GitopsAppName, controllerNamespace
	app.CreationTimestamp = metav1.NewTime(r.Started)
	app.ResourceVersion = strconv.FormatInt(r.Started.UnixMilli(), 10)
	src := &ApplicationSource{RepoURL: r.RepoURL, TargetRevision: r.Branch}
	dest := ApplicationDestination{Server: InClusterServer, Name: "in-cluster"}
	app.Spec = ApplicationSpec{Source: src, Destination: dest, Project: DefaultProject,
		Info: []Info{{Name: InfoAutomation, Value: "the git sweep applies every commit; it never deletes"}}}
	st := &app.Status
	st.ControllerNamespace, st.SourceType = controllerNamespace, "Directory"
	st.Sync = SyncStatus{Status: SyncSynced, Revision: r.Revision, ComparedTo: ComparedTo{Source: src, Destination: dest}}
	st.Health = AppHealthStatus{Status: HealthHealthy}
	started, finished := metav1.NewTime(r.Started), metav1.NewTime(r.Started.Add(r.Duration))
	st.ReconciledAt, st.ObservedAt = &finished, &finished
	op := &OperationState{Operation: Operation{Sync: &SyncOperation{Revision: r.Revision}, InitiatedBy: OperationInitiator{Automated: true}},
		Phase: PhaseSucceeded, StartedAt: started, FinishedAt: &finished, SyncResult: &SyncOperationResult{Revision: r.Revision}}
	failures := 0
	for _, res := range r.Results {
		if !visible(res.Namespace) {
			continue
		}
		rs := ResourceStatus{Group: res.Group, Version: res.Version, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name, Status: SyncSynced,
			Health: &HealthStatus{Status: HealthHealthy}}
		rr := ResourceResult{Group: res.Group, Version: res.Version, Kind: res.Kind, Namespace: res.Namespace, Name: res.Name,
			Status: ResultSynced, Message: res.Action, SyncPhase: "Sync"}
		if failed(res.Action) {
			failures++
			rs.Status, rs.Health = SyncOutOfSync, &HealthStatus{Status: HealthDegraded, Message: res.Message}
			rr.Status, rr.Message = ResultSyncFailed, res.Action+": "+res.Message
		}
		st.Resources = append(st.Resources, rs)
		op.SyncResult.Resources = append(op.SyncResult.Resources, rr)
	}
	for _, sk := range r.Skips {
		if !visible(sk.Namespace) { // a file's skip has no namespace: admins only
			continue
		}
		msg := sk.File + ": " + sk.Message
		if sk.Object != "" {
			msg = sk.File + ": " + sk.Object + ": " + sk.Message
		}
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: ConditionExcludedResourceWarning, Message: msg})
	}
	switch {
	case r.Error != "":
		st.Sync.Status, st.Health = SyncUnknown, AppHealthStatus{Status: HealthUnknown, Message: r.Error}
		op.Phase, op.Message = PhaseError, r.Error
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: ConditionComparisonError, Message: r.Error})
	case failures > 0:
		st.Sync.Status, st.Health = SyncOutOfSync, AppHealthStatus{Status: HealthDegraded}
		op.Phase, op.Message = PhaseFailed, strconv.Itoa(failures)+" object(s) not applied"
		st.Conditions = append(st.Conditions, ApplicationCondition{Type: ConditionSyncError, Message: op.Message})
	case r.Idle:
		op.Message = "idle: the head and every applied object unchanged"
	default:
		op.Message = "successfully synced (all tasks run)"
	}
	st.OperationState = op
	return app
}

// gitops answers GET gitops (the spec's /v1/deploy/gitops): the git sweep as one Application
// row in an ApplicationList, empty where no sweep has reported. An admin sees every object;
// a member only those in namespaces of its org (by the one tenancy rule), and no file skip.
func (s *Server) gitops(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	list := ApplicationList{Items: []Application{}}
	list.Kind, list.APIVersion = "ApplicationList", "argoproj.io/v1alpha1"
	var rep *SweepReport
	if s.c.Sweep != nil {
		rep = s.c.Sweep.LastSweep()
	}
	if rep == nil {
		list.ResourceVersion = "0"
		writeJSON(w, r, list, parseFields(r.URL.Query().Get("fields")))
		return
	}
	visible := func(string) bool { return true }
	if !id.Admin {
		orgs, err := s.namespaceOrgs(r)
		if err != nil {
			writeReadError(w, err)
			return
		}
		visible = func(ns string) bool { return ns != "" && CanSeeApp(id, orgs[ns]) }
	}
	app := ProjectSweep(rep, s.c.Namespace, visible)
	list.Items = append(list.Items, app)
	list.ResourceVersion = app.ResourceVersion
	writeJSON(w, r, list, parseFields(r.URL.Query().Get("fields")))
}

// namespaceOrgs maps every namespace of the cache to its org by the tenancy rule.
func (s *Server) namespaceOrgs(r *http.Request) (map[string]string, error) {
	nss := &corev1.NamespaceList{}
	if err := s.c.Reader.List(r.Context(), nss, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(nss.Items))
	for i := range nss.Items {
		if org, err := s.store.tenancy.NamespaceOrg(&nss.Items[i]); err == nil {
			out[nss.Items[i].Name] = org
		}
	}
	return out, nil
}
