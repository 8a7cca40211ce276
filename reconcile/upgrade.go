package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/upgrade"
)

// The conditions the upgrade machine adds to a Service-shaped CR's status.
const (
	// ConditionUpgradePolicyIgnored: the CR asks for a gated upgrade but the operator runs
	// without --upgrade-fsm, so spec.image is applied directly.
	ConditionUpgradePolicyIgnored = "UpgradePolicyIgnored"
	// ConditionUpgradeRefused: the upgrade would be unsafe (§3.3); production is held on the
	// running image.
	ConditionUpgradeRefused = "UpgradeRefused"
	// ConditionUpgradeFailed: the last upgrade failed and production runs lastGoodImage, not
	// spec.image, until spec.image changes.
	ConditionUpgradeFailed = "UpgradeFailed"
	// ConditionUpgradeLatched: the machine is off (--upgrade-fsm, or the CR's own gate) but
	// the CR's last upgrade failed and its spec has not changed since, so production stays on
	// lastGoodImage instead of being released onto the failed image (upgrade.HoldWhenOff).
	ConditionUpgradeLatched = "UpgradeLatched"
)

// upgradeRequeue is how soon a CR with an upgrade in flight is looked at again, a backstop
// only: the Owns watch on the Deployment and the pod watch (upgradePod: the candidate's pods
// and the pre-flight pod) wake the CR when what the machine decides from moves.
const upgradeRequeue = 10 * time.Second

var (
	metricUpgrades = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_upgrades_total",
		Help: "Upgrade machine transitions per Kind and event: started, succeeded, rolled_back, preflight_failed, superseded.",
	}, []string{"kind", "event"})
	metricPreflightGC = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "universe_upgrade_preflight_collected_total",
		Help: "Orphaned pre-flight resources the collector deleted.",
	})
)

// The kinds of the pre-flight resources, in deletion order (the pod first).
var (
	gvkPod            = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvkPVC            = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	gvkNetworkPolicy  = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}
	gvkVolumeSnapshot = schema.GroupVersionKind{Group: upgrade.SnapshotGroup, Version: upgrade.SnapshotVersion, Kind: upgrade.SnapshotKind}
	preflightKinds    = []schema.GroupVersionKind{gvkPod, gvkPVC, gvkVolumeSnapshot, gvkNetworkPolicy}
)

// Upgrades is the shell of the upgrade machine in the Kind controllers of the Service-shaped
// Kinds: it observes, calls upgrade.Plan, builds the CR at the image Plan chose, converges the
// pre-flight resources and hands back the status fields for the one status write.
type Upgrades struct {
	// Enabled is the cluster gate (--upgrade-fsm / UPGRADE_FSM_ENABLED); each CR's
	// spec.upgradePolicy.enabled is the other.
	Enabled bool
	// Client writes pre-flight resources and lists them (uncached: no informer per kind).
	Client client.Client
	// Served tells whether the cluster serves a kind (the VolumeSnapshot API).
	Served func(schema.GroupVersionKind) bool
	// Git commits a failed upgrade's revert to the universe repository
	// (spec.upgradePolicy.revertInGit), waking the sweep; nil when the operator has no git
	// write path.
	Git source.CRCommitter
	// Off, when set, is why the machine never runs here whatever the gate (a registered
	// cluster's controllers): the UpgradePolicyIgnored message.
	Off string
	// Alerts, when set, receives an alert when an upgrade reaches RollingBack or Failed.
	Alerts alert.Hook
}

// Events of the revert in git (the registry's, kinds/condition).
const (
	EventRevertedInGit     = condition.EventRevertedInGit
	EventRevertInGitFailed = condition.EventRevertInGitFailed
)

// revertRetry is how soon a failed revert commit is tried again.
const revertRetry = time.Minute

// upgradeStep is what the upgrade phase decided for one reconcile.
type upgradeStep struct {
	// desired replaces the built children when the Deployment must run another image.
	desired []*unstructured.Unstructured
	// state is the next lastGoodImage, upgrade and upgradeHistory, written with the status;
	// changed tells whether it differs from the CR's.
	state     upgradeState
	changed   bool
	condition *metav1.Condition
	requeue   time.Duration
}

