package drive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/source"
)

// Event reasons the apps loop records on the CR it drives (the registry's, kinds/condition).
const (
	EventDriveIntended       = condition.EventDriveIntended       // Normal: dry-run, or not allow-listed
	EventDriven              = condition.EventDriven              // Normal: written and rolled out
	EventDriveRolloutPending = condition.EventDriveRolloutPending // Warning: written, not rolled out in time
	EventDriveFailed         = condition.EventDriveFailed         // Warning: the write failed
)

var (
	metricPolls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_drive_polls_total",
		Help: "Polls of the platform apps table, by result (ok, unauthorized, unreachable).",
	}, []string{"result"})
	metricDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_drive_decisions_total",
		Help: "Decisions of the apps drive loop per row and poll, by verdict.",
	}, []string{"verdict"})
	metricWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_drive_writes_total",
		Help: "Declared tags the apps drive loop wrote, by where (git, cr) and result.",
	}, []string{"target", "result"})
)

// AppsSource is the platform's apps table.
type AppsSource interface {
	Apps(ctx context.Context) ([]Row, error)
}

// ErrNoCommitter: the CR came from git but no git write path is configured.
var ErrNoCommitter = errors.New("the CR is applied from the universe repo and no git write path is configured: drive writes the tag to git, never to a CR the git sweep would revert")

// Apps is the apps drive loop: every Interval it reads the platform's apps table, decides
// each row of Cluster with Decide, and writes the declared tag where the desired state
// lives — the universe repo when the CR came from the git sweep, else the CR's
// spec.image.tag (field manager kinds.ManagerDrive). It never writes a Deployment.
type Apps struct {
	Platform AppsSource
	// Client reads Deployments and CRs and applies the CR patch.
	Client   client.Client
	Cluster  string
	Mode     Mode
	Allow    AllowList
	Interval time.Duration
	// RolloutTimeout bounds the wait for the Deployment after a write (default 3 min).
	// The wait reads the Deployment whenever Watch delivers it; RolloutPoll is the
	// backstop's period (default 5 s; the only wake when Watch is nil).
	RolloutTimeout, RolloutPoll time.Duration
	Watch                       *DeploymentWatch
	// GitOpsManager is the field manager of CRs applied by the git sweep.
	GitOpsManager string
	// Committer writes tags of git-sourced CRs (and wakes the sweep, so a commit is applied
	// at once); nil means not configured.
	Committer source.CRCommitter
	// Tenancy is the one tenancy rule: the CR a row targets must be of the row's org
	// (AdmitOrg against its Namespace, read with managedFields) before anything is written.
	Tenancy  kinds.Tenancy
	Recorder events.EventRecorder
	Log      logr.Logger

	mu   sync.Mutex
	said map[string]string // row → the last event sent for it, so a steady state is quiet
}

