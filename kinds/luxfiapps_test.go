package kinds_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// fieldCase is what changing one luxfi spec field must do: change the objects, Halt, or be
// reported in FieldsNotMaterialized (note is the prefix of the report).
type fieldCase[S any] struct {
	change func(*S)
	halt   bool
	note   string
}

func luxfiRef(kind string) kinds.Ref {
	return kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: kind}
}

// luxfiInputs are a network (http 9640) and an indexer (port 4100) beside the apps.
func luxfiInputs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range []runtime.Object{
		&luxnetwork.LuxNetwork{ObjectMeta: objMeta("luxd"), Spec: luxnetwork.LuxNetworkSpec{NetworkID: 1, Validators: 1, Ports: &luxnetwork.PortSpec{HTTP: 9640}}},
		&luxnetwork.LuxIndexer{ObjectMeta: objMeta("indexer-c"), Spec: luxnetwork.LuxIndexerSpec{NetworkRef: "luxd", ChainAlias: "C", ChainID: 1, Port: 4100}},
	} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(luxnetwork.GroupVersion.String())
		u.SetKind(reflect.TypeOf(o).Elem().Name())
		out = append(out, u)
	}
	return out
}

func checkNoFieldIgnored[S any](t *testing.T, kind string, base func() S, mk func(S) kinds.Object, cases map[string]fieldCase[S]) {
	t.Helper()
	e := kinds.Builtin()[luxfiRef(kind)]
	ctx := kinds.Context{APIGroup: kinds.DefaultAPIGroup, Inputs: luxfiInputs(t)}
	build := func(s S) ([]*unstructured.Unstructured, error) { return e.Build(mk(s), ctx) }
	want, err := build(base())
	if err != nil {
		t.Fatalf("the base %s must build: %v", kind, err)
	}
	var zero S
	paths := specPaths(reflect.TypeOf(zero), "")
	sort.Strings(paths)
	for _, p := range paths {
		if _, ok := cases[p]; !ok {
			t.Errorf("%s spec.%s has no case: materialize it, refuse it or report it, and add a case", kind, p)
		}
	}
	for path, c := range cases {
		t.Run(kind+"/"+path, func(t *testing.T) {
			if !slices.Contains(paths, path) {
				t.Fatalf("no field spec.%s", path)
			}
			s := base()
			c.change(&s)
			got, err := build(s)
			_, halted := kinds.AsHalt(err)
			switch {
			case c.halt && !halted:
				t.Fatalf("a refused field built (err %v)", err)
			case c.halt:
				return
			case err != nil:
				t.Fatalf("build: %v", err)
			case c.note != "":
				notes := e.Status(mk(s), kinds.Observed{}).NotMaterialized
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, c.note) }) {
					t.Errorf("spec.%s is not reported as not materialized: %q", path, notes)
				}
			case reflect.DeepEqual(want, got):
				t.Errorf("changing spec.%s changed no object: the field is ignored", path)
			}
		})
	}
}

