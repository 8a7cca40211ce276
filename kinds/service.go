package kinds

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// Ingress defaults (wire-contract §2.2).
const (
	annotationIngressClass  = "kubernetes.io/ingress.class"
	annotationClusterIssuer = "cert-manager.io/cluster-issuer"
	defaultIngressClass     = "ingress"
	defaultClusterIssuer    = "letsencrypt-prod"
	defaultHPAMaxReplicas   = 10
	defaultIngressPort      = 80
)

// buildService materializes a ServiceSpec (wire-contract §2.2): the Deployment, then the
// Service, Ingress, HPA, PDB, NetworkPolicy, KMSSecrets and replicate ConfigMap its spec asks
// for. Service, every Service-shaped facade and the App service profile build through here.
func buildService(o owner, s *v1.ServiceSpec) ([]*unstructured.Unstructured, error) {
	return buildServiceWith(o, s, serviceOptions{})
}

// serviceOptions are the variations of the Kinds that synthesize a ServiceSpec.
type serviceOptions struct {
	// noVersion drops the version label and HANZO_VERSION.
	noVersion bool
}

func buildServiceWith(o owner, s *v1.ServiceSpec, opt serviceOptions) ([]*unstructured.Unstructured, error) {
	if s.Image == nil || s.Image.Repository == "" {
		return nil, invalidSpec("%s %s/%s has no image.repository; nothing is applied so a live image is never blanked", o.Kind, o.Namespace, o.Name)
	}
	p, err := resolvePersistence(o, s.Persistence)
	if err != nil {
		return nil, err
	}
	version := imageTag(s.Image)
	if opt.noVersion {
		version = ""
	}
	labels := withLabels(standardLabels(o.Name, s.Component, s.PartOf, version), s.Labels)
	children := []child{{deployment(o, s, labels, p, version), gvkDeployment}}
	if len(s.Ports) > 0 {
		children = append(children, child{clusterIPService(o, o.Name, labels, s.Ports, false), gvkService})
		if ing := s.Ingress; ing != nil && ing.Enabled && len(ing.Hosts) > 0 {
			children = append(children, child{serviceIngress(o, ing, labels, primaryPort(s.Ports)), gvkIngress})
		}
	}
	if a := s.Autoscaling; a != nil && a.Enabled {
		children = append(children, child{hpa(o, a, labels), gvkHPA})
	}
	if s.PDB != nil && s.PDB.Enabled {
		children = append(children, child{pdb(o, s.PDB, labels), gvkPDB})
	}
	if np := networkPolicy(o, s.NetworkPolicy, labels); np != nil {
		children = append(children, child{np, gvkNetworkPolicy})
	}
	out, err := objects(children...)
	if err != nil {
		return nil, err
	}
	out = append(out, kmsSecrets(o, s.KMSSecrets, labels)...)
	if p != nil {
		cm, err := replicateConfigMap(o, p, labels)
		if err != nil {
			return nil, err
		}
		out = append(out, cm)
	}
	return out, nil
}

