package install

import (
	"fmt"
	"maps"
	"path"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// The deploy plane's own Deployment and Service (`install --deploy-plane-separate`).
const (
	// PlaneName names the plane's Deployment and Service.
	PlaneName = OperatorName + "-deploy-plane"
	// PlanePort serves /v1/deploy; the Service exposes it on port 80.
	PlanePort = 8090
)

// PlaneOptions install the deploy plane apart from the controllers: `operator deploy-plane`
// in a Deployment of its own with a Service in front, the git write path of the operator's
// repository (the git source flags of InstallOptions.RunArgs and TokenSecret), so a
// rollback of a CR from git commits there as it does in `operator run`.
type PlaneOptions struct {
	// Replicas of the plane's Deployment; 0 means 1. The plane holds no lease: every replica
	// serves.
	Replicas int32
	// Args are the plane's own flags, each --name=value (--deploy-plane-oidc-issuer … ); the
	// command line checks an issuer is among them.
	Args []string
	// ClientSecret holds the dashboard sign-in's OAuth client secret: mounted at
	// PlaneClientSecretFile and passed as --deploy-plane-oidc-client-secret-file.
	ClientSecret SecretKey
}

// planeGitFlags are the `operator run` flags of InstallOptions.RunArgs the plane takes too:
// those naming the repository its write path commits to.
var planeGitFlags = []string{"git-url", "git-branch", "git-username", "git-timeout", "git-known-hosts-file",
	"github-repository", "github-branch", "github-api-url", "github-timeout",
	"gitops-max-file-bytes", "gitops-max-snapshot-bytes", "gitops-max-files", "gitops-max-documents"}

// planeObjects are the plane's Deployment and Service, none without o.Plane.
func planeObjects(o InstallOptions) []client.Object {
	if o.Plane == nil {
		return nil
	}
	return []client.Object{PlaneService(o), PlaneDeployment(o)}
}

// PlaneDeployment returns the plane's Deployment: `operator deploy-plane` for o.APIGroup, its
// namespace (the webhook relay it stamps) from the downward API, on PlanePort, with the
// operator's ServiceAccount (the plane reads what the controllers read, and writes CRs and
// the relay as they do), the pod hardening of the operator's Deployment, the git token and
// the OAuth client secret mounted read-only. Readiness and liveness are a TCP check of the
// plane's port: every HTTP route of the plane needs a token.
func PlaneDeployment(o InstallOptions) *appsv1.Deployment {
	po := *o.Plane
	base := o
	base.Shards, base.Replicas, base.Controllers, base.RunArgs = 0, 1, nil, nil
	base.TokenSecret, base.WebhookSecret, base.DriveTokenSecret, base.AgentCloudTokenSecret, base.AgentVisorSecret = SecretKey{}, SecretKey{}, SecretKey{}, SecretKey{}, ""
	d := Deployment(base)
	sel := map[string]string{kinds.LabelName: OperatorName, kinds.LabelInstance: PlaneName}
	d.Name = PlaneName
	d.Labels = maps.Clone(d.Labels)
	d.Labels[kinds.LabelInstance] = PlaneName
	d.Spec.Replicas = ptr.To(max(po.Replicas, 1))
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	d.Spec.Template.Labels = maps.Clone(sel)
	// no lease, no single writer: a rolling update keeps the plane serving
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	args := []string{"deploy-plane",
		fmt.Sprintf("--deploy-plane-bind-address=:%d", PlanePort),
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
	}
	for _, a := range o.RunArgs {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		for _, f := range planeGitFlags {
			if name == f {
				args = append(args, a)
			}
		}
		if name == "log-level" {
			args = append(args, a)
		}
	}
	args = append(args, po.Args...)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Name = "deploy-plane"
	volumes := d.Spec.Template.Spec.Volumes
	mount := func(volume string, sk SecretKey, file, flag string) {
		if sk.Name == "" {
			return
		}
		args = append(args, "--"+flag+"="+file)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path.Dir(file), ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: sk.Name, Items: []corev1.KeyToPath{{Key: sk.Key, Path: path.Base(file)}}, DefaultMode: ptr.To[int32](0o440),
		}}})
	}
	mount("gitops-token", o.TokenSecret, TokenFile, "gitops-token-file")
	mount("deploy-plane-oidc", po.ClientSecret, PlaneClientSecretFile, "deploy-plane-oidc-client-secret-file")
	d.Spec.Template.Spec.Volumes = volumes
	c.Args = args
	c.Ports = []corev1.ContainerPort{
		{Name: portPlane, ContainerPort: PlanePort, Protocol: corev1.ProtocolTCP},
		{Name: portMetrics, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
	}
	tcp := func(period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(portPlane)}},
			PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: 3}
	}
	c.LivenessProbe, c.ReadinessProbe = tcp(10), tcp(5)
	return d
}

// PlaneService returns the Service in front of the plane's pods: /v1/deploy on port 80, the
// metrics on MetricsPort.
func PlaneService(o InstallOptions) *corev1.Service {
	labels := operatorLabels()
	labels[kinds.LabelInstance] = PlaneName
	return &corev1.Service{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Service"),
		ObjectMeta: metav1.ObjectMeta{Name: PlaneName, Namespace: o.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{kinds.LabelName: OperatorName, kinds.LabelInstance: PlaneName},
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString(portPlane), Protocol: corev1.ProtocolTCP},
				{Name: portMetrics, Port: MetricsPort, TargetPort: intstr.FromString(portMetrics), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}
