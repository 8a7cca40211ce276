package kinds

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// ReasonNotImplemented: nothing in this operator acts for the Kind (KMSSecret: its projector
// is not part of it); the builder materializes nothing and callers must not prune what exists
// (Pending).
const ReasonNotImplemented = "NotImplemented"

// ReasonHandledByLoop: a loop of this operator acts for the Kind (Entry.Loop), not the object
// graph; the message names the loop and says whether it is enabled in this process (Pending,
// nothing materialized, nothing pruned).
const ReasonHandledByLoop = "HandledByLoop"

// nothing is the builder of Kinds that materialize no cluster objects by design.
func nothing[T Object](T, owner) ([]*unstructured.Unstructured, error) { return nil, nil }

// loopLater is the builder of Kinds that materialize no cluster objects because a loop
// outside the object graph acts for them, and that loop is not in this operator yet: the
// CR stays Pending (NotImplemented) and says which loop, rather than reporting Ready while
// nothing acts on it.
func loopLater[T Object](loop string) func(T, owner) ([]*unstructured.Unstructured, error) {
	return func(_ T, o owner) ([]*unstructured.Unstructured, error) {
		return nil, &Halt{Phase: v1.PhasePending, Reason: ReasonNotImplemented,
			Message: fmt.Sprintf("%s %s/%s: nothing acts on it yet: %s is not part of this operator", o.Kind, o.Namespace, o.Name, loop)}
	}
}

// LoopMessage is what a Kind that the `operator run --controllers` loop name acts for says
// (what describes that loop): "handled by the <name> loop (enabled|off)", enabled when this
// process runs it (Context.Loops). Pure.
func LoopMessage(kind, namespace, name, loop, what string, enabled bool) string {
	if enabled {
		return fmt.Sprintf("%s %s/%s: handled by the %s loop (enabled): %s acts for it and owns its status", kind, namespace, name, loop, what)
	}
	return fmt.Sprintf("%s %s/%s: handled by the %s loop (off): %s does not run in this process (operator run --controllers ...,%s)", kind, namespace, name, loop, what, loop)
}

// loopKind is the Entry of a Kind the loop name acts for (Entry.Loop; what describes it): it
// materializes nothing and halts Pending (HandledByLoop) saying whether that loop is enabled
// in the Context. Where the loop runs, the Kind controller is not started for the Kind (the
// loop owns its status), so a Kind controller shows "off"; `operator render` and `diff` run
// no loop and show "off" as well.
func loopKind[T Object](kind string, newT func() T, name, what string) Entry {
	e := canonicalWith(kind, newT, func(_ T, o owner, c Context) (built, error) {
		return nil, &Halt{Phase: v1.PhasePending, Reason: ReasonHandledByLoop,
			Message: LoopMessage(o.Kind, o.Namespace, o.Name, name, what, c.LoopEnabled(name))}
	})
	e.Loop = name
	return e
}

// MPC defaults (wire-contract §11).
const (
	defaultMPCP2PPort = 4000
	defaultMPCAPIPort = 8080
)

// buildMPC renders StatefulSet <cr> (component mpc, ports p2p and api, no claim), the headless
// <cr>-hs and the ClusterIP <cr>. Dashboard, cache and ingress are not materialized.
func buildMPC(o owner, s *v1.MPCSpec) ([]*unstructured.Unstructured, error) {
	if s.Replicas < s.Threshold+1 {
		return nil, invalidSpec("MPC %s/%s: replicas %d must be at least threshold+1 (%d)", o.Namespace, o.Name, s.Replicas, s.Threshold+1)
	}
	p2p, api := s.P2PPort, s.APIPort
	if p2p == 0 {
		p2p = defaultMPCP2PPort
	}
	if api == 0 {
		api = defaultMPCAPIPort
	}
	img := s.Image
	labels := withLabels(standardLabels(o.Name, "mpc", "", imageTag(&img)), s.Labels)
	w := &stateful{
		image:            &img,
		replicas:         s.Replicas,
		ports:            []v1.ServicePort{{Name: "p2p", ContainerPort: p2p}, {Name: "api", ContainerPort: api}},
		labels:           labels,
		podAnnotations:   s.Annotations,
		resources:        s.Resources,
		imagePullSecrets: secretRefs(s.ImagePullSecrets),
	}
	return objects(w.children(o, labels)...)
}