func TestLuxIndexerNoFieldIgnored(t *testing.T) {
	base := func() luxnetwork.LuxIndexerSpec {
		return luxnetwork.LuxIndexerSpec{
			NetworkRef: "luxd", ChainAlias: "zoo", ChainID: 200200, BlockchainID: "zooID",
			Image:    &luxnetwork.AppImageSpec{Repository: "r", Tag: "t", PullPolicy: "Always"},
			Database: &luxnetwork.IndexerDatabaseSpec{Managed: ptr.To(true), StorageSize: "20Gi", StorageClass: "fast"},
			Port:     4000, Replicas: ptr.To[int32](1), Resources: &luxnetwork.ResourceSpec{CPURequest: "200m"},
			ContractVerification: ptr.To(true), TraceEnabled: ptr.To(true), PollInterval: ptr.To[int64](2),
			Storage: &luxnetwork.IndexerStorageSpec{Size: "10Gi"},
		}
	}
	mk := func(s luxnetwork.LuxIndexerSpec) kinds.Object {
		return &luxnetwork.LuxIndexer{ObjectMeta: objMeta("indexer-zoo"), Spec: s}
	}
	type S = luxnetwork.LuxIndexerSpec
	checkNoFieldIgnored(t, "LuxIndexer", base, mk, map[string]fieldCase[S]{
		"networkRef":              {change: func(s *S) { s.NetworkRef = "other" }},
		"chainAlias":              {change: func(s *S) { s.ChainAlias = "p" }},
		"chainId":                 {change: func(s *S) { s.ChainID = 1 }},
		"blockchainId":            {change: func(s *S) { s.BlockchainID = "" }},
		"image.repository":        {change: func(s *S) { s.Image.Repository = "x" }},
		"image.tag":               {change: func(s *S) { s.Image.Tag = "x" }},
		"image.pullPolicy":        {change: func(s *S) { s.Image.PullPolicy = "Never" }},
		"rpcEndpoint":             {change: func(s *S) { s.RPCEndpoint = "http://rpc" }},
		"wsEndpoint":              {change: func(s *S) { s.WSEndpoint = "ws://rpc" }},
		"database.managed":        {change: func(s *S) { s.Database.Managed = ptr.To(false) }},
		"database.url":            {change: func(s *S) { s.Database.Managed = ptr.To(false); s.Database.URL = "postgres://db" }},
		"database.name":           {change: func(s *S) { s.Database.Name = "db" }},
		"database.image":          {change: func(s *S) { s.Database.Image = "postgres:17" }},
		"database.storageSize":    {change: func(s *S) { s.Database.StorageSize = "30Gi" }},
		"database.storageClass":   {change: func(s *S) { s.Database.StorageClass = "slow" }},
		"port":                    {change: func(s *S) { s.Port = 4001 }},
		"replicas":                {change: func(s *S) { s.Replicas = ptr.To[int32](2) }},
		"resources.cpuRequest":    {change: func(s *S) { s.Resources.CPURequest = "300m" }},
		"resources.cpuLimit":      {change: func(s *S) { s.Resources.CPULimit = "2" }},
		"resources.memoryRequest": {change: func(s *S) { s.Resources.MemoryRequest = "1Gi" }},
		"resources.memoryLimit":   {change: func(s *S) { s.Resources.MemoryLimit = "2Gi" }},
		"defiIndexing":            {change: func(s *S) { s.DefiIndexing = true }},
		"nftIndexing":             {change: func(s *S) { s.NFTIndexing = true }},
		"contractVerification":    {change: func(s *S) { s.ContractVerification = ptr.To(false) }, note: "spec.contractVerification"},
		"traceEnabled":            {change: func(s *S) { s.TraceEnabled = ptr.To(false) }},
		"pollInterval":            {change: func(s *S) { s.PollInterval = ptr.To[int64](5) }},
		"storage.size":            {change: func(s *S) { s.Storage.Size = "1Gi" }, note: "spec.storage"},
		"storage.storageClass":    {change: func(s *S) { s.Storage.StorageClass = "x" }, note: "spec.storage"},
	})
}

