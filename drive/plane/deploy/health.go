package deploy

import (
	"fmt"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// healthOrder is gitops-engine's worst-of order, most healthy first.
var healthOrder = map[string]int{
	HealthHealthy: 0, HealthSuspended: 1, HealthProgressing: 2, HealthMissing: 3, HealthDegraded: 4, HealthUnknown: 5,
}

// Worse reports whether health a is worse than b.
func Worse(a, b string) bool { return healthOrder[a] > healthOrder[b] }

// ResourceHealth is the health of one live object by gitops-engine's per-kind rules; nil for a
// kind that has no built-in check (ConfigMap, PDB, NetworkPolicy, …), as in Argo CD. It is
// pure.
func ResourceHealth(u *unstructured.Unstructured) *HealthStatus {
	if u.GetDeletionTimestamp() != nil {
		return &HealthStatus{Status: HealthProgressing, Message: "Pending deletion"}
	}
	gk := u.GroupVersionKind().GroupKind()
	switch gk.Group + "/" + gk.Kind {
	case "apps/Deployment":
		return deploymentHealth(u)
	case "apps/StatefulSet":
		return statefulSetHealth(u)
	case "apps/ReplicaSet":
		return replicaSetHealth(u)
	case "apps/DaemonSet":
		return daemonSetHealth(u)
	case "networking.k8s.io/Ingress", "extensions/Ingress":
		if ing, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress"); len(ing) > 0 {
			return &HealthStatus{Status: HealthHealthy}
		}
		return &HealthStatus{Status: HealthProgressing}
	case "/PersistentVolumeClaim":
		switch phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase {
		case "Bound":
			return &HealthStatus{Status: HealthHealthy}
		case "Pending":
			return &HealthStatus{Status: HealthProgressing}
		case "Lost":
			return &HealthStatus{Status: HealthDegraded}
		default:
			return &HealthStatus{Status: HealthUnknown}
		}
	case "/Service":
		if t, _, _ := unstructured.NestedString(u.Object, "spec", "type"); t == "LoadBalancer" {
			if ing, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress"); len(ing) == 0 {
				return &HealthStatus{Status: HealthProgressing}
			}
		}
		return &HealthStatus{Status: HealthHealthy}
	case "/Pod":
		return podHealth(u)
	case "batch/Job", "autoscaling/HorizontalPodAutoscaler":
		return kstatusHealth(u)
	}
	return nil
}

func num(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
}

func specReplicas(u *unstructured.Unstructured) int64 {
	v, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return v
}

func deploymentHealth(u *unstructured.Unstructured) *HealthStatus {
	if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); paused {
		return &HealthStatus{Status: HealthSuspended, Message: "Deployment is paused"}
	}
	if u.GetGeneration() > num(u, "status", "observedGeneration") {
		return &HealthStatus{Status: HealthProgressing, Message: "Waiting for rollout to finish: observed deployment generation less than desired generation"}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Progressing" && m["reason"] == "ProgressDeadlineExceeded" {
			return &HealthStatus{Status: HealthDegraded, Message: fmt.Sprintf("Deployment %q exceeded its progress deadline", u.GetName())}
		}
	}
	want, updated := specReplicas(u), num(u, "status", "updatedReplicas")
	replicas, available := num(u, "status", "replicas"), num(u, "status", "availableReplicas")
	switch {
	case updated < want:
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for rollout to finish: %d out of %d new replicas have been updated...", updated, want)}
	case replicas > updated:
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for rollout to finish: %d old replicas are pending termination...", replicas-updated)}
	case available < updated:
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for rollout to finish: %d of %d updated replicas are available...", available, updated)}
	}
	return &HealthStatus{Status: HealthHealthy}
}

