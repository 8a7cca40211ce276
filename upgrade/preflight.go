package upgrade

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The three labels of every pre-flight resource, and nothing else: never a Service selector
// key (a Service must not route to the candidate) nor a descriptive key a shared selector
// might match.
const (
	LabelPreflightOf     = "hanzo.ai/preflight-of"
	LabelPreflightTarget = "hanzo.ai/preflight-target"
)

// The VolumeSnapshot API (external-snapshotter).
const (
	SnapshotGroup   = "snapshot.storage.k8s.io"
	SnapshotVersion = "v1"
	SnapshotKind    = "VolumeSnapshot"
)

const (
	preflightContainer = "candidate"
	preflightVolume    = "preflight-data"
	// liveDataVolume and replicateVolume are the volumes of the production pod the candidate
	// must never mount (the live claim, and the config of the WAL streamer it does not run).
	liveDataVolume  = "app-db"
	replicateVolume = "replicate-config"
	defaultCloneGi  = "1Gi"
)

// Owner is the CR the pre-flight resources belong to.
type Owner struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	UID        types.UID
}

// Stateful: persistence enabled with storage, so the app's data lives in the claim
// <name>-app-db.
func Stateful(s *v1.ServiceSpec) bool {
	return s != nil && s.Persistence != nil && s.Persistence.Enabled && s.Persistence.Storage != nil
}

// LiveClaim is the claim of a stateful app's live data.
func LiveClaim(name string) string { return name + "-app-db" }

// Refusal is an upgrade the machine will not run: production is held on its running image and
// the condition says why.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// The refusal reasons.
const (
	RefusedLiveVolume    = "PreflightLiveVolume"
	RefusedNoBootEnv     = "PreflightNeedsBootEnv"
	RefusedNoSnapshotAPI = "PreflightNoSnapshotAPI"
)

// Refuse returns why an upgrade of the CR named name must not run, or nil (§3.3): a volume of
// spec.volumes that mounts the live claim (the candidate would write production data); a
// stateful pre-flight without bootEnv (nothing tells the candidate it boots on a clone); a
// stateful pre-flight where the cluster serves no VolumeSnapshot API (it would run against live
// data or not at all).
func Refuse(name string, s *v1.ServiceSpec, c Config, snapshotAPI bool) *Refusal {
	live := LiveClaim(name)
	for _, v := range s.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == live {
			return &Refusal{Reason: RefusedLiveVolume, Message: fmt.Sprintf(
				"spec.volumes[%s] mounts the live claim %s; an upgrade candidate must never see live data, so the upgrade is held", v.Name, live)}
		}
	}
	if !c.Preflight || !Stateful(s) {
		return nil
	}
	var boot []corev1.EnvVar
	if s.UpgradePolicy != nil {
		boot = s.UpgradePolicy.BootEnv
	}
	if len(boot) == 0 {
		return &Refusal{Reason: RefusedNoBootEnv, Message: "a stateful pre-flight needs spec.upgradePolicy.bootEnv " +
			"(what tells the candidate it boots on a clone: no outbound side effects); the upgrade is held"}
	}
	if !snapshotAPI {
		return &Refusal{Reason: RefusedNoSnapshotAPI, Message: "the cluster serves no " + SnapshotGroup + "/" + SnapshotVersion +
			" VolumeSnapshot API, so the pre-flight cannot clone " + live + "; it never runs against live data, and the upgrade is held"}
	}
	return nil
}

// Request is one pre-flight to build.
type Request struct {
	Owner  Owner
	Target string
	// Spec is the CR's service spec (persistence, bootEnv, snapshot class, storage).
	Spec *v1.ServiceSpec
	// Template is the pod spec production would run the target under (the Deployment the
	// builders make for it); the candidate's container is its first container.
	Template *corev1.PodSpec
}

// Labels are exactly the three labels of a pre-flight resource.
func Labels(owner, target string) map[string]string {
	return map[string]string{LabelPreflightOf: owner, LabelPreflightTarget: TargetHash(target), kinds.LabelManagedBy: kinds.ManagedBy}
}

// Build returns the pre-flight resources in the order they must be created: the deny-all
// NetworkPolicy first (the pod is isolated before it exists), then for a stateful app the
// VolumeSnapshot of the live claim and the clone restored from it, then the pod. Every one is
// owned (not controlled) by the CR, so deleting the CR deletes them and the Kind controller's
// prune of the children it controls never touches them.
func Build(r Request) ([]*unstructured.Unstructured, error) {
	if r.Template == nil || len(r.Template.Containers) == 0 {
		return nil, fmt.Errorf("pre-flight of %s/%s: the pod template has no container", r.Owner.Namespace, r.Owner.Name)
	}
	n := NamesOf(r.Owner.Name, r.Target)
	labels := Labels(r.Owner.Name, r.Target)
	var out []runtime.Object
	out = append(out, egressPolicy(r, n, labels))
	stateful := Stateful(r.Spec)
	if stateful {
		out = append(out, snapshot(r, n, labels), clone(r, n, labels))
	}
	out = append(out, pod(r, n, labels, stateful))
	objs := make([]*unstructured.Unstructured, 0, len(out))
	for _, o := range out {
		u, err := toUnstructured(o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
	return objs, nil
}

func (r Request) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.Owner.Namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: r.Owner.APIVersion, Kind: r.Owner.Kind, Name: r.Owner.Name, UID: r.Owner.UID,
	}}}
}