func TestLuxExplorerNoFieldIgnored(t *testing.T) {
	base := func() luxnetwork.LuxExplorerSpec {
		return luxnetwork.LuxExplorerSpec{
			NetworkRef:  "luxd",
			Image:       &luxnetwork.AppImageSpec{Repository: "r", Tag: "t", PullPolicy: "Always"},
			IndexerRefs: []luxnetwork.ExplorerChainRef{{IndexerName: "indexer-c", DisplayName: "C"}},
			Replicas:    ptr.To[int32](2), Port: 3000, Resources: &luxnetwork.ResourceSpec{},
			Ingress:  &luxnetwork.ExplorerIngressSpec{Host: "explorer", IngressClass: "nginx", Annotations: map[string]string{"a": "b"}},
			Branding: &luxnetwork.ExplorerBrandingSpec{NetworkName: "Lux"},
		}
	}
	mk := func(s luxnetwork.LuxExplorerSpec) kinds.Object {
		return &luxnetwork.LuxExplorer{ObjectMeta: objMeta("explorer"), Spec: s}
	}
	type S = luxnetwork.LuxExplorerSpec
	checkNoFieldIgnored(t, "LuxExplorer", base, mk, map[string]fieldCase[S]{
		"networkRef":                {change: func(s *S) { s.NetworkRef = "x" }, note: "spec.networkRef"},
		"image.repository":          {change: func(s *S) { s.Image.Repository = "x" }},
		"image.tag":                 {change: func(s *S) { s.Image.Tag = "x" }},
		"image.pullPolicy":          {change: func(s *S) { s.Image.PullPolicy = "Never" }},
		"indexerRefs[].indexerName": {change: func(s *S) { s.IndexerRefs[0].IndexerName = "indexer-zoo" }},
		"indexerRefs[].displayName": {change: func(s *S) { s.IndexerRefs[0].DisplayName = "Zoo" }},
		"indexerRefs[].color":       {change: func(s *S) { s.IndexerRefs[0].Color = "#fff" }, note: "spec.indexerRefs[0].color"},
		"indexerRefs[].default":     {change: func(s *S) { s.IndexerRefs[0].Default = true }, note: "spec.indexerRefs[0].color/default"},
		"replicas":                  {change: func(s *S) { s.Replicas = ptr.To[int32](3) }},
		"port":                      {change: func(s *S) { s.Port = 3001 }},
		"resources.cpuRequest":      {change: func(s *S) { s.Resources.CPURequest = "300m" }},
		"resources.cpuLimit":        {change: func(s *S) { s.Resources.CPULimit = "2" }},
		"resources.memoryRequest":   {change: func(s *S) { s.Resources.MemoryRequest = "1Gi" }},
		"resources.memoryLimit":     {change: func(s *S) { s.Resources.MemoryLimit = "2Gi" }},
		"ingress.host":              {change: func(s *S) { s.Ingress.Host = "x" }},
		"ingress.tlsSecret":         {change: func(s *S) { s.Ingress.TLSSecret = "tls" }},
		"ingress.ingressClass":      {change: func(s *S) { s.Ingress.IngressClass = "traefik" }},
		"ingress.annotations":       {change: func(s *S) { s.Ingress.Annotations["c"] = "d" }},
		"branding.networkName":      {change: func(s *S) { s.Branding.NetworkName = "Zoo" }},
		"branding.logoUrl":          {change: func(s *S) { s.Branding.LogoURL = "https://logo" }},
		"branding.primaryColor":     {change: func(s *S) { s.Branding.PrimaryColor = "#000" }, note: "spec.branding.primaryColor"},
	})
}

func TestLuxGatewayNoFieldIgnored(t *testing.T) {
	base := func() luxnetwork.LuxGatewaySpec {
		return luxnetwork.LuxGatewaySpec{
			NetworkRef: "luxd", Host: "api", Image: &luxnetwork.AppImageSpec{Repository: "r", Tag: "t", PullPolicy: "Always"},
			Replicas: ptr.To[int32](2), Port: 8080, AutoRoutes: ptr.To(true),
			CustomRoutes: []luxnetwork.GatewayRoute{{Path: "/x", Backend: "http://x", Methods: []string{"GET"}, Timeout: ptr.To[int64](30)}},
			RateLimit:    &luxnetwork.GatewayRateLimitSpec{RequestsPerSecond: ptr.To[int64](100), Burst: ptr.To[int64](200)},
			CORS:         &luxnetwork.GatewayCORSSpec{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}, AllowedHeaders: []string{"A"}},
			TLS:          &luxnetwork.GatewayTLSSpec{SecretName: "tls", CertManager: true, Issuer: "le"},
			Resources:    &luxnetwork.ResourceSpec{}, IndexerRefs: []string{"indexer-c"}, ExplorerRefs: []string{"explorer"}, ServiceType: "ClusterIP",
		}
	}
	mk := func(s luxnetwork.LuxGatewaySpec) kinds.Object {
		return &luxnetwork.LuxGateway{ObjectMeta: objMeta("api-gateway"), Spec: s}
	}
	type S = luxnetwork.LuxGatewaySpec
	checkNoFieldIgnored(t, "LuxGateway", base, mk, map[string]fieldCase[S]{
		"networkRef":                  {change: func(s *S) { s.NetworkRef = "x" }},
		"image.repository":            {change: func(s *S) { s.Image.Repository = "x" }},
		"image.tag":                   {change: func(s *S) { s.Image.Tag = "x" }},
		"image.pullPolicy":            {change: func(s *S) { s.Image.PullPolicy = "Never" }},
		"host":                        {change: func(s *S) { s.Host = "x" }},
		"replicas":                    {change: func(s *S) { s.Replicas = ptr.To[int32](3) }},
		"port":                        {change: func(s *S) { s.Port = 8081 }},
		"autoRoutes":                  {change: func(s *S) { s.AutoRoutes = ptr.To(false) }},
		"customRoutes[].path":         {change: func(s *S) { s.CustomRoutes[0].Path = "/y" }},
		"customRoutes[].backend":      {change: func(s *S) { s.CustomRoutes[0].Backend = "http://y" }},
		"customRoutes[].methods":      {change: func(s *S) { s.CustomRoutes[0].Methods = []string{"GET", "POST"} }},
		"customRoutes[].timeout":      {change: func(s *S) { s.CustomRoutes[0].Timeout = ptr.To[int64](5) }},
		"rateLimit.requestsPerSecond": {change: func(s *S) { s.RateLimit.RequestsPerSecond = ptr.To[int64](5) }},
		"rateLimit.burst":             {change: func(s *S) { s.RateLimit.Burst = ptr.To[int64](5) }},
		"cors.allowedOrigins":         {change: func(s *S) { s.CORS.AllowedOrigins = []string{"https://x"} }},
		"cors.allowedMethods":         {change: func(s *S) { s.CORS.AllowedMethods = []string{"POST"} }},
		"cors.allowedHeaders":         {change: func(s *S) { s.CORS.AllowedHeaders = []string{"B"} }},
		"tls.secretName":              {change: func(s *S) { s.TLS.SecretName = "x" }},
		"tls.certManager":             {change: func(s *S) { s.TLS.CertManager = false }},
		"tls.issuer":                  {change: func(s *S) { s.TLS.Issuer = "x" }},
		"resources.cpuRequest":        {change: func(s *S) { s.Resources.CPURequest = "300m" }},
		"resources.cpuLimit":          {change: func(s *S) { s.Resources.CPULimit = "2" }},
		"resources.memoryRequest":     {change: func(s *S) { s.Resources.MemoryRequest = "1Gi" }},
		"resources.memoryLimit":       {change: func(s *S) { s.Resources.MemoryLimit = "2Gi" }},
		"indexerRefs":                 {change: func(s *S) { s.IndexerRefs = append(s.IndexerRefs, "indexer-zoo") }},
		"explorerRefs":                {change: func(s *S) { s.ExplorerRefs = []string{"x"} }, note: "spec.explorerRefs"},
		"serviceType":                 {change: func(s *S) { s.ServiceType = "LoadBalancer" }},
	})
}

