package v1

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressKindSpec is the spec of the Ingress Kind: one networking.k8s.io Ingress per domain.
type IngressKindSpec struct {
	// +kubebuilder:validation:MinItems=1
	Domains []IngressDomain `json:"domains"`
	// IngressClassName is written as the kubernetes.io/ingress.class annotation ("ingress"
	// when unset).
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// +optional
	IngressDaemonSet *IngressDaemonSetSpec `json:"ingressDaemonSet,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// IngressDomain is one host with its routes.
type IngressDomain struct {
	// +kubebuilder:validation:MinLength=1
	Domain string         `json:"domain"`
	Routes []IngressRoute `json:"routes"`
	// TLS is true when unset.
	// +optional
	TLS *bool `json:"tls,omitempty"`
	// Annotations win over the CR's annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// IngressRoute sends one path to a Service port.
type IngressRoute struct {
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// PathType is Prefix when unset.
	// +optional
	PathType string `json:"pathType,omitempty"`
	// +kubebuilder:validation:MinLength=1
	ServiceName string `json:"serviceName"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ServicePort int32 `json:"servicePort"`
}

// IngressDaemonSetSpec is an optional ingress DaemonSet (not materialized).
type IngressDaemonSetSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	CloudflareCredentials *SecretReference `json:"cloudflareCredentials,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// IngressStatus is the status of the Ingress Kind.
type IngressStatus struct {
	Status `json:",inline"`
	// +optional
	ManagedIngresses int32 `json:"managedIngresses,omitempty"`
	// +optional
	CertificateStatuses []CertificateStatus `json:"certificateStatuses,omitempty"`
}

// CertificateStatus reports the certificate of one domain.
type CertificateStatus struct {
	Domain string `json:"domain"`
	Ready  bool   `json:"ready"`
	// +optional
	Message string `json:"message,omitempty"`
}

// Ingress routes public domains to Services.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=ingresses,singular=ingress,shortName=hing,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ingresses",type=integer,JSONPath=`.status.managedIngresses`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Ingress struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IngressKindSpec `json:"spec,omitempty"`
	Status IngressStatus   `json:"status,omitempty"`
}

// IngressList is a list of Ingress.
//
// +kubebuilder:object:root=true
type IngressList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Ingress `json:"items"`
}

// GatewaySpec is the spec of the API gateway.
type GatewaySpec struct {
	// +optional
	Image *ImageSpec `json:"image,omitempty"`
	// Replicas is 2 when unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Routes []GatewayRoute `json:"routes,omitempty"`
	// +optional
	RateLimits []RateLimit `json:"rateLimits,omitempty"`
	// +optional
	AuthPolicies []AuthPolicy `json:"authPolicies,omitempty"`
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
}

// GatewayRoute sends a path prefix to a backend.
type GatewayRoute struct {
	// +kubebuilder:validation:MinLength=1
	Prefix string `json:"prefix"`
	// +kubebuilder:validation:MinLength=1
	Backend string `json:"backend"`
	// +optional
	Methods []string `json:"methods,omitempty"`
	// +optional
	StripPrefix bool `json:"stripPrefix,omitempty"`
	// RateLimit is either a RateLimit object or, as HIP-412 CRs write it, the name of an entry
	// of rateLimits. Read it with RateLimitOf.
	// The apiserver cannot type-check a free-form field with CEL, so RateLimitOf is where a
	// wrong shape is caught.
	// +optional
	RateLimit *apiextensionsv1.JSON `json:"rateLimit,omitempty"`
	// +optional
	AuthPolicy string `json:"authPolicy,omitempty"`
}

// RateLimit is a token bucket.
type RateLimit struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:Minimum=1
	MaxRate int32 `json:"maxRate"`
	// +kubebuilder:validation:MinLength=1
	Every string `json:"every"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	ClientMaxRate *int32 `json:"clientMaxRate,omitempty"`
}

// AuthPolicy is an authentication policy routes refer to by name.
type AuthPolicy struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// +optional
	IAMEndpoint string `json:"iamEndpoint,omitempty"`
	// +optional
	JWKSURL string `json:"jwksUrl,omitempty"`
}