func deployment(o owner, s *v1.ServiceSpec, labels map[string]string, p *persistence, version string) *appsv1.Deployment {
	sel := selectorLabels(o.Name)
	main := corev1.Container{
		Name:            o.Name,
		Image:           imageRef(s.Image),
		ImagePullPolicy: pullPolicy(s.Image),
		Command:         s.Command,
		Args:            s.Args,
		Env:             withVersionEnv(s.Env, version),
		EnvFrom:         s.EnvFrom,
		VolumeMounts:    slices.Clone(s.VolumeMounts),
		Ports:           containerPorts(s.Ports),
		LivenessProbe:   probe(s.LivenessProbe),
		ReadinessProbe:  readinessProbe(s.ReadinessProbe, s.Ports),
		SecurityContext: s.ContainerSecurityContext,
	}
	if s.Resources != nil {
		main.Resources = *s.Resources
	}
	volumes := slices.Clone(s.Volumes)
	containers := append([]corev1.Container{main}, cloneContainers(s.Sidecars)...)
	inits := cloneContainers(s.InitContainers)
	if p != nil {
		containers[0].VolumeMounts = append(containers[0].VolumeMounts, corev1.VolumeMount{Name: appDBVolume, MountPath: p.DataDir})
		containers = append(containers, p.sidecar())
		if init := p.restoreInit(); init != nil {
			inits = append(inits, *init)
		}
		volumes = append(volumes, p.volumes(o.Name)...)
	}
	replicas := deref32(s.Replicas, 1)
	d := &appsv1.Deployment{
		ObjectMeta: o.meta(o.Name, labels),
		Spec: appsv1.DeploymentSpec{
			Selector:        &metav1.LabelSelector{MatchLabels: sel},
			Strategy:        deploymentStrategy(s.Strategy),
			MinReadySeconds: minReadySeconds,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: s.Annotations},
				Spec: corev1.PodSpec{
					InitContainers:                inits,
					Containers:                    withPreStop(containers),
					Volumes:                       volumes,
					ImagePullSecrets:              s.ImagePullSecrets,
					ServiceAccountName:            s.ServiceAccountName,
					SecurityContext:               podSecurityContext(s.SecurityContext, s.FSGroup),
					EnableServiceLinks:            s.EnableServiceLinks,
					NodeSelector:                  s.NodeSelector,
					Tolerations:                   s.Tolerations,
					PriorityClassName:             s.PriorityClassName,
					TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriodSeconds),
					TopologySpreadConstraints:     topologySpread(replicas, sel),
				},
			},
		},
	}
	if s.Autoscaling == nil || !s.Autoscaling.Enabled {
		d.Spec.Replicas = ptr.To(replicas)
	}
	if shouldColocate(s, volumes) {
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
					TopologyKey:   hostnameTopologyKey,
				},
			}},
		}}
	}
	return d
}

func deploymentStrategy(strategy string) appsv1.DeploymentStrategy {
	if strategy == string(appsv1.RecreateDeploymentStrategyType) {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
}

// shouldColocate: surge co-location is opt-in, for RollingUpdate with a mounted PVC only.
func shouldColocate(s *v1.ServiceSpec, volumes []corev1.Volume) bool {
	return s.SurgeColocation && s.Strategy != string(appsv1.RecreateDeploymentStrategyType) &&
		slices.ContainsFunc(volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })
}

// clusterIPService selects the workload's pods on ports; headless sets clusterIP None.
func clusterIPService(o owner, name string, labels map[string]string, ports []v1.ServicePort, headless bool) *corev1.Service {
	return selectingService(o, name, o.Name, labels, ports, headless)
}

// selectingService is a Service named name selecting the pods of the workload named workload.
func selectingService(o owner, name, workload string, labels map[string]string, ports []v1.ServicePort, headless bool) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: o.meta(name, labels),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(workload),
			Ports:    servicePorts(ports),
		},
	}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	return svc
}

// primaryPort is ports[0].servicePort, else its containerPort, else 80.
func primaryPort(ports []v1.ServicePort) int32 {
	if len(ports) == 0 {
		return defaultIngressPort
	}
	if ports[0].ServicePort != nil {
		return *ports[0].ServicePort
	}
	return ports[0].ContainerPort
}

func tlsEnabled(tls *bool) bool { return tls == nil || *tls }

// serviceIngress: the class is always the kubernetes.io/ingress.class annotation, the
// cluster issuer annotates TLS ingresses, and `/` is routed only without pathRules.
func serviceIngress(o owner, s *v1.IngressSpec, labels map[string]string, port int32) *networkingv1.Ingress {
	ann := map[string]string{}
	tls := tlsEnabled(s.TLS)
	if tls {
		issuer := s.ClusterIssuer
		if issuer == "" {
			issuer = defaultClusterIssuer
		}
		ann[annotationClusterIssuer] = issuer
	}
	maps.Copy(ann, s.Annotations)
	switch {
	case s.IngressClassName != "":
		ann[annotationIngressClass] = s.IngressClassName
	case ann[annotationIngressClass] == "":
		ann[annotationIngressClass] = defaultIngressClass
	}
	var paths []networkingv1.HTTPIngressPath
	if len(s.PathRules) == 0 {
		paths = append(paths, ingressPath("/", "Prefix", o.Name, port))
	}
	for _, r := range s.PathRules {
		backend := r.ServiceName
		if backend == "" {
			backend = o.Name
		}
		paths = append(paths, ingressPath(r.Path, r.PathType, backend, r.Port))
	}
	ing := &networkingv1.Ingress{ObjectMeta: o.meta(o.Name, labels)}
	ing.Annotations = ann
	for _, h := range s.Hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{
			Host:             h,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: slices.Clone(paths)}},
		})
	}
	if tls && len(s.Hosts) > 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: s.Hosts, SecretName: o.Name + "-tls"}}
	}
	return ing
}

