package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa/normalize"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// KindReconciler turns the CRs of one Kind into their children: read the CR, build, apply
// under ManagerKinds, delete the children it no longer wants (by owner uid only), observe,
// and write the status once when it changed.
type KindReconciler struct {
	Client   client.Client // cached reads, direct writes
	Applier  *Applier
	Entry    kinds.Entry
	Context  kinds.Context
	Owned    []schema.GroupVersionKind // children GVKs served by this cluster
	Recorder events.EventRecorder
	Now      func() time.Time
}

// Reconcile implements reconcile.Reconciler for one CR.
func (r *KindReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	cr := r.Entry.New()
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cr.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil // children go with the CR through their owner references
	}
	obs := drive.Observation{Generation: cr.GetGeneration(), Now: metav1.NewTime(r.Now())}
	previous, err := readStatus(cr)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs.Previous = previous.Conditions

	desired, err := r.Entry.Build(cr, r.Context)
	if err == nil {
		// The normalization render prints (native defaults such as port protocols), so
		// the controller applies, and owns, exactly what `operator render` shows.
		err = normalize.UnstructuredList(desired)
	}
	if halt, ok := kinds.AsHalt(err); ok {
		obs.Halt = halt // materialize nothing, delete nothing
	} else if err != nil {
		obs.BuildErr = err
	} else {
		results := r.Applier.Apply(ctx, desired)
		r.logResults(ctx, cr, results)
		for _, res := range results {
			switch res.Action {
			case Denied:
				obs.Denied = append(obs.Denied, res.Object.String()+": "+res.Message)
			case Failed:
				if Terminal(res.Err) {
					obs.Rejected = append(obs.Rejected, res.Object.String()+": "+res.Message)
				} else {
					obs.Failed = append(obs.Failed, res.Object.String()+": "+res.Message)
				}
			}
		}
		if len(obs.Denied)+len(obs.Rejected)+len(obs.Failed) == 0 {
			if err := r.prune(ctx, cr, desired); err != nil {
				return ctrl.Result{}, err
			}
		}
		if err := r.observe(ctx, desired, &obs); err != nil {
			return ctrl.Result{}, err
		}
	}
	status := drive.Summarize(obs)
	if err := r.writeStatus(ctx, cr, previous, status); err != nil {
		return ctrl.Result{}, err
	}
	log.V(1).Info("Reconciled", "phase", status.Phase, "message", status.Message)
	switch {
	case len(obs.Failed) > 0:
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	case meta.IsStatusConditionTrue(status.Conditions, drive.ConditionReconciling):
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil // pods do not wake us
	}
	return ctrl.Result{}, nil
}

// logResults writes one line per child that changed, naming who had drifted it.
func (r *KindReconciler) logResults(ctx context.Context, cr kinds.Object, results []Result) {
	log := logr.FromContextOrDiscard(ctx)
	for _, res := range results {
		switch res.Action {
		case Created:
			log.Info("Applied child", "object", res.Object.String(), "action", res.Action)
		case Updated:
			if len(res.DriftedBy) == 0 { // the CR's spec changed
				log.Info("Updated child", "object", res.Object.String(), "action", res.Action)
				continue
			}
			log.Info("Reverted drift", "object", res.Object.String(), "action", res.Action, "driftedBy", res.DriftedBy)
			metricDriftCorrections.WithLabelValues(r.Entry.Kind).Inc()
			if r.Recorder != nil {
				r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, "DriftReverted", "Apply",
					"reverted %s (changed by %s)", res.Object.String(), strings.Join(res.DriftedBy, ", "))
			}
		case Failed, Denied:
			log.Info("Apply failed, retrying", "object", res.Object.String(), "action", res.Action, "reason", res.Message)
			metricApplyErrors.WithLabelValues(r.Entry.Kind).Inc()
		}
	}
}