// GatewayStatus is the status of Gateway.
type GatewayStatus struct {
	Status `json:",inline"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	RouteCount int32 `json:"routeCount,omitempty"`
}

// Gateway runs the API gateway with its routes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=gateways,singular=gateway,shortName=hgw,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Routes",type=integer,JSONPath=`.status.routeCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewaySpec   `json:"spec,omitempty"`
	Status GatewayStatus `json:"status,omitempty"`
}

// GatewayList is a list of Gateway.
//
// +kubebuilder:object:root=true
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}

// DNSSpec is the spec of DNS (and of the legacy HanzoDNS).
type DNSSpec struct {
	// +optional
	Zones []DNSZone `json:"zones,omitempty"`
	// +optional
	CoreDNS *CoreDNSSpec `json:"coredns,omitempty"`
	// +optional
	Cloudflare *CloudflareSpec `json:"cloudflare,omitempty"`
	// +optional
	Database *DNSDatabaseSpec `json:"database,omitempty"`
	// +optional
	OIDC *OIDCSpec `json:"oidc,omitempty"`
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DNSZone is a served zone.
type DNSZone struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +optional
	CloudflareZoneID string `json:"cloudflareZoneId,omitempty"`
}

// CoreDNSSpec configures the DNS server Deployment.
type CoreDNSSpec struct {
	// +optional
	Image string `json:"image,omitempty"`
	// Replicas is 2 when unset.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// APIPort is 8443 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	APIPort int32 `json:"apiPort,omitempty"`
	// DNSPort is 53 when unset.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	DNSPort int32 `json:"dnsPort,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// CloudflareSpec syncs zones to Cloudflare.
type CloudflareSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	CredentialsRef *SecretReference `json:"credentialsRef,omitempty"`
}

// DNSDatabaseSpec backs the zones with a database.
type DNSDatabaseSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	CredentialsRef *SecretReference `json:"credentialsRef,omitempty"`
	// +optional
	SyncInterval string `json:"syncInterval,omitempty"`
}

// OIDCSpec protects the DNS API with OIDC.
type OIDCSpec struct {
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// +optional
	Audience string `json:"audience,omitempty"`
}

// DNSStatus is the status of DNS.
type DNSStatus struct {
	Status `json:",inline"`
	// +optional
	ManagedZones int32 `json:"managedZones,omitempty"`
	// +optional
	CoreDNSReady bool `json:"corednsReady,omitempty"`
	// +optional
	ZoneStatuses []ZoneStatus `json:"zoneStatuses,omitempty"`
}

// ZoneStatus reports one zone.
type ZoneStatus struct {
	Name             string `json:"name"`
	CoreDNSSynced    bool   `json:"corednsSynced"`
	CloudflareSynced bool   `json:"cloudflareSynced"`
	// +optional
	RecordCount int32 `json:"recordCount,omitempty"`
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`
}

// DNS runs the DNS server for a set of zones.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=dns,singular=dns,shortName=hdns,categories=universe
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Zones",type=integer,JSONPath=`.status.managedZones`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSSpec   `json:"spec,omitempty"`
	Status DNSStatus `json:"status,omitempty"`
}

// DNSList is a list of DNS.
//
// +kubebuilder:object:root=true
type DNSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNS `json:"items"`
}

// RateLimitOf returns the route's rate limit: the inline object, or the entry of limits that
// the route names. It returns nil when the route has none.
func (r *GatewayRoute) RateLimitOf(limits []RateLimit) (*RateLimit, error) {
	if r.RateLimit == nil || len(r.RateLimit.Raw) == 0 {
		return nil, nil
	}
	var name string
	if err := json.Unmarshal(r.RateLimit.Raw, &name); err == nil {
		for i := range limits {
			if limits[i].Name == name {
				return &limits[i], nil
			}
		}
		return nil, fmt.Errorf("route %s: rate limit %q is not in rateLimits", r.Prefix, name)
	}
	var rl RateLimit
	if err := json.Unmarshal(r.RateLimit.Raw, &rl); err != nil {
		return nil, fmt.Errorf("route %s: decode rateLimit: %w", r.Prefix, err)
	}
	return &rl, nil
}