func statefulSetHealth(u *unstructured.Unstructured) *HealthStatus {
	observed := num(u, "status", "observedGeneration")
	if observed == 0 || u.GetGeneration() > observed {
		return &HealthStatus{Status: HealthProgressing, Message: "Waiting for statefulset spec update to be observed..."}
	}
	want, ready := specReplicas(u), num(u, "status", "readyReplicas")
	if ready < want {
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for %d pods to be ready...", want-ready)}
	}
	strategy, _, _ := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type")
	if strategy == "OnDelete" {
		return &HealthStatus{Status: HealthHealthy, Message: "statefulset has OnDelete strategy, not tracking rollout"}
	}
	if partition, found, _ := unstructured.NestedInt64(u.Object, "spec", "updateStrategy", "rollingUpdate", "partition"); found && partition > 0 {
		if updated := num(u, "status", "updatedReplicas"); updated < want-partition {
			return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", updated, want-partition)}
		}
		return &HealthStatus{Status: HealthHealthy, Message: "partitioned roll out complete"}
	}
	cur, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision")
	upd, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision")
	if upd != cur {
		return &HealthStatus{Status: HealthProgressing, Message: "waiting for statefulset rolling update to complete"}
	}
	return &HealthStatus{Status: HealthHealthy}
}

func replicaSetHealth(u *unstructured.Unstructured) *HealthStatus {
	if u.GetGeneration() > num(u, "status", "observedGeneration") {
		return &HealthStatus{Status: HealthProgressing, Message: "Waiting for rollout to finish: observed replica set generation less than desired generation"}
	}
	if want, avail := specReplicas(u), num(u, "status", "availableReplicas"); avail < want {
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for rollout to finish: %d out of %d new replicas are available...", avail, want)}
	}
	return &HealthStatus{Status: HealthHealthy}
}

func daemonSetHealth(u *unstructured.Unstructured) *HealthStatus {
	if u.GetGeneration() > num(u, "status", "observedGeneration") {
		return &HealthStatus{Status: HealthProgressing, Message: "Waiting for rollout to finish: observed daemon set generation less than desired generation"}
	}
	want := num(u, "status", "desiredNumberScheduled")
	if upd := num(u, "status", "updatedNumberScheduled"); upd < want {
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", u.GetName(), upd, want)}
	}
	if avail := num(u, "status", "numberAvailable"); avail < want {
		return &HealthStatus{Status: HealthProgressing, Message: fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", u.GetName(), avail, want)}
	}
	return &HealthStatus{Status: HealthHealthy}
}

func podHealth(u *unstructured.Unstructured) *HealthStatus {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "containerStatuses")
	for _, s := range statuses {
		m, _ := s.(map[string]any)
		if w, ok, _ := unstructured.NestedMap(m, "state", "waiting"); ok {
			reason, _ := w["reason"].(string)
			switch reason {
			case "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError", "InvalidImageName", "CreateContainerError":
				msg, _ := w["message"].(string)
				if msg == "" {
					msg = reason
				}
				return &HealthStatus{Status: HealthDegraded, Message: msg}
			}
		}
	}
	switch phase {
	case "Succeeded":
		return &HealthStatus{Status: HealthHealthy}
	case "Failed":
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		return &HealthStatus{Status: HealthDegraded, Message: msg}
	case "Running":
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" && m["status"] == "True" {
				return &HealthStatus{Status: HealthHealthy}
			}
		}
		return &HealthStatus{Status: HealthProgressing}
	case "Pending":
		return &HealthStatus{Status: HealthProgressing}
	}
	return &HealthStatus{Status: HealthUnknown}
}

// kstatusHealth maps kstatus onto the Argo vocabulary: for the kinds whose gitops-engine rule
// kstatus implements (Job, HPA) and for our own CRs, whose conditions are kstatus's.
func kstatusHealth(u *unstructured.Unstructured) *HealthStatus {
	res, err := kstatus.Compute(u)
	if err != nil {
		return &HealthStatus{Status: HealthUnknown, Message: err.Error()}
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return &HealthStatus{Status: HealthHealthy, Message: res.Message}
	case kstatus.InProgressStatus, kstatus.TerminatingStatus:
		return &HealthStatus{Status: HealthProgressing, Message: res.Message}
	case kstatus.FailedStatus:
		return &HealthStatus{Status: HealthDegraded, Message: res.Message}
	case kstatus.NotFoundStatus:
		return &HealthStatus{Status: HealthMissing, Message: res.Message}
	}
	return &HealthStatus{Status: HealthUnknown, Message: res.Message}
}