type upgradeState struct {
	LastGoodImage  string             `json:"lastGoodImage,omitempty"`
	Upgrade        *v1.UpgradeStatus  `json:"upgrade,omitempty"`
	UpgradeHistory []v1.UpgradeRecord `json:"upgradeHistory,omitempty"`
}

func readUpgradeState(cr kinds.Object) (upgradeState, error) {
	raw, err := json.Marshal(cr)
	if err != nil {
		return upgradeState{}, err
	}
	var s struct {
		Status upgradeState `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return upgradeState{}, fmt.Errorf("read upgrade status of %s: %w", klog.KObj(cr), err)
	}
	return s.Status, nil
}

// errCacheBehind: the cached CR is older than the live one; the reconcile is retried.
var errCacheBehind = errors.New("the cache is behind the CR")

// step runs the upgrade machine for one CR whose children were just built. It returns nil
// for a CR that is not Service-shaped or has no Deployment. upgrading is set while the
// upgrade is decided by its pods (watchesPods), from before they are read, so a pod event
// arriving during the reconcile wakes the CR again; an error leaves it as it was (the
// reconcile is retried).
//
//nolint:funlen,gocyclo // one branch per observation the machine needs; the decision is upgrade.Plan's
func (r *KindReconciler) upgradeStep(ctx context.Context, cr kinds.Object, desired []*unstructured.Unstructured, previous []metav1.Condition,
	upgrading *atomic.Bool) (*upgradeStep, error) {
	if r.Upgrades == nil || r.Entry.ServiceSpec == nil {
		return nil, nil
	}

	spec := r.Entry.ServiceSpec(cr)
	dep := findDeployment(desired, cr.GetName())
	if spec == nil || dep == nil {
		return nil, nil
	}
	u := r.Upgrades
	asks := spec.UpgradePolicy != nil && spec.UpgradePolicy.Enabled
	if u.Enabled && asks {
		// Decide only on the CR as it is now: the status write is pinned to the cached
		// resourceVersion, but the Deployment is applied before it, so a cache that has not
		// seen the last status write must never replay an old phase onto production.
		fresh := &metav1.PartialObjectMetadata{}
		fresh.SetGroupVersionKind(r.Entry.GroupVersionKind(r.Context.APIGroup))
		if err := u.Client.Get(ctx, client.ObjectKeyFromObject(cr), fresh); err != nil {
			return nil, fmt.Errorf("read %s: %w", klog.KObj(cr), err)
		}
		if fresh.GetResourceVersion() != cr.GetResourceVersion() {
			return nil, fmt.Errorf("%w: %s is at resourceVersion %s, the cache at %s", errCacheBehind, klog.KObj(cr), fresh.GetResourceVersion(), cr.GetResourceVersion())
		}
	}
	prev, err := readUpgradeState(cr)
	if err != nil {
		return nil, err
	}
	step := &upgradeStep{state: prev}
	if !u.Enabled || !asks {
		upgrading.Store(false)
		// The gate is closed: a CR latched Failed stays on lastGood until its spec changes
		// (turning the machine off must not release a known-bad image); otherwise spec.image
		// is applied directly, and an upgrade left in flight (the gate closed mid-way) is
		// dropped with its pre-flight resources.
		if hold := upgrade.HoldWhenOff(upgrade.Latch{Desired: upgrade.DeploymentImage(dep), LastGood: prev.LastGoodImage,
			Upgrade: prev.Upgrade, Generation: cr.GetGeneration(), LatchedGeneration: latchedGeneration(previous)}); hold != nil {
			if step.desired, err = r.buildAt(cr, hold.Image); err != nil {
				return nil, err
			}
			step.condition = &metav1.Condition{Type: ConditionUpgradeLatched, Status: metav1.ConditionTrue, Reason: upgrade.ReasonLatchedMachineOff,
				Message: hold.Message}
			return step, nil
		}
		if prev.Upgrade != nil {
			if err := r.sweepPreflight(ctx, cr, ""); err != nil {
				return nil, err
			}
			step.state.Upgrade, step.changed = nil, true
		}
		if asks {
			why := "the operator runs without --upgrade-fsm (UPGRADE_FSM_ENABLED=true)"
			if u.Off != "" {
				why = u.Off
			}
			step.condition = &metav1.Condition{Type: ConditionUpgradePolicyIgnored, Status: metav1.ConditionTrue, Reason: "UpgradeFSMDisabled",
				Message: "spec.upgradePolicy.enabled is true but " + why + ": spec.image is applied directly, with no pre-flight, health gate or rollback"}
		}
		return step, nil
	}
	desiredImage := upgrade.DeploymentImage(dep)
	// The live Deployment, from the Owns cache (typed: TypedChildren keeps Deployments so).
	live := &appsv1.Deployment{}
	running, healthy := "", false
	switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(dep), live); {
	case err == nil:
		running, healthy = upgrade.DeploymentImage(live), upgrade.DeploymentHealthy(live)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read deployment %s: %w", klog.KObj(dep), err)
	}
	cfg := upgrade.ConfigFrom(spec.UpgradePolicy, upgrade.Stateful(spec))
	active := prev.Upgrade != nil || (running != "" && running != desiredImage && desiredImage != prev.LastGoodImage)
	if active {
		snapshots := u.Served != nil && u.Served(gvkVolumeSnapshot)
		if refusal := upgrade.Refuse(cr.GetName(), spec, cfg, snapshots); refusal != nil {
			upgrading.Store(false)
			step.condition = &metav1.Condition{Type: ConditionUpgradeRefused, Status: metav1.ConditionTrue, Reason: refusal.Reason, Message: refusal.Message}
			if err := r.sweepPreflight(ctx, cr, ""); err != nil {
				return nil, err
			}
			hold := running
			if hold == "" {
				hold = prev.LastGoodImage
			}
			if hold != "" && hold != desiredImage {
				if step.desired, err = r.buildAt(cr, hold); err != nil {
					return nil, err
				}
			}
			return step, nil
		}
	}
	if p := prev.Upgrade; p != nil && p.TargetImage == desiredImage && watchesPods(upgrade.Phase(p.Phase)) {
		upgrading.Store(true)
	}
	obs := upgrade.Observed{Name: cr.GetName(), Desired: desiredImage, Running: running, Healthy: healthy,
		LastGood: prev.LastGoodImage, Upgrade: prev.Upgrade, History: prev.UpgradeHistory}
	if p := prev.Upgrade; p != nil && p.TargetImage == desiredImage {
		switch upgrade.Phase(p.Phase) {
		case upgrade.Preflighting:
			obs.Preflight, obs.PreflightMessage = r.preflightOutcome(ctx, cr, p)
		case upgrade.Rolling:
			if obs.Crashloop, err = r.crashlooping(ctx, live, p.TargetImage); err != nil {
				return nil, err
			}
		}
	}
	d := upgrade.Plan(obs, cfg, r.Now())
	upgrading.Store(watchesPods(d.Phase()))
	r.recordUpgrade(ctx, cr, prev, d)
	revertNote, revertRequeue := r.revertInGit(ctx, cr, spec, &d)
	if d.Image != desiredImage {
		if step.desired, err = r.buildAt(cr, d.Image); err != nil {
			return nil, err
		}
	}
	if err := r.convergePreflight(ctx, cr, spec, dep, prev, d); err != nil {
		return nil, err
	}
	step.state = upgradeState{LastGoodImage: d.LastGood, Upgrade: d.Upgrade, UpgradeHistory: d.History}
	step.changed = !sameJSON(prev, step.state)
	switch d.Phase() {
	case upgrade.Preflighting, upgrade.Rolling, upgrade.RollingBack:
		step.requeue = upgradeRequeue
	case upgrade.Failed:
		step.condition = &metav1.Condition{Type: ConditionUpgradeFailed, Status: metav1.ConditionTrue, Reason: "UpgradeFailed",
			Message: fmt.Sprintf("the upgrade to %s failed (%s); production runs %s until spec.image changes%s", d.Upgrade.TargetImage, d.Upgrade.Message, d.Image, revertNote)}
		step.requeue = revertRequeue
	}
	return step, nil
}

// revertInGit commits the image of a CR from the git sweep back to lastGood once its upgrade
// is latched Failed and spec.upgradePolicy.revertInGit asks (upgrade.RevertDue), recording
// the commit in d.Upgrade.revertCommit so it happens once per failure. It returns a note for
// the UpgradeFailed condition and, after a failed commit, when to try again.
func (r *KindReconciler) revertInGit(ctx context.Context, cr kinds.Object, spec *v1.ServiceSpec, d *upgrade.Decision) (string, time.Duration) {
	asks := spec.UpgradePolicy != nil && spec.UpgradePolicy.RevertInGit
	if d.Phase() != upgrade.Failed || !asks {
		return "", 0
	}
	if d.Upgrade.RevertCommit != "" {
		return "; the universe repository names " + d.LastGood + " again (commit " + shortSHA(d.Upgrade.RevertCommit) + ")", 0
	}
	fromGit := apply.AppliedBy(cr, kinds.ManagerGitOps)
	rv := upgrade.RevertDue(*d, asks, fromGit)
	switch {
	case !fromGit:
		return "; revertInGit: the CR was not applied from the universe repository, nothing to revert there", 0
	case rv == nil:
		return "; revertInGit: no last good image to put back in the universe repository", 0
	case r.Upgrades.Git == nil:
		return "; revertInGit: this operator has no git write path (the git sweep is off), the repository still names " + rv.Failed, 0
	}
	gvk := r.Entry.GroupVersionKind(r.Context.APIGroup)
	res, err := r.Upgrades.Git.CommitImage(ctx, source.CRImage{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: cr.GetNamespace(), Name: cr.GetName(),
		Image: rv.Image, MoveRepository: true, Message: rv.Message(gvk.Kind, cr.GetNamespace(), cr.GetName())})
	commit := res.Commit
	if commit == "" {
		commit = res.Parent // the repository already names the image
	}
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Revert in git failed", "image", rv.Image, "failed", rv.Failed)
		if r.Recorder != nil {
			r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, EventRevertInGitFailed, "Upgrade", "committing %s back to the universe repository failed: %v", rv.Image, err)
		}
		return "; revertInGit: the commit failed and is retried: " + err.Error(), revertRetry
	}
	d.Upgrade = d.Upgrade.DeepCopy() // the Failed latch shares the stored status
	d.Upgrade.RevertCommit = commit
	logr.FromContextOrDiscard(ctx).Info("Reverted the failed image in git", "image", rv.Image, "failed", rv.Failed, "commit", commit)
	if r.Recorder != nil {
		r.Recorder.Eventf(cr, nil, corev1.EventTypeNormal, EventRevertedInGit, "Upgrade", "committed %s back to the universe repository (%s): the upgrade to %s failed", rv.Image, shortSHA(commit), rv.Failed)
	}
	return "; the universe repository names " + rv.Image + " again (commit " + shortSHA(commit) + ")", 0
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// upgrade is the phase between build and apply: for a Service-shaped CR it runs the upgrade
// machine, which may replace the built children with the CR built at another image.
func (r *KindReconciler) upgrade(ctx context.Context, s *scope) error {
	if s.halted {
		return nil
	}
	up, err := r.upgradeStep(ctx, s.cr, s.desired, s.previous.Conditions, &s.mem.upgrading)
	if err != nil {
		return err
	}
	s.upgrade = up
	if up != nil && up.desired != nil {
		s.desired = up.desired
	}
	return nil
}

// recordUpgrade logs, records an Event and counts a transition.
func (r *KindReconciler) recordUpgrade(ctx context.Context, cr kinds.Object, prev upgradeState, d upgrade.Decision) {
	prevPhase := upgrade.Stable
	if prev.Upgrade != nil {
		prevPhase = upgrade.Phase(prev.Upgrade.Phase)
	}
	if d.Event == nil && d.Record == nil && prevPhase == d.Phase() {
		return
	}
	logr.FromContextOrDiscard(ctx).Info("Upgrade transition", "from", string(prevPhase), "to", string(d.Phase()), "image", d.Image, "reason", d.Reason)
	if ev := d.Event; ev != nil && r.Recorder != nil {
		typ := corev1.EventTypeNormal
		if ev.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(cr, nil, typ, ev.Reason, "Upgrade", "%s", ev.Message)
	}
	if e := upgradeAlert(r.Entry.Kind, cr, prevPhase, d); e != nil && r.Upgrades != nil && r.Upgrades.Alerts != nil {
		r.Upgrades.Alerts.Alert(*e)
	}
	if d.Event != nil && d.Event.Reason == upgrade.ReasonStarted {
		metricUpgrades.WithLabelValues(r.Entry.Kind, "started").Inc()
	}
	if d.Record != nil {
		name := map[string]string{upgrade.ResultSucceeded: "succeeded", upgrade.ResultRolledBack: "rolled_back",
			upgrade.ResultPreflightFailed: "preflight_failed", upgrade.ResultSuperseded: "superseded"}[d.Record.Result]
		metricUpgrades.WithLabelValues(r.Entry.Kind, name).Inc()
	}
}

// upgradeAlert is the alert of a transition into RollingBack or Failed (nil for any other),
// in the words of its Event. It is pure.
func upgradeAlert(kind string, cr kinds.Object, prev upgrade.Phase, d upgrade.Decision) *alert.Event {
	next := d.Phase()
	if next == prev || (next != upgrade.RollingBack && next != upgrade.Failed) {
		return nil
	}
	summary := d.Reason
	if d.Event != nil {
		summary = d.Event.Message
	}
	target := ""
	if d.Upgrade != nil {
		target = d.Upgrade.TargetImage
	}
	obj := kind + " " + cr.GetNamespace() + "/" + cr.GetName()
	return &alert.Event{Kind: alert.UpgradeRolledBack, Warning: true, Object: obj,
		Summary: string(next) + ": " + summary + "; production runs " + d.Image,
		Key:     string(alert.UpgradeRolledBack) + "|" + obj + "|" + target + "|" + string(next)}
}

// buildAt builds the CR as if its spec named image: every child, the Deployment's image, its
// version label and HANZO_VERSION then say what actually runs.
func (r *KindReconciler) buildAt(cr kinds.Object, image string) ([]*unstructured.Unstructured, error) {
	cp, ok := cr.DeepCopyObject().(kinds.Object)
	if !ok {
		return nil, fmt.Errorf("copy %s", klog.KObj(cr))
	}
	spec := r.Entry.ServiceSpec(cp)
	repo, tag := kinds.ImageSpecParts(image)
	img := v1.ImageSpec{Repository: repo, Tag: tag}
	if spec.Image != nil {
		img.PullPolicy = spec.Image.PullPolicy
		*spec.Image = img // through the pointer into the copy (a HanzoService's converted spec)
	} else {
		spec.Image = &img
	}
	objs, err := r.Entry.Build(cp, r.Context)
	if err == nil {
		err = normalize.UnstructuredList(objs)
	}
	if err != nil {
		return nil, fmt.Errorf("build %s at %s: %w", klog.KObj(cr), image, err)
	}
	return objs, nil
}

func findDeployment(objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			return nil
		}
		return d
	}
	return nil
}

// preflightOutcome reads the pre-flight pod; an absent pod or a read error is Booting (the
// deadline fails it closed).
func (r *KindReconciler) preflightOutcome(ctx context.Context, cr kinds.Object, u *v1.UpgradeStatus) (upgrade.Boot, string) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cr.GetNamespace(), Name: u.PreflightPod}, pod); err != nil {
		return upgrade.Booting, ""
	}
	if pod.Labels[upgrade.LabelPreflightTarget] != upgrade.TargetHash(u.TargetImage) || !ownedBy(pod, cr) {
		return upgrade.Booting, "" // not ours, or another target's
	}
	return upgrade.BootOutcome(pod)
}

// crashlooping: a pod of the live Deployment running the target crash-loops.
func (r *KindReconciler) crashlooping(ctx context.Context, live *appsv1.Deployment, target string) (bool, error) {
	if live.Spec.Selector == nil || len(live.Spec.Selector.MatchLabels) == 0 {
		return false, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(live.Namespace), client.MatchingLabels(live.Spec.Selector.MatchLabels)); err != nil {
		return false, fmt.Errorf("list pods of %s: %w", klog.KObj(live), err)
	}
	return upgrade.AnyCrashLooping(pods.Items, target), nil
}

func ownedBy(o metav1.Object, cr kinds.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == cr.GetUID() {
			return true
		}
	}
	return false
}

// convergePreflight creates the missing resources of the current pre-flight (the egress
// policy first) and deletes those of other targets. Leaving Preflighting, nothing is deleted in
// the same reconcile: the pre-flight's resources go once the status that left it is stored (the
// next reconcile), so a restart between the two finds the very pod the decision was made on.
func (r *KindReconciler) convergePreflight(ctx context.Context, cr kinds.Object, spec *v1.ServiceSpec, dep *appsv1.Deployment, prev upgradeState, d upgrade.Decision) error {
	want := d.WantPreflight()
	if !want {
		if prev.Upgrade == nil || upgrade.Phase(prev.Upgrade.Phase) == upgrade.Preflighting {
			return nil // nothing can be left but orphans (the collector's), or not yet
		}
		return r.sweepPreflight(ctx, cr, "")
	}
	if err := r.sweepPreflight(ctx, cr, upgrade.TargetHash(d.Upgrade.TargetImage)); err != nil {
		return err
	}
	gvk := r.Entry.GroupVersionKind(r.Context.APIGroup)
	objs, err := upgrade.Build(upgrade.Request{
		Owner:  upgrade.Owner{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: cr.GetName(), Namespace: cr.GetNamespace(), UID: cr.GetUID()},
		Target: d.Upgrade.TargetImage, Spec: spec, Template: &dep.Spec.Template.Spec,
	})
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx)
	for _, o := range objs {
		err := r.Upgrades.Client.Create(ctx, o, client.FieldOwner(kinds.ManagerUpgrade))
		switch {
		case err == nil:
			log.Info("Created pre-flight resource", "object", apply.RefOf(o).String())
		case apierrors.IsAlreadyExists(err):
		default:
			// Without the snapshot the clone never binds and the pod never starts: the
			// pre-flight deadline fails it closed. Nothing runs against live data.
			log.Info("Pre-flight resource not created", "object", apply.RefOf(o).String(), "reason", err.Error())
		}
	}
	return nil
}

// sweepPreflight deletes this CR's pre-flight resources whose target hash is not keep (all
// of them when keep is empty). Kinds the cluster does not serve are skipped.
func (r *KindReconciler) sweepPreflight(ctx context.Context, cr kinds.Object, keep string) error {
	for _, gvk := range preflightKinds {
		if r.Upgrades.Served != nil && !r.Upgrades.Served(gvk) {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Upgrades.Client.List(ctx, list, client.InNamespace(cr.GetNamespace()),
			client.MatchingLabels{upgrade.LabelPreflightOf: cr.GetName()}); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return fmt.Errorf("list pre-flight %s of %s: %w", gvk.Kind, klog.KObj(cr), err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if !ownedBy(o, cr) || (keep != "" && o.GetLabels()[upgrade.LabelPreflightTarget] == keep) {
				continue
			}
			if err := deletePreflight(ctx, r.Upgrades.Client, o); err != nil {
				return err
			}
			logr.FromContextOrDiscard(ctx).Info("Deleted pre-flight resource", "object", apply.RefOf(o).String())
		}
	}
	return nil
}

func deletePreflight(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	err := c.Delete(ctx, o, client.Preconditions{UID: ptrUID(o.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s: %w", apply.RefOf(o), err)
	}
	return nil
}

// latchedGeneration is the generation the machine last saw a Failed latch at: the
// observedGeneration of the UpgradeFailed condition (the machine on) or of UpgradeLatched (off
// since); 0 when neither is there.
func latchedGeneration(conds []metav1.Condition) int64 {
	for _, t := range []string{ConditionUpgradeLatched, ConditionUpgradeFailed} {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionTrue {
			return c.ObservedGeneration
		}
	}
	return 0
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// withCondition returns conds (Summarize's, which carry the previous ones) with the upgrade
// machine's conditions replaced by c (none when c is nil), its lastTransitionTime kept from
// previous when the status did not flip, sorted by type as Summarize sorts them.
func withCondition(conds, previous []metav1.Condition, c *metav1.Condition, gen int64, now metav1.Time) []metav1.Condition {
	out := slices.DeleteFunc(slices.Clone(conds), func(x metav1.Condition) bool {
		return x.Type == ConditionUpgradePolicyIgnored || x.Type == ConditionUpgradeRefused || x.Type == ConditionUpgradeFailed ||
			x.Type == ConditionUpgradeLatched
	})
	if c != nil {
		c.ObservedGeneration, c.LastTransitionTime = gen, now
		if p := meta.FindStatusCondition(previous, c.Type); p != nil && p.Status == c.Status {
			c.LastTransitionTime = p.LastTransitionTime
		}
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