// ingressPath: pathType Exact and ImplementationSpecific are kept, anything else is Prefix.
func ingressPath(path, pathType, service string, port int32) networkingv1.HTTPIngressPath {
	pt := networkingv1.PathTypePrefix
	switch networkingv1.PathType(pathType) {
	case networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific:
		pt = networkingv1.PathType(pathType)
	}
	return networkingv1.HTTPIngressPath{
		Path:     path,
		PathType: &pt,
		Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: service, Port: networkingv1.ServiceBackendPort{Number: port},
		}},
	}
}

func hpa(o owner, a *v1.AutoscalingSpec, labels map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: o.meta(o.Name, labels),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: o.Name},
			MinReplicas:    a.MinReplicas,
			MaxReplicas:    deref32(a.MaxReplicas, defaultHPAMaxReplicas),
		},
	}
	for _, m := range []struct {
		name   corev1.ResourceName
		target *int32
	}{{corev1.ResourceCPU, a.TargetCPU()}, {corev1.ResourceMemory, a.TargetMemoryUtilization}} {
		if m.target == nil {
			continue
		}
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   m.name,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(*m.target)},
			},
		})
	}
	return h
}

// pdb: minAvailable, else maxUnavailable, else minAvailable 1.
func pdb(o owner, s *v1.PodDisruptionBudgetSpec, labels map[string]string) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: o.meta(o.Name, labels),
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(o.Name)}},
	}
	switch {
	case s.MinAvailable != nil:
		p.Spec.MinAvailable = ptr.To(intstr.FromInt32(*s.MinAvailable))
	case s.MaxUnavailable != nil:
		p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(*s.MaxUnavailable))
	default:
		p.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	}
	return p
}

// networkPolicy renders a present policy unless enabled is false: intra-namespace traffic
// unless allowIntraNamespace is false, then the allowFrom peers; allowIngress opens it.
func networkPolicy(o owner, s *v1.NetworkPolicySpec, labels map[string]string) *networkingv1.NetworkPolicy {
	if s == nil || (s.Enabled != nil && !*s.Enabled) {
		return nil
	}
	var from []networkingv1.NetworkPolicyPeer
	if s.AllowIntraNamespace == nil || *s.AllowIntraNamespace {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}})
	}
	for _, p := range s.AllowFrom {
		from = append(from, networkingv1.NetworkPolicyPeer{PodSelector: p.PodSelector, NamespaceSelector: p.NamespaceSelector})
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: o.meta(o.Name, labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(o.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	switch {
	case s.AllowIngress:
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
	case len(from) > 0:
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: from}}
	}
	return np
}

// kmsSecrets renders one kms.<group>/v1 KMSSecret per entry, named after the managed Secret.
// Only the fields the KMSSecret schema serves are written (wire-contract §16.5: hostAPI,
// credentialsRef and resyncInterval would be pruned by the apiserver and drift forever).
func kmsSecrets(o owner, refs []v1.KMSSecretRef, labels map[string]string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	for i := range refs {
		r := &refs[i]
		name := r.SecretName()
		if name == "" || seen[name] {
			continue // the first entry for a Secret wins; two objects of one name would fight
		}
		seen[name] = true
		spec := map[string]any{"secretsPath": r.SecretsPath, "managedSecretName": name}
		if r.ProjectSlug != "" {
			spec["projectSlug"] = r.ProjectSlug
		}
		if r.EnvSlug != "" {
			spec["envSlug"] = r.EnvSlug
		}
		if len(r.Keys) > 0 {
			keys := make([]any, 0, len(r.Keys))
			for _, k := range r.Keys {
				keys = append(keys, k)
			}
			spec["keys"] = keys
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion("kms." + o.Group + "/" + v1.Version)
		u.SetKind("KMSSecret")
		u.SetName(name)
		u.SetNamespace(o.Namespace)
		u.SetLabels(maps.Clone(labels))
		u.SetOwnerReferences(o.ref())
		out = append(out, u)
	}
	return out
}