// Start runs the loop until ctx ends. A poll that fails is logged and metered, and retried
// next tick.
func (a *Apps) Start(ctx context.Context) error {
	every := a.Interval
	if every < 5*time.Second {
		every = 5 * time.Second
	}
	a.Log.Info("apps drive loop started", "mode", a.Mode, "cluster", a.Cluster, "interval", every.String(), "allow", []string(a.Allow))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := a.Tick(ctx); err != nil && ctx.Err() == nil {
			a.Log.Error(err, "apps drive poll failed; retrying next tick")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Outcome is what one tick did with a row.
type Outcome struct {
	Row      string
	Decision Decision
	// Object is the CR the row joined to (Kind/namespace/name), if any.
	Object string
	// Wrote is "git", "cr" or empty.
	Wrote   string
	Rollout string // done, failed, pending or empty
	Err     error
}

// Tick polls once and acts on every row of the cluster.
func (a *Apps) Tick(ctx context.Context) ([]Outcome, error) {
	rows, err := a.Platform.Apps(ctx)
	switch {
	case errors.Is(err, ErrUnauthorized):
		metricPolls.WithLabelValues("unauthorized").Inc()
		return nil, err
	case err != nil:
		metricPolls.WithLabelValues("unreachable").Inc()
		return nil, err
	}
	metricPolls.WithLabelValues("ok").Inc()
	var out []Outcome
	for _, r := range RowsFor(rows, a.Cluster) {
		o := a.row(ctx, r)
		metricDecisions.WithLabelValues(string(o.Decision.Verdict)).Inc()
		if o.Err != nil {
			a.Log.Error(o.Err, "apps drive failed for a row", "app", o.Row, "object", o.Object)
		}
		out = append(out, o)
	}
	return out, nil
}

func (a *Apps) row(ctx context.Context, r Row) Outcome {
	d := Decide(a.Mode, a.Allow, r)
	o := Outcome{Row: r.Name(), Decision: d}
	log := a.Log.WithValues("app", r.Name())
	switch d.Verdict {
	case VerdictSkip:
		log.V(1).Info("apps drive skips", "reason", d.Reason)
		return o
	case VerdictRefuse:
		log.Info("apps drive refuses the declared tag", "reason", d.Reason)
		return o
	}
	dep, cr, err := a.join(ctx, r)
	if cr != nil {
		o.Object = cr.GetKind() + "/" + cr.GetNamespace() + "/" + cr.GetName()
	}
	if terr := a.admit(ctx, r, dep, cr); terr != nil {
		// no event either: the namespace is not the row's org's to write to, nor to notify
		o.Decision = Decision{Verdict: VerdictRefuse, Target: d.Target, Reason: terr.Error()}
		o.Err = terr
		return o
	}
	if err != nil {
		o.Err = err
		if dep != nil { // the Deployment has no CR to carry the event
			a.event(r, dep, corev1.EventTypeWarning, EventDriveFailed, err.Error())
		}
		return o
	}
	if d.Verdict == VerdictReport {
		log.Info("apps drive intends", "object", o.Object, "reason", d.Reason)
		a.event(r, cr, corev1.EventTypeNormal, EventDriveIntended, d.Reason)
		return o
	}
	cur, _, _ := unstructured.NestedString(cr.Object, "spec", "image", "tag")
	if cur != r.DeclaredTag {
		o.Wrote, o.Err = a.write(ctx, r, cr, cur)
		metricWrites.WithLabelValues(o.Wrote, result(o.Err)).Inc()
		if o.Err != nil {
			a.event(r, cr, corev1.EventTypeWarning, EventDriveFailed, fmt.Sprintf("writing %s failed: %v", d.Target, o.Err))
			return o
		}
		log.Info("apps drive wrote the declared tag", "object", o.Object, "to", o.Wrote, "target", d.Target, "from", cur)
	}
	ro, msg := a.waitRollout(ctx, client.ObjectKeyFromObject(dep), r.Registry, d.Target)
	o.Rollout = string(ro)
	if ro == RolloutDone {
		a.event(r, cr, corev1.EventTypeNormal, EventDriven, fmt.Sprintf("%s; rolled out", d.Reason))
	} else {
		a.event(r, cr, corev1.EventTypeWarning, EventDriveRolloutPending, fmt.Sprintf("%s: %s", d.Target, msg))
	}
	return o
}

// admit applies the tenancy rule to what the row reaches: the CR it targets (else the
// Deployment it joined) must be admitted in its Namespace for the row's org. It returns nil
// when the row reached nothing (the join's error says why).
func (a *Apps) admit(ctx context.Context, r Row, dep *appsv1.Deployment, cr *unstructured.Unstructured) error {
	var target metav1.Object
	switch {
	case cr != nil:
		target = cr
	case dep != nil:
		target = dep
	default:
		return nil
	}
	if err := kinds.ValidOrg(r.Org); err != nil {
		return fmt.Errorf("row %s: %w", r.Name(), err)
	}
	var ns corev1.Namespace
	if err := a.Client.Get(ctx, types.NamespacedName{Name: target.GetNamespace()}, &ns); err != nil {
		return fmt.Errorf("row %s: read Namespace %s for its org: %w", r.Name(), target.GetNamespace(), err)
	}
	if _, err := a.Tenancy.AdmitOrg(target, &ns, r.Org); err != nil {
		return fmt.Errorf("row %s: %w", r.Name(), err)
	}
	return nil
}

func result(err error) string {
	if err != nil {
		return "failed"
	}
	return "ok"
}

// join finds the Deployment in the row's namespace running the row's image repository
// (never by name: the platform's app names are not Deployment names) and the universe CR
// that controls it.
func (a *Apps) join(ctx context.Context, r Row) (*appsv1.Deployment, *unstructured.Unstructured, error) {
	var list appsv1.DeploymentList
	ns := r.NamespaceOrDefault()
	if err := a.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, nil, fmt.Errorf("list Deployments in %s: %w", ns, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var dep *appsv1.Deployment
	for i := range list.Items {
		if runsRepository(&list.Items[i], r.Registry) {
			dep = &list.Items[i]
			break
		}
	}
	if dep == nil {
		return nil, nil, fmt.Errorf("no Deployment in namespace %s runs %s", ns, r.Registry)
	}
	owner := metav1.GetControllerOf(dep)
	if owner == nil {
		return dep, nil, fmt.Errorf("the Deployment %s/%s runs %s but no universe CR controls it; drive never writes a Deployment", ns, dep.Name, r.Registry)
	}
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion(owner.APIVersion)
	cr.SetKind(owner.Kind)
	if err := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: owner.Name}, cr); err != nil {
		return dep, nil, fmt.Errorf("get %s %s/%s controlling Deployment %s: %w", owner.Kind, ns, owner.Name, dep.Name, err)
	}
	repo, _, _ := unstructured.NestedString(cr.Object, "spec", "image", "repository")
	if repo != r.Registry {
		return dep, cr, fmt.Errorf("%s %s/%s declares spec.image.repository %q, not %s; the image is not the CR's main image", owner.Kind, ns, owner.Name, repo, r.Registry)
	}
	return dep, cr, nil
}

// ofRepository: image is a reference of repository repo as written, whatever its tag or
// digest (kinds.ImageRef). A reference that does not parse is of no repository.
func ofRepository(image, repo string) bool {
	r, err := kinds.ParseImageRef(image)
	return err == nil && r.Name() == repo
}

func runsRepository(d *appsv1.Deployment, repo string) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		if ofRepository(c.Image, repo) {
			return true
		}
	}
	return false
}

