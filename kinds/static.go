package kinds

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// DefaultStaticServerImage serves a Static's ConfigMap when Context.StaticServerImage is
// empty: nginx as an unprivileged user (uid 101), listening on 8080, serving
// /usr/share/nginx/html, writing only to /tmp.
const DefaultStaticServerImage = "docker.io/nginxinc/nginx-unprivileged:1.27.3-alpine"

// The static server's port, document root and scratch dir.
const (
	staticPort = 8080
	staticRoot = "/usr/share/nginx/html"
	staticUID  = 101
)

// buildStatic materializes a Static as a Service-shaped workload (the canonical Kind table:
// an App-shaped facade over Service): Deployment, Service and, when spec.ingress is enabled,
// the Ingress, all through the Service path. What is served is either spec.image (which
// serves http on 8080 itself) or spec.configMap, mounted read-only as the document root of
// the pinned static server (Context.StaticServerImage), which runs non-root on a read-only
// root filesystem with every capability dropped.
func buildStatic(cr *v1.Static, o owner, c Context) (built, error) {
	s := &cr.Spec
	switch {
	case s.Image != nil && s.ConfigMap != "":
		return nil, invalidSpec("Static %s/%s: name image or configMap, not both (an image serves its own content; a configMap is served by the static server)", o.Namespace, o.Name)
	case s.Image == nil && s.ConfigMap == "":
		return nil, invalidSpec("Static %s/%s: needs configMap (the site's files) or image (a server of its own)", o.Namespace, o.Name)
	case s.Ingress.Enabled && len(s.Ingress.Hosts) == 0:
		return nil, invalidSpec("Static %s/%s: ingress.enabled needs ingress.hosts", o.Namespace, o.Name)
	case s.Ingress.ZeroTrustPolicy != nil && s.Ingress.ZeroTrustPolicy.Enabled:
		return nil, refuse(o, "spec.ingress.zeroTrustPolicy", "the Ingress carries no identity check; put the site behind a Gateway that does")
	}
	ing := s.Ingress.DeepCopy()
	spec := &v1.ServiceSpec{
		Component: "static",
		Replicas:  ptr.To[int32](1),
		Ports:     []v1.ServicePort{{Name: "http", ContainerPort: staticPort}},
		Ingress:   ing,
	}
	if s.Image != nil {
		spec.Image = s.Image.DeepCopy()
		return buildService(o, spec)
	}
	img, err := staticServerImage(c.StaticServerImage)
	if err != nil {
		return nil, err
	}
	spec.Image = img
	spec.Volumes = []corev1.Volume{
		{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.ConfigMap}}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	spec.VolumeMounts = []corev1.VolumeMount{
		{Name: "site", MountPath: staticRoot, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](staticUID),
		RunAsGroup:     ptr.To[int64](staticUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	spec.ContainerSecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	// The kubelet refreshes a ConfigMap volume in place, so an edit of the site is served
	// without a rollout; naming another ConfigMap changes the pod template and rolls it.
	return buildServiceWith(o, spec, serviceOptions{noVersion: true})
}

// ValidateStaticServerImage refuses a static server image that is not pinned (no tag, or
// :latest), as a Static's build would; empty is DefaultStaticServerImage.
func ValidateStaticServerImage(ref string) error {
	_, err := staticServerImage(ref)
	return err
}

// staticServerImage parses the static server's image reference: a tag other than latest, or
// a digest, so the server that runs is the one reviewed.
func staticServerImage(ref string) (*v1.ImageSpec, error) {
	if ref == "" {
		ref = DefaultStaticServerImage
	}
	if strings.Contains(ref, "@sha256:") {
		return &v1.ImageSpec{Repository: ref, PullPolicy: corev1.PullIfNotPresent}, nil
	}
	colon, slash := strings.LastIndex(ref, ":"), strings.LastIndex(ref, "/")
	if colon <= slash || colon == len(ref)-1 {
		return nil, fmt.Errorf("static server image %q names no tag: pin a version or a digest", ref)
	}
	if tag := ref[colon+1:]; tag == "latest" {
		return nil, fmt.Errorf("static server image %q is :latest: pin a version or a digest", ref)
	}
	return &v1.ImageSpec{Repository: ref[:colon], Tag: ref[colon+1:], PullPolicy: corev1.PullIfNotPresent}, nil
}
