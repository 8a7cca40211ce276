package kinds

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The workload defaults of wire-contract §1.
const (
	minReadySeconds               = 10
	terminationGracePeriodSeconds = 30
	probeTimeoutSeconds           = 3
	probeFailureThreshold         = 6
	defaultProbeDelay             = 5
	defaultProbePeriod            = 10
	defaultReadinessDelay         = 10
	defaultProbePath              = "/health"
	hostnameTopologyKey           = "kubernetes.io/hostname"
	versionEnv                    = "HANZO_VERSION"
)

// The GVKs of the children.
var (
	gvkDeployment     = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvkStatefulSet    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	gvkService        = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	gvkConfigMap      = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gvkIngress        = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	gvkNetworkPolicy  = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}
	gvkHPA            = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	gvkPDB            = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	gvkKMSSecret      = schema.GroupVersionKind{Group: "kms." + PlaceholderGroup, Version: v1.Version, Kind: "KMSSecret"}
	preStopSleep      = []string{"/bin/sh", "-c", "sleep 5"}
	serviceOwns       = []schema.GroupVersionKind{gvkDeployment, gvkService, gvkIngress, gvkHPA, gvkPDB, gvkNetworkPolicy, gvkKMSSecret, gvkConfigMap}
	datastoreOwns     = []schema.GroupVersionKind{gvkStatefulSet, gvkService, gvkKMSSecret}
	statefulOwns      = []schema.GroupVersionKind{gvkStatefulSet, gvkService}
	deploymentSvcOwns = []schema.GroupVersionKind{gvkDeployment, gvkService}
	appOwns           = append(slices.Clone(serviceOwns), gvkStatefulSet)
	gatewayOwns       = []schema.GroupVersionKind{gvkConfigMap, gvkDeployment, gvkService, gvkIngress}
	// workloadKinds are the owned kinds that run a Kind's pods: an Entry's Workloads are
	// those of its Owns.
	workloadKinds = []schema.GroupKind{gvkDeployment.GroupKind(), gvkStatefulSet.GroupKind()}
)

// imageRef is repository[:tag].
func imageRef(img *v1.ImageSpec) string {
	if img == nil {
		return ""
	}
	if img.Tag == "" {
		return img.Repository
	}
	return img.Repository + ":" + img.Tag
}

func imageTag(img *v1.ImageSpec) string {
	if img == nil {
		return ""
	}
	return img.Tag
}

func pullPolicy(img *v1.ImageSpec) corev1.PullPolicy {
	if img == nil {
		return ""
	}
	return img.PullPolicy
}

// probe renders a ProbeSpec with exactly one handler: exec, then tcpSocket, then httpGet (only
// with a port; the path defaults to /health). No usable handler gives no probe.
func probe(p *v1.ProbeSpec) *corev1.Probe {
	if p == nil {
		return nil
	}
	var h corev1.ProbeHandler
	switch {
	case p.Exec != nil:
		h.Exec = &corev1.ExecAction{Command: p.Exec.Command}
	case p.TCPSocket != nil:
		h.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(p.TCPSocket.Port)}
	case p.Port > 0:
		path := p.Path
		if path == "" {
			path = defaultProbePath
		}
		h.HTTPGet = &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(p.Port)}
	default:
		return nil
	}
	delay, period := p.InitialDelaySeconds, p.PeriodSeconds
	if delay == 0 {
		delay = defaultProbeDelay
	}
	if period == 0 {
		period = defaultProbePeriod
	}
	return &corev1.Probe{
		ProbeHandler:        h,
		InitialDelaySeconds: delay,
		PeriodSeconds:       period,
		TimeoutSeconds:      probeTimeoutSeconds,
		FailureThreshold:    probeFailureThreshold,
	}
}

// readinessProbe is the declared probe, else a TCP probe on the first port; a port-less
// workload gets none.
func readinessProbe(p *v1.ProbeSpec, ports []v1.ServicePort) *corev1.Probe {
	if p != nil {
		return probe(p)
	}
	if len(ports) == 0 {
		return nil
	}
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ports[0].ContainerPort)}},
		InitialDelaySeconds: defaultReadinessDelay,
		PeriodSeconds:       defaultProbePeriod,
		TimeoutSeconds:      probeTimeoutSeconds,
		FailureThreshold:    probeFailureThreshold,
		SuccessThreshold:    1,
	}
}

func containerPorts(ports []v1.ServicePort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ports {
		out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: p.Protocol})
	}
	return out
}

func servicePorts(ports []v1.ServicePort) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, p := range ports {
		port := p.ContainerPort
		if p.ServicePort != nil {
			port = *p.ServicePort
		}
		out = append(out, corev1.ServicePort{Name: p.Name, Port: port, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: p.Protocol})
	}
	return out
}

// withVersionEnv appends HANZO_VERSION=<tag> unless env sets it or there is no tag.
func withVersionEnv(env []corev1.EnvVar, tag string) []corev1.EnvVar {
	if tag == "" || slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == versionEnv }) {
		return env
	}
	return append(slices.Clone(env), corev1.EnvVar{Name: versionEnv, Value: tag})
}

// withPreStop gives every container without a preStop hook `sleep 5`.
func withPreStop(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		c := &cs[i]
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			continue
		}
		if c.Lifecycle == nil {
			c.Lifecycle = &corev1.Lifecycle{}
		}
		c.Lifecycle.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: slices.Clone(preStopSleep)}}
	}
	return cs
}

// podSecurityContext folds the structured context and the legacy fsGroup: the structured fsGroup
// wins, and fsGroupChangePolicy is OnRootMismatch whenever an fsGroup is in effect and none is
// given. Neither set gives nil.
func podSecurityContext(sc *corev1.PodSecurityContext, fsGroup *int64) *corev1.PodSecurityContext {
	if sc == nil && fsGroup == nil {
		return nil
	}
	out := &corev1.PodSecurityContext{}
	if sc != nil {
		out = sc.DeepCopy()
	}
	if out.FSGroup == nil && fsGroup != nil {
		out.FSGroup = ptr.To(*fsGroup)
	}
	if out.FSGroup != nil && out.FSGroupChangePolicy == nil {
		out.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	}
	return out
}

// topologySpread spreads more than one replica across hosts, softly.
func topologySpread(replicas int32, sel map[string]string) []corev1.TopologySpreadConstraint {
	if replicas <= 1 {
		return nil
	}
	return []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       hostnameTopologyKey,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: sel},
	}}
}

// clone deep-copies the user-given containers so that builders never alias the CR.
func cloneContainers(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, 0, len(cs))
	for i := range cs {
		out = append(out, *cs[i].DeepCopy())
	}
	return out
}

func deref32(p *int32, def int32) int32 {
	if p != nil {
		return *p
	}
	return def
}

// toUnstructured converts a typed child to the unstructured form the appliers take, with its
// GVK set and the fields a typed zero value adds (creationTimestamp: null, status: {}) removed.
func toUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", gvk.Kind, err)
	}
	delete(m, "status")
	prune(m)
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// prune removes null values and empty status/resources/strategy-like maps left by zero values.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 && (k == "status" || k == "resources" || k == "metadata") {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

// objects converts typed children in order.
func objects(children ...child) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(children))
	for _, c := range children {
		u, err := toUnstructured(c.obj, c.gvk)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// child is a typed child with its GVK.
type child struct {
	obj runtime.Object
	gvk schema.GroupVersionKind
}
