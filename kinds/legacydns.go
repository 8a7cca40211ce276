package kinds

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The Go operator's HanzoDNS object set (wire-contract §6, "Go v1alpha1 HanzoDNS").
const (
	legacyDNSComponent   = "dns"
	legacyDNSCorefileKey = "Corefile"
	legacyDNSHealthPort  = 8080
	legacyDNSServicePort = 53
	legacyDNSAPIService  = 80
)

// legacyDNSOwns are the kinds the Go operator's HanzoDNS children have.
var legacyDNSOwns = []schema.GroupVersionKind{gvkConfigMap, gvkDeployment, gvkService}

// buildLegacyDNS renders a v1alpha1 HanzoDNS as the Go operator did, so a cutover keeps the
// objects such CRs made in clusters: ConfigMap <cr>-corefile (key Corefile), Deployment
// <cr>-coredns (container coredns, -conf /etc/coredns/Corefile, ports dns-tcp, dns-udp, api,
// HTTP probes /health on 8080, the Corefile mounted, OIDC env), Service <cr>-dns (53 TCP and
// UDP to the named ports) and Service <cr>-api (80 to api). Labels are the standard set
// (component dns) with spec.labels; the selector is name, instance and component. The v1
// DNS Kind keeps the Rust shape (buildDNS).
func buildLegacyDNS(o owner, s *v1.DNSSpec) ([]*unstructured.Unstructured, error) {
	image, replicas, api, dnsPort := defaultDNSImage, int32(defaultDNSReplicas), int32(defaultDNSAPIPort), int32(defaultDNSPort)
	var resources corev1.ResourceRequirements
	if c := s.CoreDNS; c != nil {
		if c.Replicas != nil {
			replicas = *c.Replicas
		}
		if c.Image != "" {
			image = c.Image
		}
		if c.APIPort > 0 {
			api = c.APIPort
		}
		if c.DNSPort > 0 {
			dnsPort = c.DNSPort
		}
		if c.Resources != nil {
			resources = corev1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
		}
	}
	labels := withLabels(standardLabels(o.Name, legacyDNSComponent, "", ""), s.Labels)
	selector := selectorLabels(o.Name)
	selector[LabelComponent] = legacyDNSComponent
	corefileName := o.Name + "-corefile"

	cm := &corev1.ConfigMap{ObjectMeta: o.meta(corefileName, maps.Clone(labels)),
		Data: map[string]string{legacyDNSCorefileKey: legacyCorefile(api)}}

	probe := func(delay, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(legacyDNSHealthPort)}},
			InitialDelaySeconds: delay, PeriodSeconds: period}
	}
	container := corev1.Container{
		Name:  "coredns",
		Image: image,
		Args:  []string{"-conf", "/etc/coredns/Corefile"},
		Ports: []corev1.ContainerPort{
			{Name: "dns-tcp", ContainerPort: dnsPort, Protocol: corev1.ProtocolTCP},
			{Name: "dns-udp", ContainerPort: dnsPort, Protocol: corev1.ProtocolUDP},
			{Name: "api", ContainerPort: api, Protocol: corev1.ProtocolTCP},
		},
		Resources:      resources,
		ReadinessProbe: probe(5, 10),
		LivenessProbe:  probe(10, 30),
		VolumeMounts:   []corev1.VolumeMount{{Name: "corefile", MountPath: "/etc/coredns", ReadOnly: true}},
	}
	if oidc := s.OIDC; oidc != nil && oidc.Enabled {
		container.Env = append(container.Env, corev1.EnvVar{Name: "HANZO_DNS_OIDC_ISSUER", Value: oidc.Issuer})
		if oidc.Audience != "" {
			container.Env = append(container.Env, corev1.EnvVar{Name: "HANZO_DNS_OIDC_AUDIENCE", Value: oidc.Audience})
		}
	}
	dep := &appsv1.Deployment{ObjectMeta: o.meta(o.Name+"-coredns", maps.Clone(labels)), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas),
		Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{container},
				Volumes: []corev1.Volume{{Name: "corefile", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: corefileName}}}}},
			},
		},
	}}
	dnsSvc := &corev1.Service{ObjectMeta: o.meta(o.Name+"-dns", maps.Clone(labels)), Spec: corev1.ServiceSpec{
		Selector: maps.Clone(selector),
		Ports: []corev1.ServicePort{
			{Name: "dns-tcp", Port: legacyDNSServicePort, TargetPort: intstr.FromString("dns-tcp"), Protocol: corev1.ProtocolTCP},
			{Name: "dns-udp", Port: legacyDNSServicePort, TargetPort: intstr.FromString("dns-udp"), Protocol: corev1.ProtocolUDP},
		},
	}}
	apiSvc := &corev1.Service{ObjectMeta: o.meta(o.Name+"-api", maps.Clone(labels)), Spec: corev1.ServiceSpec{
		Selector: maps.Clone(selector),
		Ports:    []corev1.ServicePort{{Name: "api", Port: legacyDNSAPIService, TargetPort: intstr.FromString("api"), Protocol: corev1.ProtocolTCP}},
	}}
	return objects(child{cm, gvkConfigMap}, child{dep, gvkDeployment}, child{dnsSvc, gvkService}, child{apiSvc, gvkService})
}

// legacyCorefile is the Go operator's Corefile: the hanzodns plugin on the API port, health
// on 8080, ready on 8181, metrics on 9153.
func legacyCorefile(apiPort int32) string {
	return fmt.Sprintf(". {\n    hanzodns :%d\n    health :8080\n    ready :8181\n    prometheus :9153\n    log\n    errors\n}\n", apiPort)
}