func TestLuxMPCNoFieldIgnored(t *testing.T) {
	base := func() luxnetwork.LuxMPCSpec {
		return luxnetwork.LuxMPCSpec{
			Nodes: ptr.To[int32](3), Threshold: ptr.To[int32](2), Image: "mpc", ImagePullPolicy: "Always", P2PPort: 9651, APIPort: 8081,
			Storage: "10Gi", StorageClass: "fast", SecretName: "mpc-secrets", CPURequest: "200m", MemoryRequest: "512Mi", CPULimit: "1", MemoryLimit: "1Gi",
		}
	}
	mk := func(s luxnetwork.LuxMPCSpec) kinds.Object {
		return &luxnetwork.LuxMPC{ObjectMeta: objMeta("lux-mpc"), Spec: s}
	}
	type S = luxnetwork.LuxMPCSpec
	checkNoFieldIgnored(t, "LuxMPC", base, mk, map[string]fieldCase[S]{
		"nodes":           {change: func(s *S) { s.Nodes = ptr.To[int32](5) }},
		"threshold":       {change: func(s *S) { s.Threshold = ptr.To[int32](3) }},
		"image":           {change: func(s *S) { s.Image = "x" }},
		"imagePullPolicy": {change: func(s *S) { s.ImagePullPolicy = "Never" }},
		"p2pPort":         {change: func(s *S) { s.P2PPort = 1 }},
		"apiPort":         {change: func(s *S) { s.APIPort = 1 }},
		"storage":         {change: func(s *S) { s.Storage = "20Gi" }},
		"storageClass":    {change: func(s *S) { s.StorageClass = "slow" }},
		"secretName":      {change: func(s *S) { s.SecretName = "x" }},
		"databaseUrl":     {change: func(s *S) { s.DatabaseURL = "postgres://x" }},
		"kvUrl":           {change: func(s *S) { s.KVURL = "redis://x" }},
		"deployPostgres":  {change: func(s *S) { s.DeployPostgres = ptr.To(true) }, note: "spec.deployPostgres"},
		"deployValkey":    {change: func(s *S) { s.DeployValkey = ptr.To(true) }, note: "spec.deployPostgres/deployValkey"},
		"hostname":        {change: func(s *S) { s.Hostname = "mpc" }, note: "spec.hostname"},
		"tlsSecret":       {change: func(s *S) { s.TLSSecret = "tls" }, note: "spec.hostname/tlsSecret"},
		"clusterIssuer":   {change: func(s *S) { s.ClusterIssuer = "le" }, note: "spec.hostname/tlsSecret/clusterIssuer"},
		"cpuRequest":      {change: func(s *S) { s.CPURequest = "300m" }},
		"memoryRequest":   {change: func(s *S) { s.MemoryRequest = "1Gi" }},
		"cpuLimit":        {change: func(s *S) { s.CPULimit = "2" }},
		"memoryLimit":     {change: func(s *S) { s.MemoryLimit = "2Gi" }},
		"backup":          {change: func(s *S) { s.Backup = &apiextensionsv1.JSON{Raw: []byte(`{"bucket":"b"}`)} }, note: "spec.backup"},
		"dashboardImage":  {change: func(s *S) { s.DashboardImage = "d" }, note: "spec.dashboardImage"},
		"dashboardApiUrl": {change: func(s *S) { s.DashboardAPIURL = "d" }, note: "spec.dashboardImage/dashboardApiUrl"},
		"iamUrl":          {change: func(s *S) { s.IAMURL = "i" }, note: "spec.iamUrl"},
		"iamClientId":     {change: func(s *S) { s.IAMClientID = "i" }, note: "spec.iamUrl/iamClientId"},
	})
}

