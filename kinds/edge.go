package kinds

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// buildIngressKind renders one networking.k8s.io Ingress per domain (wire-contract §5), named
// <cr>-<index>-<sanitized domain>, labelled managed-by ∪ spec.labels (no selector labels).
func buildIngressKind(o owner, s *v1.IngressKindSpec) ([]*unstructured.Unstructured, error) {
	labels := withLabels(map[string]string{LabelManagedBy: ManagedBy}, s.Labels)
	class := s.IngressClassName
	if class == "" {
		class = defaultIngressClass
	}
	issuer := s.ClusterIssuer
	if issuer == "" {
		issuer = defaultClusterIssuer
	}
	var children []child
	for i, d := range s.Domains {
		name := o.Name + "-" + strconv.Itoa(i) + "-" + sanitizeDomain(d.Domain)
		ann := map[string]string{annotationIngressClass: class}
		tls := tlsEnabled(d.TLS)
		if tls {
			ann[annotationClusterIssuer] = issuer
		}
		maps.Copy(ann, s.Annotations)
		maps.Copy(ann, d.Annotations)
		ing := &networkingv1.Ingress{ObjectMeta: o.meta(name, maps.Clone(labels))}
		ing.Annotations = ann
		rule := networkingv1.IngressRule{Host: d.Domain}
		if len(d.Routes) > 0 {
			rule.HTTP = &networkingv1.HTTPIngressRuleValue{}
			for _, r := range d.Routes {
				rule.HTTP.Paths = append(rule.HTTP.Paths, ingressPath(r.Path, r.PathType, r.ServiceName, r.ServicePort))
			}
		}
		ing.Spec.Rules = []networkingv1.IngressRule{rule}
		if tls {
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{d.Domain}, SecretName: name + "-tls"}}
		}
		children = append(children, child{ing, gvkIngress})
	}
	return objects(children...)
}

// sanitizeDomain: `*` becomes "wildcard", other characters outside [a-z0-9] become '-'.
func sanitizeDomain(d string) string {
	d = strings.ReplaceAll(strings.ToLower(d), "*", "wildcard")
	b := []byte(d)
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-")
}

// Gateway defaults (wire-contract §7).
const (
	defaultGatewayRepository = "ghcr.io/hanzoai/gateway"
	defaultGatewayTag        = "v1.0.0"
	defaultGatewayReplicas   = 2
	gatewayPort              = 8080
	gatewayServicePort       = 80
	krakendKey               = "krakend.json"
)

// krakendConfig is the gateway's krakend.json.
type krakendConfig struct {
	Version   int               `json:"version"`
	Name      string            `json:"name"`
	Port      int               `json:"port"`
	Endpoints []krakendEndpoint `json:"endpoints"`
}

type krakendEndpoint struct {
	Endpoint    string           `json:"endpoint"`
	Method      string           `json:"method"`
	Backend     []krakendBackend `json:"backend"`
	ExtraConfig map[string]any   `json:"extra_config,omitempty"`
}

type krakendBackend struct {
	URLPattern string   `json:"url_pattern"`
	Host       []string `json:"host"`
}

type krakendRateLimit struct {
	MaxRate       int32  `json:"max_rate"`
	Every         string `json:"every"`
	ClientMaxRate *int32 `json:"client_max_rate,omitempty"`
}

// gatewayConfig marshals the routes: one endpoint per route and method (GET when none), the
// backend given a http:// scheme only when it has none, and the route's rate limit as the
// krakend router QoS.
func gatewayConfig(o owner, s *v1.GatewaySpec) ([]byte, error) {
	cfg := krakendConfig{Version: 3, Name: o.Name, Port: gatewayPort, Endpoints: []krakendEndpoint{}}
	for i := range s.Routes {
		r := &s.Routes[i]
		rl, err := r.RateLimitOf(s.RateLimits)
		if err != nil {
			return nil, invalidSpec("Gateway %s/%s: %v", o.Namespace, o.Name, err)
		}
		host := r.Backend
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		pattern := "/"
		if !r.StripPrefix {
			pattern = r.Prefix
		}
		methods := r.Methods
		if len(methods) == 0 {
			methods = []string{"GET"}
		}
		for _, m := range methods {
			ep := krakendEndpoint{Endpoint: r.Prefix, Method: m, Backend: []krakendBackend{{URLPattern: pattern, Host: []string{host}}}}
			if rl != nil {
				ep.ExtraConfig = map[string]any{"qos/ratelimit/router": krakendRateLimit{MaxRate: rl.MaxRate, Every: rl.Every, ClientMaxRate: rl.ClientMaxRate}}
			}
			cfg.Endpoints = append(cfg.Endpoints, ep)
		}
	}
	return json.Marshal(cfg)
}