// gitSourced reports whether the git sweep applied cr: it holds fields under the sweep's
// field manager.
func (a *Apps) gitSourced(cr *unstructured.Unstructured) bool {
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager == a.GitOpsManager && a.GitOpsManager != "" && mf.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// write puts the declared tag where the CR's desired state lives.
func (a *Apps) write(ctx context.Context, r Row, cr *unstructured.Unstructured, from string) (string, error) {
	if a.gitSourced(cr) {
		if a.Committer == nil {
			return "git", ErrNoCommitter
		}
		// the tag only: a file naming another repository is refused, never moved
		res, err := a.Committer.CommitImage(ctx, source.CRImage{
			APIVersion: cr.GetAPIVersion(), Kind: cr.GetKind(), Namespace: cr.GetNamespace(), Name: cr.GetName(),
			Image:   r.Registry + ":" + r.DeclaredTag,
			Message: fmt.Sprintf("drive: %s %s %s -> %s\n\nDeclared by the platform apps table (row %s).", r.Name(), r.Registry, from, r.DeclaredTag, r.Name()),
		})
		if err != nil {
			return "git", err
		}
		a.Log.Info("apps drive committed the declared tag", "app", r.Name(), "commit", res.Commit)
		return "git", nil
	}
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(cr.GetAPIVersion())
	patch.SetKind(cr.GetKind())
	patch.SetNamespace(cr.GetNamespace())
	patch.SetName(cr.GetName())
	if err := unstructured.SetNestedField(patch.Object, r.DeclaredTag, "spec", "image", "tag"); err != nil {
		return "cr", err
	}
	// Force: the tag's previous owner (kubectl, a script) hands it over to drive.
	err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(kinds.ManagerDrive), client.ForceOwnership)
	return "cr", err
}

// waitRollout waits for the Deployment until RolloutOf finds it done or failed, or
// RolloutTimeout passes. It reads the Deployment whenever Watch delivers it (a status
// change is seen as soon as the watch has it), and every RolloutPoll as a backstop (a
// Deployment outside the watch's namespaces, a missed event).
func (a *Apps) waitRollout(ctx context.Context, key client.ObjectKey, repo, target string) (Rollout, string) {
	timeout, poll := a.RolloutTimeout, a.RolloutPoll
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	if poll <= 0 {
		poll = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var woken <-chan struct{} // nil without a watch: the poll alone
	if a.Watch != nil {
		ch, stop := a.Watch.Subscribe(key) // before the first read: no change falls between
		defer stop()
		woken = ch
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	msg := "not observed yet"
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := a.Client.Get(ctx, key, u); err != nil && !apierrors.IsNotFound(err) {
			msg = err.Error()
		} else if err == nil {
			var r Rollout
			if r, msg = RolloutOf(u, repo, target); r != RolloutPending {
				return r, msg
			}
		}
		select {
		case <-ctx.Done():
			return RolloutPending, fmt.Sprintf("not rolled out within %s: %s", timeout, msg)
		case <-woken:
		case <-t.C:
		}
	}
}

// event records reason on obj unless the same was last said for this row.
func (a *Apps) event(r Row, obj runtime.Object, typ, reason, note string) {
	key := reason + "\x00" + note
	a.mu.Lock()
	if a.said == nil {
		a.said = map[string]string{}
	}
	same := a.said[r.Name()] == key
	a.said[r.Name()] = key
	a.mu.Unlock()
	if same || a.Recorder == nil {
		return
	}
	if len(note) > 1024 {
		note = note[:1024]
	}
	a.Recorder.Eventf(obj, nil, typ, reason, "Drive", "%s", note)
}