// TestLuxChainNoFieldIgnored: a LuxChain builds nothing itself; each field acts on its
// network's objects (blockchainId, alias, vm.chainConfig), halts the chain, or is reported.
func TestLuxChainNoFieldIgnored(t *testing.T) {
	type S = luxnetwork.LuxChainSpec
	base := func() S {
		return S{NetworkRef: "luxd", BlockchainID: "parsID", Alias: "pars", VM: &luxnetwork.VMSpec{VMType: "evm", ChainConfig: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}}
	}
	network := &luxnetwork.LuxNetwork{ObjectMeta: objMeta("luxd"), Spec: luxnetwork.LuxNetworkSpec{NetworkID: 1, Validators: 3}}
	netU := toInput(t, network)
	buildNet := func(s S) ([]*unstructured.Unstructured, error) {
		chain := toInput(t, &luxnetwork.LuxChain{ObjectMeta: objMeta("pars"), Spec: s})
		return kinds.Builtin()[luxfiRef("LuxNetwork")].Build(network, kinds.Context{APIGroup: kinds.DefaultAPIGroup, Inputs: []*unstructured.Unstructured{chain}})
	}
	chainE := kinds.Builtin()[luxfiRef("LuxChain")]
	buildChain := func(s S) error {
		_, err := chainE.Build(&luxnetwork.LuxChain{ObjectMeta: objMeta("pars"), Spec: s}, kinds.Context{APIGroup: kinds.DefaultAPIGroup, Inputs: []*unstructured.Unstructured{netU}})
		return err
	}
	want, err := buildNet(base())
	if err != nil {
		t.Fatal(err)
	}
	if err := buildChain(base()); err != nil {
		t.Fatalf("the chain beside its network must be served: %v", err)
	}
	alone, _ := kinds.Builtin()[luxfiRef("LuxNetwork")].Build(network, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
	if reflect.DeepEqual(alone, want) {
		t.Fatal("the LuxChain changed nothing of its network")
	}
	cases := map[string]fieldCase[S]{
		"networkRef":          {change: func(s *S) { s.NetworkRef = "other" }, halt: true},
		"blockchainId":        {change: func(s *S) { s.BlockchainID = "otherID" }},
		"alias":               {change: func(s *S) { s.Alias = "p" }},
		"chainId":             {change: func(s *S) { s.ChainID = "7777" }, note: ""},
		"validators[].nodeId": {change: func(s *S) { s.Validators = []luxnetwork.ChainValidator{{NodeID: "n"}} }, note: "spec.validators"},
		"validators[].weight": {change: func(s *S) { s.Validators = []luxnetwork.ChainValidator{{NodeID: "n", Weight: ptr.To[int64](1)}} }, note: "spec.validators"},
		"vm.vmType":           {change: func(s *S) { s.VM.VMType = "custom" }, note: "spec.vm.vmType"},
		"vm.binaryUrl":        {change: func(s *S) { s.VM.BinaryURL = "https://vm" }, note: "spec.vm.vmType/binaryUrl"},
		"vm.genesis":          {change: func(s *S) { s.VM.Genesis = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, note: "spec.vm.genesis"},
		"vm.chainConfig":      {change: func(s *S) { s.VM.ChainConfig = &apiextensionsv1.JSON{Raw: []byte(`{"a":2}`)} }},
	}
	paths := specPaths(reflect.TypeOf(S{}), "")
	for _, p := range paths {
		if _, ok := cases[p]; !ok {
			t.Errorf("LuxChain spec.%s has no case", p)
		}
	}
	for path, c := range cases {
		t.Run(path, func(t *testing.T) {
			s := base()
			c.change(&s)
			if path == "chainId" { // reported in the chain's status, as the luxfi operator did
				if got := chainE.Status(&luxnetwork.LuxChain{Spec: s}, kinds.Observed{}).Fields["chainId"]; got != "7777" {
					t.Errorf("status chainId %v", got)
				}
				return
			}
			err := buildChain(s)
			_, halted := kinds.AsHalt(err)
			switch {
			case c.halt:
				if !halted {
					t.Fatalf("chain of another network served (err %v)", err)
				}
			case c.note != "":
				notes := chainE.Status(&luxnetwork.LuxChain{Spec: s}, kinds.Observed{}).NotMaterialized
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, c.note) }) {
					t.Errorf("spec.%s is not reported: %q", path, notes)
				}
			default:
				got, err := buildNet(s)
				if err != nil {
					t.Fatal(err)
				}
				if reflect.DeepEqual(want, got) {
					t.Errorf("changing spec.%s changed nothing of the network", path)
				}
			}
		})
	}
}