// egressPolicy selects the pre-flight pod only and allows it nothing: no egress (it cannot
// reach production's dependencies, registries of webhooks or the internet) and no ingress.
// NetworkPolicies are additive: a namespace-wide allow would reopen egress.
func egressPolicy(r Request, n Names, labels map[string]string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: r.meta(n.Egress, labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPreflightOf: labels[LabelPreflightOf], LabelPreflightTarget: labels[LabelPreflightTarget]}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

func snapshot(r Request, n Names, labels map[string]string) *unstructured.Unstructured {
	spec := map[string]any{"source": map[string]any{"persistentVolumeClaimName": LiveClaim(r.Owner.Name)}}
	if p := r.Spec.UpgradePolicy; p != nil && p.SnapshotClass != "" {
		spec["volumeSnapshotClassName"] = p.SnapshotClass
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(SnapshotGroup + "/" + SnapshotVersion)
	u.SetKind(SnapshotKind)
	m := r.meta(n.Snapshot, labels)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	u.SetOwnerReferences(m.OwnerReferences)
	return u
}

// clone is a claim restored from the snapshot, of the live claim's class and size.
func clone(r Request, n Names, labels map[string]string) *corev1.PersistentVolumeClaim {
	st := r.Spec.Persistence.Storage
	size := st.Size
	if size.IsZero() {
		size = resource.MustParse(defaultCloneGi)
	}
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: r.meta(n.Clone, labels),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			DataSource:  &corev1.TypedLocalObjectReference{APIGroup: ptr.To(SnapshotGroup), Kind: SnapshotKind, Name: n.Snapshot},
		},
	}
	if st.StorageClassName != "" {
		c.Spec.StorageClassName = ptr.To(st.StorageClassName)
	}
	return c
}

// pod runs the candidate once: the production container's command, env (with bootEnv laid
// over it), envFrom, probe and resources; no sidecar (the WAL streamer would ship the clone's
// writes to the live bucket), no init container, no service-account token, never restarted;
// the clone mounted at the data directory instead of the live claim.
func pod(r Request, n Names, labels map[string]string, stateful bool) *corev1.Pod {
	t := r.Template
	main := t.Containers[0]
	c := corev1.Container{
		Name:            preflightContainer,
		Image:           r.Target,
		ImagePullPolicy: main.ImagePullPolicy,
		Command:         main.Command,
		Args:            main.Args,
		Env:             overlay(main.Env, bootEnv(r.Spec)),
		EnvFrom:         main.EnvFrom,
		Ports:           main.Ports,
		ReadinessProbe:  main.ReadinessProbe,
		Resources:       main.Resources,
		SecurityContext: main.SecurityContext,
	}
	var volumes []corev1.Volume
	for _, m := range main.VolumeMounts {
		if m.Name == liveDataVolume || m.Name == replicateVolume {
			continue
		}
		i := slices.IndexFunc(t.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			continue
		}
		if v := t.Volumes[i]; v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == LiveClaim(r.Owner.Name) {
			continue // Refuse holds such an upgrade; never mount it regardless
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
		if !slices.ContainsFunc(volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			volumes = append(volumes, t.Volumes[i])
		}
	}
	if p := r.Spec.Persistence; p != nil && p.Enabled && p.DataDir != "" {
		data := corev1.Volume{Name: preflightVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if stateful {
			data.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n.Clone}}
		}
		volumes = append(volumes, data)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: preflightVolume, MountPath: p.DataDir})
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: r.meta(n.Pod, labels),
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{c},
			Volumes:                       volumes,
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			ServiceAccountName:            t.ServiceAccountName,
			ImagePullSecrets:              t.ImagePullSecrets,
			SecurityContext:               t.SecurityContext,
			EnableServiceLinks:            ptr.To(false),
			NodeSelector:                  t.NodeSelector,
			Tolerations:                   t.Tolerations,
			PriorityClassName:             t.PriorityClassName,
			TerminationGracePeriodSeconds: t.TerminationGracePeriodSeconds,
		},
	}
}

func bootEnv(s *v1.ServiceSpec) []corev1.EnvVar {
	if s == nil || s.UpgradePolicy == nil {
		return nil
	}
	return s.UpgradePolicy.BootEnv
}

// overlay is env with over laid on it: a variable of over replaces the one of the same name in
// place, the others are appended in order.
func overlay(env, over []corev1.EnvVar) []corev1.EnvVar {
	out := slices.Clone(env)
	for _, o := range over {
		if i := slices.IndexFunc(out, func(e corev1.EnvVar) bool { return e.Name == o.Name }); i >= 0 {
			out[i] = o
			continue
		}
		out = append(out, o)
	}
	return out
}

func toUnstructured(o runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