// Network defaults (wire-contract §11).
const (
	defaultStakingPort       = 9631
	defaultNodeHTTPPort      = 9630
	defaultNetworkValidators = 3
)

// buildNetwork renders nothing for zero validators; otherwise validatorTemplate is required
// and it renders StatefulSet <cr> (component validator, ports staking and http, claim data when
// storage is set), the headless <cr>-hs and the ClusterIP <cr>.
func buildNetwork(o owner, s *v1.NetworkSpec) ([]*unstructured.Unstructured, error) {
	if s.Validators == 0 {
		return nil, nil
	}
	t := s.ValidatorTemplate
	if t == nil {
		return nil, invalidSpec("Network %s/%s: validatorTemplate is required when validators > 0", o.Namespace, o.Name)
	}
	staking, http := t.StakingPort, t.HTTPPort
	if staking == 0 {
		staking = defaultStakingPort
	}
	if http == 0 {
		http = defaultNodeHTTPPort
	}
	replicas := s.Validators
	if t.Replicas != nil {
		replicas = *t.Replicas
	}
	if replicas == 0 {
		replicas = defaultNetworkValidators
	}
	img := t.Image
	labels := withLabels(standardLabels(o.Name, "validator", "", imageTag(&img)), s.Labels)
	w := &stateful{
		image:            &img,
		replicas:         replicas,
		ports:            []v1.ServicePort{{Name: "staking", ContainerPort: staking}, {Name: "http", ContainerPort: http}},
		storage:          t.Storage,
		mountPath:        "/data",
		labels:           labels,
		podAnnotations:   s.Annotations,
		resources:        t.Resources,
		imagePullSecrets: secretRefs(s.ImagePullSecrets),
	}
	return objects(w.children(o, labels)...)
}

// Base defaults (wire-contract §8).
const (
	defaultBaseReplicas  = 3
	defaultBasePort      = 8090
	defaultBaseConsensus = "quasar"
	baseHealthPath       = "/v1/health"
)

// buildBase renders StatefulSet <cr> (component base-ha, claim data, HTTP probes on
// /v1/health) with the BASE_* environment, the headless <cr>-hs and the ClusterIP <cr>.
func buildBase(o owner, s *v1.BaseSpec) ([]*unstructured.Unstructured, error) {
	replicas := deref32(s.Replicas, defaultBaseReplicas)
	port := s.Port
	if port == 0 {
		port = defaultBasePort
	}
	consensus := s.Consensus
	if consensus == "" {
		consensus = defaultBaseConsensus
	}
	env := append(cloneEnv(s.Env),
		corev1.EnvVar{Name: "BASE_PORT", Value: strconv.Itoa(int(port))},
		corev1.EnvVar{Name: "BASE_REPLICAS", Value: strconv.Itoa(int(replicas))},
		corev1.EnvVar{Name: "BASE_CONSENSUS", Value: consensus},
		corev1.EnvVar{Name: "BASE_HEADLESS_SERVICE", Value: o.Name + headlessSuffix + "." + o.Namespace + ".svc.cluster.local"},
	)
	if s.IAMApp != "" {
		env = append(env, corev1.EnvVar{Name: "IAM_APP", Value: s.IAMApp})
	}
	img := s.Image
	labels := standardLabels(o.Name, "base-ha", s.PartOf, imageTag(&img))
	httpProbe := func(period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: baseHealthPath, Port: intstr.FromInt32(port)}},
			InitialDelaySeconds: defaultProbeDelay,
			PeriodSeconds:       period,
			TimeoutSeconds:      probeTimeoutSeconds,
			FailureThreshold:    probeFailureThreshold,
		}
	}
	storage := s.Storage
	w := &stateful{
		image:              &img,
		replicas:           replicas,
		ports:              []v1.ServicePort{{Name: "http", ContainerPort: port}},
		storage:            &storage,
		mountPath:          "/data",
		labels:             labels,
		env:                env,
		envFrom:            s.EnvFrom,
		resources:          s.Resources,
		liveness:           httpProbe(10),
		readiness:          httpProbe(5),
		imagePullSecrets:   s.ImagePullSecrets,
		serviceAccountName: s.ServiceAccountName,
	}
	return objects(w.children(o, maps.Clone(labels))...)
}

func cloneEnv(env []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env))
	for i := range env {
		out = append(out, *env[i].DeepCopy())
	}
	return out
}