func toInput(t *testing.T, o runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(luxnetwork.GroupVersion.String())
	u.SetKind(reflect.TypeOf(o).Elem().Name())
	return u
}

// TestLuxfiUnknownFieldRefused: the luxfi CRDs store any field; one the Kind does not declare
// is refused naming it, through the same decode the controller's cache and render use.
func TestLuxfiUnknownFieldRefused(t *testing.T) {
	for kind, spec := range map[string]map[string]any{
		"LuxIndexer":  {"networkRef": "luxd", "chainAlias": "C", "chainId": int64(1), "replicass": int64(2)},
		"LuxExplorer": {"networkRef": "luxd", "indexerRefs": []any{map[string]any{"indexerName": "i", "displayName": "I", "colour": "red"}}},
		"LuxGateway":  {"networkRef": "luxd", "host": "h", "tls": map[string]any{"secretName": "s", "issuerr": "x"}},
		"LuxMPC":      {"nodez": int64(3)},
		"LuxChain":    {"networkRef": "luxd", "blockchainId": "x", "vmm": map[string]any{}},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": luxnetwork.GroupVersion.String(), "kind": kind,
			"metadata": map[string]any{"name": "x", "namespace": "ns", "uid": "u"}, "spec": spec}}
		_, err := kinds.Builtin().Build(u, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
		h, ok := kinds.AsHalt(err)
		if !ok || h.Reason != kinds.ReasonInvalidSpec || !strings.Contains(h.Message, "unknown field") {
			t.Errorf("%s with an unknown field: %v", kind, err)
		}
		delete(spec, "replicass")
	}
}