// prune deletes the children this CR controls that the build no longer produces, such as
// the HPA after autoscaling is turned off. It never touches an object another owner controls.
func (r *KindReconciler) prune(ctx context.Context, cr kinds.Object, desired []*unstructured.Unstructured) error {
	want := map[ObjRef]bool{}
	for _, o := range desired {
		ref := RefOf(o)
		ref.Version = ""
		want[ref] = true
	}
	for _, gvk := range r.Owned {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Client.List(ctx, list, client.InNamespace(cr.GetNamespace())); err != nil {
			return fmt.Errorf("list %s in %s: %w", gvk.Kind, cr.GetNamespace(), err)
		}
		for i := range list.Items {
			child := &list.Items[i]
			ref := RefOf(child)
			ref.Version = ""
			if want[ref] || !controlledBy(child, cr.GetUID()) {
				continue
			}
			err := r.Client.Delete(ctx, child, client.Preconditions{UID: ptrUID(child.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s: %w", ref, err)
			}
			logr.FromContextOrDiscard(ctx).Info("Deleted child, no longer built", "object", ref.String(), "action", Deleted)
		}
	}
	return nil
}

func controlledBy(o metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(o)
	return ref != nil && ref.UID == uid
}

func ptrUID(u types.UID) *types.UID { return &u }

// observe reads the applied children back from the cache and computes their kstatus, the
// main workload's replicas and, while it is not ready, what its pods are stuck on.
func (r *KindReconciler) observe(ctx context.Context, desired []*unstructured.Unstructured, obs *drive.Observation) error {
	for _, d := range desired {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(d.GroupVersionKind())
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
			if apierrors.IsNotFound(err) { // the cache has not seen our apply yet
				obs.Children = append(obs.Children, drive.Child{Ref: RefOf(d).String(), Status: kstatus.InProgressStatus, Message: "not observed yet"})
				continue
			}
			return fmt.Errorf("read %s: %w", RefOf(d), err)
		}
		res, err := kstatus.Compute(live)
		if err != nil {
			return fmt.Errorf("compute status of %s: %w", RefOf(d), err)
		}
		obs.Children = append(obs.Children, drive.Child{Ref: RefOf(d).String(), Status: res.Status, Message: res.Message})
		if k := d.GetKind(); obs.Workload == nil && (k == "Deployment" || k == "StatefulSet") {
			if err := r.observeWorkload(ctx, live, obs); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *KindReconciler) observeWorkload(ctx context.Context, live *unstructured.Unstructured, obs *drive.Observation) error {
	desired, found, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if !found {
		desired = 1
	}
	ready, _, _ := unstructured.NestedInt64(live.Object, "status", "readyReplicas")
	obs.Workload = &drive.Replicas{Desired: int32(desired), Ready: int32(ready)}
	if ready >= desired {
		return nil
	}
	sel, _, _ := unstructured.NestedStringMap(live.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		return nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(live.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		return fmt.Errorf("list pods of %s: %w", RefOf(live), err)
	}
	obs.PodProblem = drive.PodProblem(pods.Items)
	return nil
}

// readStatus extracts the shared status fields of any Kind.
func readStatus(cr kinds.Object) (drive.Status, error) {
	raw, err := json.Marshal(cr)
	if err != nil {
		return drive.Status{}, err
	}
	var s struct {
		Status struct {
			v1.Status     `json:",inline"`
			ReadyReplicas int32 `json:"readyReplicas"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return drive.Status{}, fmt.Errorf("read status of %s: %w", klog.KObj(cr), err)
	}
	return drive.Status{Phase: s.Status.Phase, ObservedGeneration: s.Status.ObservedGeneration,
		Conditions: s.Status.Conditions, Message: s.Status.Message, ReadyReplicas: s.Status.ReadyReplicas}, nil
}

// writeStatus patches the status subresource once, only when the summary changed; an event
// marks a change of the Ready condition.
func (r *KindReconciler) writeStatus(ctx context.Context, cr kinds.Object, previous, next drive.Status) error {
	if drive.Equal(previous, next) {
		return nil
	}
	patch := map[string]any{"status": map[string]any{
		"phase":              next.Phase,
		"observedGeneration": next.ObservedGeneration,
		"conditions":         next.Conditions,
		"message":            nullIfEmpty(next.Message),
		"readyReplicas":      next.ReadyReplicas,
	}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, cr, client.RawPatch(types.MergePatchType, data)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or a newer generation will reconcile again
		}
		return fmt.Errorf("patch status of %s: %w", klog.KObj(cr), err)
	}
	before := meta.FindStatusCondition(previous.Conditions, drive.ConditionReady)
	after := meta.FindStatusCondition(next.Conditions, drive.ConditionReady)
	if r.Recorder != nil && after != nil && (before == nil || before.Status != after.Status || before.Reason != after.Reason) {
		typ := corev1.EventTypeNormal
		if after.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(cr, nil, typ, after.Reason, "Reconcile", "%s", after.Message)
	}
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// errNoKinds is returned by SetupKinds when no Kind of the registry is installed.
var errNoKinds = errors.New("no Kind of the registry is installed in the cluster: install the CRDs first (operator install --crds-only)")