// buildGateway renders the krakend ConfigMap <cr>-config, then the Service children of a
// synthesized spec: Deployment (component gateway, 2 replicas), Service 80 → 8080 and the
// Ingress when enabled. The ConfigMap is not mounted, as in the operator it replaces.
func buildGateway(o owner, s *v1.GatewaySpec) ([]*unstructured.Unstructured, error) {
	cfg, err := gatewayConfig(o, s)
	if err != nil {
		return nil, err
	}
	img := s.Image
	if img == nil || img.Repository == "" {
		img = &v1.ImageSpec{Repository: defaultGatewayRepository, Tag: defaultGatewayTag}
	}
	spec := &v1.ServiceSpec{
		Image:     img,
		Replicas:  ptr.To(deref32(s.Replicas, defaultGatewayReplicas)),
		Ports:     []v1.ServicePort{{Name: "http", ContainerPort: gatewayPort, ServicePort: ptr.To[int32](gatewayServicePort)}},
		Resources: s.Resources,
		Ingress:   s.Ingress,
		Component: "gateway",
	}
	objs, err := buildService(o, spec)
	if err != nil {
		return nil, err
	}
	labels := standardLabels(o.Name, "gateway", "", imageTag(img))
	cm, err := toUnstructured(&corev1.ConfigMap{
		ObjectMeta: o.meta(o.Name+"-config", labels),
		Data:       map[string]string{krakendKey: string(cfg)},
	}, gvkConfigMap)
	if err != nil {
		return nil, err
	}
	return append([]*unstructured.Unstructured{cm}, objs...), nil
}

// DNS defaults (wire-contract §6).
const (
	defaultDNSImage    = "ghcr.io/hanzoai/dns:latest"
	defaultDNSReplicas = 2
	defaultDNSAPIPort  = 8443
	defaultDNSPort     = 53
)

// buildDNS renders the DNS server Deployment <cr> (component dns, no version label) and its
// Service with the api, dns-tcp and dns-udp ports. Zones, Cloudflare, database and OIDC are
// not materialized (as in the operator it replaces).
func buildDNS(o owner, s *v1.DNSSpec) ([]*unstructured.Unstructured, error) {
	c := s.CoreDNS
	if c == nil {
		c = &v1.CoreDNSSpec{}
	}
	image := c.Image
	if image == "" {
		image = defaultDNSImage
	}
	api, dns := c.APIPort, c.DNSPort
	if api == 0 {
		api = defaultDNSAPIPort
	}
	if dns == 0 {
		dns = defaultDNSPort
	}
	repo, tag := ImageSpecParts(image) // the container runs image as written; DNS has no version label
	spec := &v1.ServiceSpec{
		Image:     &v1.ImageSpec{Repository: repo, Tag: tag, PullPolicy: corev1.PullIfNotPresent},
		Replicas:  ptr.To(deref32(c.Replicas, defaultDNSReplicas)),
		Resources: c.Resources,
		Component: "dns",
		Labels:    s.Labels,
		Ports: []v1.ServicePort{
			{Name: "api", ContainerPort: api, Protocol: corev1.ProtocolTCP},
			{Name: "dns-tcp", ContainerPort: dns, Protocol: corev1.ProtocolTCP},
			{Name: "dns-udp", ContainerPort: dns, Protocol: corev1.ProtocolUDP},
		},
		// DNS declares no probe: an explicit empty one keeps the default TCP probe off.
		ReadinessProbe: &v1.ProbeSpec{},
		Annotations:    s.Annotations,
	}
	// The DNS workload has no version label and no HANZO_VERSION (the Rust dns.rs builder).
	return buildServiceWith(o, spec, serviceOptions{noVersion: true})
}

// SPA defaults (wire-contract §10).
const spaPort = 3000

// buildSPA synthesizes a ServiceSpec: the runtime image, one http port 3000, one environment
// variable per config entry (sorted by name), ingress, pdb and resources.
func buildSPA(o owner, s *v1.SPASpec) ([]*unstructured.Unstructured, error) {
	var env []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(s.Config)) {
		env = append(env, corev1.EnvVar{Name: k, Value: s.Config[k]})
	}
	img := s.Runtime
	return buildService(o, &v1.ServiceSpec{
		Image:     &img,
		Replicas:  ptr.To(deref32(s.Replicas, 1)),
		Ports:     []v1.ServicePort{{Name: "http", ContainerPort: spaPort}},
		Env:       env,
		Ingress:   s.Ingress,
		PDB:       s.PDB,
		Resources: s.Resources,
	})
}