// TestLuxfiAppsReadTheirInputs: the indexer's RPC, the gateway's backends and the explorer's
// indexer URLs use the ports the referenced network and indexer declare; without them, the
// luxfi operator's constants.
func TestLuxfiAppsReadTheirInputs(t *testing.T) {
	in := luxfiInputs(t)
	build := func(cr kinds.Object, kind string, inputs []*unstructured.Unstructured) string {
		objs, err := kinds.Builtin()[luxfiRef(kind)].Build(cr, kinds.Context{APIGroup: kinds.DefaultAPIGroup, Inputs: inputs})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(objs)
		return string(b)
	}
	idx := &luxnetwork.LuxIndexer{ObjectMeta: objMeta("indexer-c"), Spec: luxnetwork.LuxIndexerSpec{NetworkRef: "luxd", ChainAlias: "C", ChainID: 1}}
	gw := &luxnetwork.LuxGateway{ObjectMeta: objMeta("gw"), Spec: luxnetwork.LuxGatewaySpec{NetworkRef: "luxd", Host: "h", IndexerRefs: []string{"indexer-c"}}}
	exp := &luxnetwork.LuxExplorer{ObjectMeta: objMeta("exp"), Spec: luxnetwork.LuxExplorerSpec{NetworkRef: "luxd", IndexerRefs: []luxnetwork.ExplorerChainRef{{IndexerName: "indexer-c", DisplayName: "C"}}}}
	for _, c := range []struct {
		name, got, want string
	}{
		{"indexer with network", build(idx, "LuxIndexer", in), "luxd-0.luxd-headless.ns.svc:9640/ext/bc/C/rpc"},
		{"indexer alone", build(idx, "LuxIndexer", nil), "luxd-0.luxd-headless.ns.svc:9630/ext/bc/C/rpc"},
		{"gateway with network", build(gw, "LuxGateway", in), `http://luxd-headless.ns.svc:9640\"`},
		{"gateway indexer", build(gw, "LuxGateway", in), `http://indexer-c-indexer.ns.svc:4100\"`},
		{"gateway alone", build(gw, "LuxGateway", nil), `http://luxd-headless.ns.svc:9650\"`},
		{"explorer with indexer", build(exp, "LuxExplorer", in), "http://indexer-c-indexer.ns.svc:4100"},
		{"explorer alone", build(exp, "LuxExplorer", nil), "http://indexer-c-indexer.ns.svc:4000"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s: no %s in the objects", c.name, c.want)
		}
	}
}

