package luxnetwork

import (
	"bytes"
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The specs of LuxChain, LuxIndexer, LuxExplorer, LuxGateway and LuxMPC as the luxfi operator
// declares them (src/crd.rs at 552ce16). Pointers mark fields whose serde default is not the
// Go zero value; the defaults are applied by the builders (package kinds), which name them.
//
// The luxfi CRDs are schema-light, so the apiserver stores any field. Each spec records the
// first field it does not declare in Unknown (never serialized), and the builder refuses the
// CR naming it: a field no code reads is never accepted silently.

// LuxChainSpec is a chain of a LuxNetwork.
type LuxChainSpec struct {
	NetworkRef string `json:"networkRef"`
	// +optional
	ChainID string `json:"chainId,omitempty"`
	// +optional
	BlockchainID string `json:"blockchainId,omitempty"`
	// +optional
	Alias string `json:"alias,omitempty"`
	// +optional
	Validators []ChainValidator `json:"validators,omitempty"`
	// +optional
	VM *VMSpec `json:"vm,omitempty"`
	// Unknown is the first field the spec does not declare, "" when none.
	Unknown string `json:"-"`
}

// ChainValidator is a subnet validator of a chain (a P-chain fact).
type ChainValidator struct {
	NodeID string `json:"nodeId"`
	// +optional
	Weight *int64 `json:"weight,omitempty"`
}

// VMSpec is the chain's VM.
type VMSpec struct {
	// +optional
	VMType string `json:"vmType,omitempty"`
	// +optional
	BinaryURL string `json:"binaryUrl,omitempty"`
	// +optional
	Genesis *apiextensionsv1.JSON `json:"genesis,omitempty"`
	// +optional
	ChainConfig *apiextensionsv1.JSON `json:"chainConfig,omitempty"`
}

// LuxIndexerSpec is one chain's indexer.
type LuxIndexerSpec struct {
	NetworkRef string `json:"networkRef"`
	ChainAlias string `json:"chainAlias"`
	ChainID    int64  `json:"chainId"`
	// +optional
	BlockchainID string `json:"blockchainId,omitempty"`
	// +optional
	Image *AppImageSpec `json:"image,omitempty"`
	// +optional
	RPCEndpoint string `json:"rpcEndpoint,omitempty"`
	// +optional
	WSEndpoint string `json:"wsEndpoint,omitempty"`
	// +optional
	Database *IndexerDatabaseSpec `json:"database,omitempty"`
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Resources *ResourceSpec `json:"resources,omitempty"`
	// +optional
	DefiIndexing bool `json:"defiIndexing,omitempty"`
	// +optional
	NFTIndexing bool `json:"nftIndexing,omitempty"`
	// +optional
	ContractVerification *bool `json:"contractVerification,omitempty"`
	// +optional
	TraceEnabled *bool `json:"traceEnabled,omitempty"`
	// +optional
	PollInterval *int64 `json:"pollInterval,omitempty"`
	// +optional
	Storage *IndexerStorageSpec `json:"storage,omitempty"`
	// Unknown is the first field the spec does not declare, "" when none.
	Unknown string `json:"-"`
}

// AppImageSpec is the image of an indexer, explorer or gateway.
type AppImageSpec struct {
	// +optional
	Repository string `json:"repository,omitempty"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// +optional
	PullPolicy string `json:"pullPolicy,omitempty"`
}

// IndexerDatabaseSpec is the indexer's PostgreSQL.
type IndexerDatabaseSpec struct {
	// +optional
	Managed *bool `json:"managed,omitempty"`
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	StorageSize string `json:"storageSize,omitempty"`
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
}

// IndexerStorageSpec is the indexer's KV (BadgerDB) claim.
type IndexerStorageSpec struct {
	// +optional
	Size string `json:"size,omitempty"`
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
}

// LuxExplorerSpec is an explorer UI over indexers.
type LuxExplorerSpec struct {
	NetworkRef string `json:"networkRef"`
	// +optional
	Image *AppImageSpec `json:"image,omitempty"`
	// +optional
	IndexerRefs []ExplorerChainRef `json:"indexerRefs,omitempty"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	Resources *ResourceSpec `json:"resources,omitempty"`
	// +optional
	Ingress *ExplorerIngressSpec `json:"ingress,omitempty"`
	// +optional
	Branding *ExplorerBrandingSpec `json:"branding,omitempty"`
	// Unknown is the first field the spec does not declare, "" when none.
	Unknown string `json:"-"`
}

// ExplorerChainRef is one indexer the explorer shows.
type ExplorerChainRef struct {
	IndexerName string `json:"indexerName"`
	DisplayName string `json:"displayName"`
	// +optional
	Color string `json:"color,omitempty"`
	// +optional
	Default bool `json:"default,omitempty"`
}

// ExplorerIngressSpec exposes the explorer.
type ExplorerIngressSpec struct {
	Host string `json:"host"`
	// +optional
	TLSSecret string `json:"tlsSecret,omitempty"`
	// +optional
	IngressClass string `json:"ingressClass,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExplorerBrandingSpec is the explorer's branding.
type ExplorerBrandingSpec struct {
	NetworkName string `json:"networkName"`
	// +optional
	LogoURL string `json:"logoUrl,omitempty"`
	// +optional
	PrimaryColor string `json:"primaryColor,omitempty"`
}

// LuxGatewaySpec is a KrakenD gateway in front of a network and its indexers.
type LuxGatewaySpec struct {
	NetworkRef string `json:"networkRef"`
	// +optional
	Image *AppImageSpec `json:"image,omitempty"`
	Host  string        `json:"host"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Port int32 `json:"port,omitempty"`
	// +optional
	AutoRoutes *bool `json:"autoRoutes,omitempty"`
	// +optional
	CustomRoutes []GatewayRoute `json:"customRoutes,omitempty"`
	// +optional
	RateLimit *GatewayRateLimitSpec `json:"rateLimit,omitempty"`
	// +optional
	CORS *GatewayCORSSpec `json:"cors,omitempty"`
	// +optional
	TLS *GatewayTLSSpec `json:"tls,omitempty"`
	// +optional
	Resources *ResourceSpec `json:"resources,omitempty"`
	// +optional
	IndexerRefs []string `json:"indexerRefs,omitempty"`
	// +optional
	ExplorerRefs []string `json:"explorerRefs,omitempty"`
	// +optional
	ServiceType string `json:"serviceType,omitempty"`
	// Unknown is the first field the spec does not declare, "" when none.
	Unknown string `json:"-"`
}

// GatewayRoute is a custom route.
type GatewayRoute struct {
	Path    string `json:"path"`
	Backend string `json:"backend"`
	// +optional
	Methods []string `json:"methods,omitempty"`
	// +optional
	Timeout *int64 `json:"timeout,omitempty"`
}

// GatewayRateLimitSpec limits the C-chain RPC route.
type GatewayRateLimitSpec struct {
	// +optional
	RequestsPerSecond *int64 `json:"requestsPerSecond,omitempty"`
	// +optional
	Burst *int64 `json:"burst,omitempty"`
}

// GatewayCORSSpec is the gateway's CORS policy.
type GatewayCORSSpec struct {
	// +optional
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// +optional
	AllowedMethods []string `json:"allowedMethods,omitempty"`
	// +optional
	AllowedHeaders []string `json:"allowedHeaders,omitempty"`
}

// GatewayTLSSpec makes the gateway's Ingress.
type GatewayTLSSpec struct {
	SecretName string `json:"secretName"`
	// +optional
	CertManager bool `json:"certManager,omitempty"`
	// +optional
	Issuer string `json:"issuer,omitempty"`
}

// LuxMPCSpec is a threshold-signing cluster.
type LuxMPCSpec struct {
	// +optional
	Nodes *int32 `json:"nodes,omitempty"`
	// +optional
	Threshold *int32 `json:"threshold,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// +optional
	P2PPort int32 `json:"p2pPort,omitempty"`
	// +optional
	APIPort int32 `json:"apiPort,omitempty"`
	// +optional
	Storage string `json:"storage,omitempty"`
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// +optional
	DatabaseURL string `json:"databaseUrl,omitempty"`
	// +optional
	KVURL string `json:"kvUrl,omitempty"`
	// +optional
	DeployPostgres *bool `json:"deployPostgres,omitempty"`
	// +optional
	DeployValkey *bool `json:"deployValkey,omitempty"`
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// +optional
	TLSSecret string `json:"tlsSecret,omitempty"`
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// +optional
	CPURequest string `json:"cpuRequest,omitempty"`
	// +optional
	MemoryRequest string `json:"memoryRequest,omitempty"`
	// +optional
	CPULimit string `json:"cpuLimit,omitempty"`
	// +optional
	MemoryLimit string `json:"memoryLimit,omitempty"`
	// +optional
	Backup *apiextensionsv1.JSON `json:"backup,omitempty"`
	// +optional
	DashboardImage string `json:"dashboardImage,omitempty"`
	// +optional
	DashboardAPIURL string `json:"dashboardApiUrl,omitempty"`
	// +optional
	IAMURL string `json:"iamUrl,omitempty"`
	// +optional
	IAMClientID string `json:"iamClientId,omitempty"`
	// Unknown is the first field the spec does not declare, "" when none.
	Unknown string `json:"-"`
}

// strictUnknown decodes data into out (a pointer to a plain copy of a spec type) leniently,
// and returns the error a strict decode gives ("" when every field is declared).
func strictUnknown(data []byte, out, strict any) (string, error) {
	if err := json.Unmarshal(data, out); err != nil {
		return "", err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(strict); err != nil {
		return err.Error(), nil
	}
	return "", nil
}

// UnmarshalJSON decodes the spec and records an undeclared field in Unknown.
func (s *LuxChainSpec) UnmarshalJSON(data []byte) error {
	type plain LuxChainSpec
	var p, q plain
	u, err := strictUnknown(data, &p, &q)
	if err != nil {
		return err
	}
	*s = LuxChainSpec(p)
	s.Unknown = u
	return nil
}

// UnmarshalJSON decodes the spec and records an undeclared field in Unknown.
func (s *LuxIndexerSpec) UnmarshalJSON(data []byte) error {
	type plain LuxIndexerSpec
	var p, q plain
	u, err := strictUnknown(data, &p, &q)
	if err != nil {
		return err
	}
	*s = LuxIndexerSpec(p)
	s.Unknown = u
	return nil
}

// UnmarshalJSON decodes the spec and records an undeclared field in Unknown.
func (s *LuxExplorerSpec) UnmarshalJSON(data []byte) error {
	type plain LuxExplorerSpec
	var p, q plain
	u, err := strictUnknown(data, &p, &q)
	if err != nil {
		return err
	}
	*s = LuxExplorerSpec(p)
	s.Unknown = u
	return nil
}

// UnmarshalJSON decodes the spec and records an undeclared field in Unknown.
func (s *LuxGatewaySpec) UnmarshalJSON(data []byte) error {
	type plain LuxGatewaySpec
	var p, q plain
	u, err := strictUnknown(data, &p, &q)
	if err != nil {
		return err
	}
	*s = LuxGatewaySpec(p)
	s.Unknown = u
	return nil
}

// UnmarshalJSON decodes the spec and records an undeclared field in Unknown.
func (s *LuxMPCSpec) UnmarshalJSON(data []byte) error {
	type plain LuxMPCSpec
	var p, q plain
	u, err := strictUnknown(data, &p, &q)
	if err != nil {
		return err
	}
	*s = LuxMPCSpec(p)
	s.Unknown = u
	return nil
}