// TestLuxfiStatus: each Kind reports the luxfi operator's status fields and phases.
func TestLuxfiStatus(t *testing.T) {
	reg := kinds.Builtin()
	ready := kinds.Observed{Phase: v1.PhaseRunning, Ready: true, ReadyReplicas: 2}
	creating := kinds.Observed{Phase: v1.PhaseCreating}
	degraded := kinds.Observed{Phase: v1.PhaseDegraded}
	gw := &luxnetwork.LuxGateway{ObjectMeta: objMeta("gw"), Spec: luxnetwork.LuxGatewaySpec{NetworkRef: "luxd", Host: "api.lux.network",
		IndexerRefs: []string{"a", "b"}, CustomRoutes: []luxnetwork.GatewayRoute{{Path: "/x", Backend: "http://x", Methods: []string{"GET", "POST", "PUT"}}}}}
	for _, c := range []struct {
		kind  string
		cr    kinds.Object
		obs   kinds.Observed
		phase v1.Phase
		field string
		want  any
	}{
		{"LuxIndexer", &luxnetwork.LuxIndexer{ObjectMeta: objMeta("i"), Spec: luxnetwork.LuxIndexerSpec{Port: 4000}}, ready, "Ready", "apiEndpoint", "http://i-indexer.ns.svc:4000"},
		{"LuxIndexer", &luxnetwork.LuxIndexer{ObjectMeta: objMeta("i")}, creating, "Syncing", "databaseReady", false},
		{"LuxIndexer", &luxnetwork.LuxIndexer{ObjectMeta: objMeta("i")}, degraded, "Error", "databaseReady", false},
		{"LuxExplorer", &luxnetwork.LuxExplorer{ObjectMeta: objMeta("e"), Spec: luxnetwork.LuxExplorerSpec{Ingress: &luxnetwork.ExplorerIngressSpec{Host: "explorer.lux.network"}}}, ready, "Ready", "url", "https://explorer.lux.network"},
		{"LuxExplorer", &luxnetwork.LuxExplorer{ObjectMeta: objMeta("e")}, creating, v1.PhaseCreating, "readyReplicas", int64(0)},
		// 6 auto routes, 2 indexer routes, one per custom method: 11 (the luxfi operator said 7 + 1)
		{"LuxGateway", gw, ready, "Ready", "routeCount", int64(11)},
		{"LuxGateway", gw, ready, "Ready", "externalEndpoint", "https://api.lux.network"},
		{"LuxMPC", &luxnetwork.LuxMPC{ObjectMeta: objMeta("m")}, ready, "Ready", "readyNodes", int64(2)},
		{"LuxMPC", &luxnetwork.LuxMPC{ObjectMeta: objMeta("m")}, creating, "Provisioning", "totalNodes", int64(3)},
		{"LuxMPC", &luxnetwork.LuxMPC{ObjectMeta: objMeta("m")}, ready, "Ready", "apiEndpoint", "http://m-mpc-api.ns.svc:8081"},
		{"LuxChain", &luxnetwork.LuxChain{ObjectMeta: objMeta("c"), Spec: luxnetwork.LuxChainSpec{BlockchainID: "b"}}, ready, "Active", "blockchainId", "b"},
		{"LuxNetwork", &luxnetwork.LuxNetwork{ObjectMeta: objMeta("n"), Spec: luxnetwork.LuxNetworkSpec{NetworkID: 96369, Validators: 5}}, ready, "", "totalValidators", int64(5)},
		{"LuxNetwork", &luxnetwork.LuxNetwork{ObjectMeta: objMeta("n"), Spec: luxnetwork.LuxNetworkSpec{NetworkID: 96369, Validators: 5}}, ready, "", "readyValidators", int64(2)},
	} {
		st := reg[luxfiRef(c.kind)].Status(c.cr, c.obs)
		if st.Phase != c.phase || !reflect.DeepEqual(st.Fields[c.field], c.want) {
			t.Errorf("%s %+v: phase %q %s=%v, want %q %v", c.kind, c.obs, st.Phase, c.field, st.Fields[c.field], c.phase, c.want)
		}
	}
	// routeCount is the number of endpoints in the applied krakend.json
	objs, err := reg[luxfiRef("LuxGateway")].Build(gw, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "krakend.json")
		var cfg struct{ Endpoints []any }
		if err := json.Unmarshal([]byte(data), &cfg); err != nil || len(cfg.Endpoints) != 11 {
			t.Errorf("krakend.json has %d endpoints (%v)", len(cfg.Endpoints), err)
		}
	}
	// a spec with only its required fields reports nothing as not materialized
	for kind, cr := range map[string]kinds.Object{
		"LuxIndexer":  &luxnetwork.LuxIndexer{Spec: luxnetwork.LuxIndexerSpec{NetworkRef: "n", ChainAlias: "C", ChainID: 1}},
		"LuxExplorer": &luxnetwork.LuxExplorer{Spec: luxnetwork.LuxExplorerSpec{IndexerRefs: []luxnetwork.ExplorerChainRef{{IndexerName: "i", DisplayName: "I"}}}},
		"LuxGateway":  &luxnetwork.LuxGateway{Spec: luxnetwork.LuxGatewaySpec{NetworkRef: "n", Host: "h"}},
		"LuxMPC":      &luxnetwork.LuxMPC{},
		"LuxChain":    &luxnetwork.LuxChain{Spec: luxnetwork.LuxChainSpec{NetworkRef: "n", BlockchainID: "b", VM: &luxnetwork.VMSpec{VMType: "evm"}}},
	} {
		if n := reg[luxfiRef(kind)].Status(cr, ready).NotMaterialized; len(n) > 0 {
			t.Errorf("%s with only required fields reports %q", kind, n)
		}
	}
}

// TestLuxIndexerServiceSelectsOnlyTheIndexer: the luxfi selector also matched its Postgres
// pod; the Service selects the indexer pods alone, the Deployment keeps its selector.
func TestLuxIndexerServiceSelectsOnlyTheIndexer(t *testing.T) {
	objs, err := kinds.Builtin()[luxfiRef("LuxIndexer")].Build(&luxnetwork.LuxIndexer{ObjectMeta: objMeta("indexer-c"),
		Spec: luxnetwork.LuxIndexerSpec{NetworkRef: "luxd", ChainAlias: "C", ChainID: 1}}, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]map[string]string{}
	var svc map[string]string
	for _, o := range objs {
		switch {
		case o.GetKind() == "Service" && o.GetName() == "indexer-c-indexer":
			svc, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector")
		case o.GetKind() == "Deployment" || o.GetKind() == "StatefulSet":
			pods[o.GetName()], _, _ = unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		}
	}
	matches := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	if !matches(svc, pods["indexer-c-indexer"]) || matches(svc, pods["indexer-c-pg"]) {
		t.Errorf("Service selector %v: indexer pod %v, postgres pod %v", svc, pods["indexer-c-indexer"], pods["indexer-c-pg"])
	}
}
