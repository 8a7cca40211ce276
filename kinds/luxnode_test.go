package kinds_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// specPaths lists the JSON paths of every leaf field of t: structs are walked, a slice of
// structs contributes "[]", pointers are followed; maps, Kubernetes value types and JSON are
// leaves.
func specPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	leaf := t.PkgPath() == "k8s.io/api/core/v1" || t.PkgPath() == "k8s.io/apimachinery/pkg/api/resource" ||
		t == reflect.TypeOf(apiextensionsv1.JSON{})
	switch {
	case leaf:
		return []string{prefix}
	case t.Kind() == reflect.Struct:
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			out = append(out, specPaths(f.Type, p)...)
		}
		return out
	case t.Kind() == reflect.Slice && (t.Elem().Kind() == reflect.Struct || t.Elem().Kind() == reflect.Pointer) && t.Elem() != reflect.TypeOf(corev1.LocalObjectReference{}):
		return specPaths(t.Elem(), prefix+"[]")
	}
	return []string{prefix}
}

// productionLuxRuntime is a spec that sets something in every block, so that changing any
// one field has an object to change.
func productionLuxRuntime() v1.LuxRuntimeSpec {
	return v1.LuxRuntimeSpec{
		Engine: "luxd", NetworkName: "mainnet", NetworkID: 1, Validators: ptr.To[int32](5),
		Image:            &v1.ImageSpec{Repository: "ghcr.io/luxfi/node", Tag: "v1", PullPolicy: corev1.PullIfNotPresent},
		Storage:          &v1.StorageSpec{StorageClassName: "fast", Size: resource.MustParse("100Gi"), RetentionPolicy: "Retain", VolumeName: ptr.To("data")},
		Resources:        &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		GenesisConfigMap: "genesis", UpgradeConfigMap: "upgrade", NodeConfigMap: "node",
		Chains: []v1.LuxChainSpec{
			{ChainID: "C", GenesisConfigMap: "chain-c", BootstrapBlocking: ptr.To(true)},
			{ChainID: "zoo-id", VMID: "evm", Alias: "zoo", TrackingID: "zoo-subnet", GenesisConfigMap: "chain-zoo"},
		},
		PluginSource: &v1.PluginSource{Endpoint: "https://s3", Bucket: "plugins", PluginDir: "/plugins", Image: "fetch:1",
			VMPlugins: []v1.VMPlugin{{VMID: "evm", ObjectKey: "evm/v1", ChainIDs: []string{"zoo-id"}, SHA256: strings.Repeat("a", 64)}}},
		ExportSchedules: []v1.ExportSchedule{
			{Name: "nightly", ChainAlias: "C", Schedule: "0 3 * * *", FromHeight: 1, ToHeight: "100", Image: "export:1",
				Resources:   &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
				Destination: v1.ExportDestination{PVC: &v1.PVCDestination{ClaimName: "exports", SubPath: "main"}}},
			{Name: "s3", ChainAlias: "zoo", Schedule: "0 4 * * *",
				Destination: v1.ExportDestination{S3: &v1.S3Destination{Endpoint: "https://s3", Bucket: "exports", KeyPrefix: "zoo", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}},
		},
		SeedRestore: &v1.SeedRestore{Enabled: true, DataDir: "/data", Image: "seed:1",
			Sources: []v1.SeedSource{{Type: "https", URL: "https://seeds/x.tar.zst", ExpectedHash: strings.Repeat("b", 64)}}},
		StakingPort: 9631, HTTPPort: 9630,
		Labels: map[string]string{"team": "chain"}, Annotations: map[string]string{"note": "x"}, ImagePullSecrets: []string{"ghcr"},
		Replication: &v1.Replication{Enabled: true, S3Endpoint: "s3.example", S3Bucket: "snaps", S3Path: "main", S3Region: "eu-1",
			CredentialsSecret: "snap-creds", SnapshotIntervalSeconds: 3600, SourceNodeIndex: ptr.To[int32](1)},
		Staking:         &v1.Staking{SecretName: "staking", KMS: &v1.KMSSecretRef{ProjectSlug: "p", EnvSlug: "e", SecretsPath: "/staking", Keys: []string{"staker-0.crt"}}},
		NodeFlags:       map[string]string{"db-type": "zapdb"},
		UpgradeStrategy: &v1.LuxUpgradeStrategy{MaxUnavailable: ptr.To[int32](1)},
		StartupGate:     &v1.LuxStartupGate{Enabled: ptr.To(true), MinPeers: ptr.To[int32](2), TimeoutSeconds: ptr.To[int32](60), CheckIntervalSeconds: ptr.To[int32](5), OnTimeout: "StartAnyway"},
	}
}

// luxRuntimeChanges changes one field of the production spec each. "halt" marks a field this
// operator refuses: the change must give a Halt. Every other change must change the objects.
var luxRuntimeChanges = map[string]struct {
	change func(*v1.LuxRuntimeSpec)
	halt   bool
}{
	"engine":                   {change: func(s *v1.LuxRuntimeSpec) { s.Engine = "hanzod" }},
	"networkName":              {change: func(s *v1.LuxRuntimeSpec) { s.NetworkID = 0; s.NetworkName = "testnet" }},
	"networkID":                {change: func(s *v1.LuxRuntimeSpec) { s.NetworkID = 5 }},
	"validators":               {change: func(s *v1.LuxRuntimeSpec) { s.Validators = ptr.To[int32](7) }},
	"image.repository":         {change: func(s *v1.LuxRuntimeSpec) { s.Image.Repository = "other" }},
	"image.tag":                {change: func(s *v1.LuxRuntimeSpec) { s.Image.Tag = "v2" }},
	"image.pullPolicy":         {change: func(s *v1.LuxRuntimeSpec) { s.Image.PullPolicy = corev1.PullAlways }},
	"storage.storageClassName": {change: func(s *v1.LuxRuntimeSpec) { s.Storage.StorageClassName = "slow" }},
	"storage.size":             {change: func(s *v1.LuxRuntimeSpec) { s.Storage.Size = resource.MustParse("1Ti") }},
	"storage.retentionPolicy":  {change: func(s *v1.LuxRuntimeSpec) { s.Storage.RetentionPolicy = "Delete" }},
	"storage.volumeName":       {change: func(s *v1.LuxRuntimeSpec) { s.Storage.VolumeName = ptr.To("chaindata") }},
	"resources": {change: func(s *v1.LuxRuntimeSpec) {
		s.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	}},
	"chains[].chainID":           {change: func(s *v1.LuxRuntimeSpec) { s.Chains[0].ChainID = "C2" }},
	"chains[].vmID":              {change: func(s *v1.LuxRuntimeSpec) { s.Chains[1].VMID = "other-vm" }},
	"chains[].genesisConfigMap":  {change: func(s *v1.LuxRuntimeSpec) { s.Chains[1].GenesisConfigMap = "other" }},
	"chains[].bootstrapBlocking": {change: func(s *v1.LuxRuntimeSpec) { s.Chains[0].BootstrapBlocking = ptr.To(false) }, halt: true},
	"chains[].component":         {change: func(s *v1.LuxRuntimeSpec) { s.Chains[0].Component = "x" }, halt: true},
	"chains[].alias":             {change: func(s *v1.LuxRuntimeSpec) { s.Chains[1].Alias = "zoo2" }},
	"chains[].trackingID":        {change: func(s *v1.LuxRuntimeSpec) { s.Chains[1].TrackingID = "other-subnet" }},
	"pluginSource.bucket":        {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.Bucket = "b2" }},
	"pluginSource.endpoint":      {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.Endpoint = "https://s4" }},
	"pluginSource.pluginDir":     {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.PluginDir = "/opt/plugins" }},
	"pluginSource.image":         {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.Image = "fetch:2" }},
	"pluginSource.vmPlugins[].vmID": {change: func(s *v1.LuxRuntimeSpec) {
		s.PluginSource.VMPlugins[0].VMID = "evm2"
		s.Chains[1].VMID = "evm2"
	}},
	"pluginSource.vmPlugins[].objectKey":          {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.VMPlugins[0].ObjectKey = "evm/v2" }},
	"pluginSource.vmPlugins[].chainIDs":           {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.VMPlugins[0].ChainIDs = []string{"unknown"} }},
	"pluginSource.vmPlugins[].sha256":             {change: func(s *v1.LuxRuntimeSpec) { s.PluginSource.VMPlugins[0].SHA256 = strings.Repeat("c", 64) }},
	"tenantImports[].tenant":                      {change: func(s *v1.LuxRuntimeSpec) { s.TenantImports = []v1.TenantImport{{Tenant: "t"}} }, halt: true},
	"tenantImports[].chainAlias":                  {change: func(s *v1.LuxRuntimeSpec) { s.TenantImports = []v1.TenantImport{{ChainAlias: "a"}} }, halt: true},
	"tenantImports[].blockchainID":                {change: func(s *v1.LuxRuntimeSpec) { s.TenantImports = []v1.TenantImport{{BlockchainID: "b"}} }, halt: true},
	"tenantImports[].sourceURL":                   {change: func(s *v1.LuxRuntimeSpec) { s.TenantImports = []v1.TenantImport{{SourceURL: "u"}} }, halt: true},
	"tenantImports[].sha256":                      {change: func(s *v1.LuxRuntimeSpec) { s.TenantImports = []v1.TenantImport{{SHA256: "h"}} }, halt: true},
	"exportSchedules[].name":                      {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].Name = "daily" }},
	"exportSchedules[].chainAlias":                {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].ChainAlias = "zoo" }},
	"exportSchedules[].schedule":                  {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].Schedule = "0 5 * * *" }},
	"exportSchedules[].destination.pvc.claimName": {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].Destination.PVC.ClaimName = "other" }},
	"exportSchedules[].destination.pvc.subPath":   {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].Destination.PVC.SubPath = "other" }},
	"exportSchedules[].destination.s3.endpoint":   {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[1].Destination.S3.Endpoint = "https://s5" }},
	"exportSchedules[].destination.s3.bucket":     {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[1].Destination.S3.Bucket = "b3" }},
	"exportSchedules[].destination.s3.credentialsSecretRef": {change: func(s *v1.LuxRuntimeSpec) {
		s.ExportSchedules[1].Destination.S3.CredentialsSecretRef.Name = "other"
	}},
	"exportSchedules[].destination.s3.keyPrefix": {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[1].Destination.S3.KeyPrefix = "p2" }},
	"exportSchedules[].fromHeight":               {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].FromHeight = 50 }},
	"exportSchedules[].toHeight":                 {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].ToHeight = "latest" }},
	"exportSchedules[].image":                    {change: func(s *v1.LuxRuntimeSpec) { s.ExportSchedules[0].Image = "export:2" }},
	"exportSchedules[].resources": {change: func(s *v1.LuxRuntimeSpec) {
		s.ExportSchedules[0].Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}
	}},
	"tenantNetworks[].parentNetworkId": {change: func(s *v1.LuxRuntimeSpec) { s.TenantNetworks = []v1.TenantNetwork{{ParentNetworkID: "p"}} }, halt: true},
	"tenantNetworks[].chains[].blockchainId": {change: func(s *v1.LuxRuntimeSpec) {
		s.TenantNetworks = []v1.TenantNetwork{{Chains: []v1.TenantChain{{BlockchainID: "b"}}}}
	}, halt: true},
	"tenantNetworks[].chains[].vmId": {change: func(s *v1.LuxRuntimeSpec) {
		s.TenantNetworks = []v1.TenantNetwork{{Chains: []v1.TenantChain{{VMID: "v"}}}}
	}, halt: true},
	"tenantNetworks[].chains[].configMapRef": {change: func(s *v1.LuxRuntimeSpec) {
		s.TenantNetworks = []v1.TenantNetwork{{Chains: []v1.TenantChain{{ConfigMapRef: corev1.LocalObjectReference{Name: "c"}}}}}
	}, halt: true},
	"seedRestore.enabled":                {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.Enabled = false }},
	"seedRestore.sources[].type":         {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.Sources[0].Type = "s3" }, halt: true},
	"seedRestore.sources[].url":          {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.Sources[0].URL = "https://seeds/y.tar.gz" }},
	"seedRestore.sources[].expectedHash": {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.Sources[0].ExpectedHash = strings.Repeat("d", 64) }},
	"seedRestore.dataDir":                {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.DataDir = "/data/sub" }},
	"seedRestore.image":                  {change: func(s *v1.LuxRuntimeSpec) { s.SeedRestore.Image = "seed:2" }},
	"wipeOnRecreate.scope":               {change: func(s *v1.LuxRuntimeSpec) { s.WipeOnRecreate = &v1.WipeOnRecreate{Scope: "all"} }, halt: true},
	"stakingPort":                        {change: func(s *v1.LuxRuntimeSpec) { s.StakingPort = 19631 }},
	"httpPort":                           {change: func(s *v1.LuxRuntimeSpec) { s.HTTPPort = 19630 }},
	"labels":                             {change: func(s *v1.LuxRuntimeSpec) { s.Labels["x"] = "y" }},
	"annotations":                        {change: func(s *v1.LuxRuntimeSpec) { s.Annotations["x"] = "y" }},
	"imagePullSecrets":                   {change: func(s *v1.LuxRuntimeSpec) { s.ImagePullSecrets = []string{"other"} }},
	"replication.enabled":                {change: func(s *v1.LuxRuntimeSpec) { s.Replication.Enabled = false }},
	"replication.s3Endpoint":             {change: func(s *v1.LuxRuntimeSpec) { s.Replication.S3Endpoint = "s3.other" }},
	"replication.s3Bucket":               {change: func(s *v1.LuxRuntimeSpec) { s.Replication.S3Bucket = "b4" }},
	"replication.s3Path":                 {change: func(s *v1.LuxRuntimeSpec) { s.Replication.S3Path = "p4" }},
	"replication.s3Region":               {change: func(s *v1.LuxRuntimeSpec) { s.Replication.S3Region = "us-2" }},
	"replication.s3UseSsl":               {change: func(s *v1.LuxRuntimeSpec) { s.Replication.S3UseSSL = true }},
	"replication.credentialsSecret":      {change: func(s *v1.LuxRuntimeSpec) { s.Replication.CredentialsSecret = "other" }},
	"replication.ageIdentitySecret":      {change: func(s *v1.LuxRuntimeSpec) { s.Replication.AgeIdentitySecret = "age" }, halt: true},
	"replication.ageRecipient":           {change: func(s *v1.LuxRuntimeSpec) { s.Replication.AgeRecipient = "age1x" }, halt: true},
	"replication.snapshotIntervalSeconds": {change: func(s *v1.LuxRuntimeSpec) {
		s.Replication.SnapshotIntervalSeconds = 1800
	}},
	"replication.incrementalIntervalSeconds": {change: func(s *v1.LuxRuntimeSpec) { s.Replication.IncrementalIntervalSeconds = 60 }, halt: true},
	"replication.sourceNodeIndex":            {change: func(s *v1.LuxRuntimeSpec) { s.Replication.SourceNodeIndex = ptr.To[int32](2) }},
	"staking.secretName":                     {change: func(s *v1.LuxRuntimeSpec) { s.Staking.SecretName = "other" }},
	"staking.kms.hostApi":                    {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.HostAPI = "https://kms" }, halt: true},
	"staking.kms.hostAPI":                    {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.LegacyHostAPI = "https://kms" }, halt: true},
	"staking.kms.projectSlug":                {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.ProjectSlug = "p2" }},
	"staking.kms.envSlug":                    {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.EnvSlug = "e2" }},
	"staking.kms.secretsPath":                {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.SecretsPath = "/other" }},
	"staking.kms.credentialsRef.name": {change: func(s *v1.LuxRuntimeSpec) {
		s.Staking.KMS.CredentialsRef = &v1.SecretReference{Name: "c"}
	}, halt: true},
	"staking.kms.credentialsRef.namespace": {change: func(s *v1.LuxRuntimeSpec) {
		s.Staking.KMS.CredentialsRef = &v1.SecretReference{Namespace: "n"}
	}, halt: true},
	"genesisConfigMap":              {change: func(s *v1.LuxRuntimeSpec) { s.GenesisConfigMap = "g2" }},
	"staking.kms.resyncInterval":    {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.ResyncInterval = ptr.To[int32](60) }, halt: true},
	"staking.kms.managedSecretName": {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.ManagedSecretName = "other" }, halt: true},
	"staking.kms.name":              {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.Name = "sync" }, halt: true},
	"staking.kms.keys":              {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.Keys = []string{"other"} }},
	"staking.kms.secretName":        {change: func(s *v1.LuxRuntimeSpec) { s.Staking.KMS.LegacySecretName = "other" }, halt: true},
	"upgradeConfigMap":              {change: func(s *v1.LuxRuntimeSpec) { s.UpgradeConfigMap = "u2" }},
	"nodeConfigMap":                 {change: func(s *v1.LuxRuntimeSpec) { s.NodeConfigMap = "n2" }},
	"trackAllChains":                {change: func(s *v1.LuxRuntimeSpec) { s.TrackAllChains = true }},
	"nodeFlags":                     {change: func(s *v1.LuxRuntimeSpec) { s.NodeFlags["log-level"] = "debug" }},
	"upgradeStrategy.maxUnavailable": {change: func(s *v1.LuxRuntimeSpec) {
		s.UpgradeStrategy.MaxUnavailable = ptr.To[int32](2)
	}},
	"startupGate.enabled":              {change: func(s *v1.LuxRuntimeSpec) { s.StartupGate.Enabled = ptr.To(false) }},
	"startupGate.minPeers":             {change: func(s *v1.LuxRuntimeSpec) { s.StartupGate.MinPeers = ptr.To[int32](3) }},
	"startupGate.timeoutSeconds":       {change: func(s *v1.LuxRuntimeSpec) { s.StartupGate.TimeoutSeconds = ptr.To[int32](90) }},
	"startupGate.checkIntervalSeconds": {change: func(s *v1.LuxRuntimeSpec) { s.StartupGate.CheckIntervalSeconds = ptr.To[int32](9) }},
	"startupGate.onTimeout":            {change: func(s *v1.LuxRuntimeSpec) { s.StartupGate.OnTimeout = "Fail" }},
}

func buildLuxRuntimeSpec(s v1.LuxRuntimeSpec) ([]*unstructured.Unstructured, error) {
	cr := &v1.LuxRuntime{ObjectMeta: objMeta("luxd"), Spec: s}
	return kinds.Builtin()[canonRef("LuxRuntime")].Build(cr, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
}

// TestLuxRuntimeNoFieldIgnored walks every field of the LuxRuntime spec: each has a change
// that either changes the built objects or, for a refused field, gives a Halt. A new field
// without a case fails the test, so no field can be accepted and silently dropped.
func TestLuxRuntimeNoFieldIgnored(t *testing.T) {
	base, err := buildLuxRuntimeSpec(productionLuxRuntime())
	if err != nil {
		t.Fatalf("the production spec must build: %v", err)
	}
	paths := specPaths(reflect.TypeOf(v1.LuxRuntimeSpec{}), "")
	for _, p := range paths {
		if _, ok := luxRuntimeChanges[p]; !ok {
			t.Errorf("spec.%s has no case: materialize it or refuse it, and add a change here", p)
		}
	}
	for path, c := range luxRuntimeChanges {
		t.Run(path, func(t *testing.T) {
			if !slices.Contains(paths, path) {
				t.Fatalf("no field spec.%s", path)
			}
			s := productionLuxRuntime()
			c.change(&s)
			got, err := buildLuxRuntimeSpec(s)
			_, halted := kinds.AsHalt(err)
			switch {
			case c.halt && !halted:
				t.Fatalf("a refused field built (err %v)", err)
			case c.halt:
				return
			case err != nil && !halted:
				t.Fatal(err)
			case halted:
				return // an invalid value of a materialized field is refused, not dropped
			}
			if reflect.DeepEqual(base, got) {
				t.Errorf("changing spec.%s changed no object: the field is ignored", path)
			}
		})
	}
}

// productionLuxNetwork is the luxfi mainnet CR with every convertible block set.
func productionLuxNetwork() luxnetwork.LuxNetworkSpec {
	raw := func(v any) *apiextensionsv1.JSON {
		b, _ := json.Marshal(v)
		return &apiextensionsv1.JSON{Raw: b}
	}
	return luxnetwork.LuxNetworkSpec{
		NetworkID: 1, Validators: 5,
		Image:         &luxnetwork.ImageSpec{Repository: "ghcr.io/luxfi/node", Tag: "v1", PullPolicy: "IfNotPresent", PullSecrets: []string{"ghcr"}},
		Storage:       &luxnetwork.StorageSpec{StorageClass: "do", Size: "500Gi"},
		Resources:     &luxnetwork.ResourceSpec{CPURequest: "1", CPULimit: "2", MemoryRequest: "1Gi", MemoryLimit: "2Gi"},
		Config:        raw(map[string]any{"log-display-level": "info"}),
		Genesis:       raw(map[string]any{"networkID": 1}),
		Service:       &luxnetwork.ServiceSpec{ServiceType: "ClusterIP", Annotations: map[string]string{"a": "b"}},
		ChainTracking: &luxnetwork.ChainTrackingSpec{},
		Ports:         &luxnetwork.PortSpec{HTTP: 9630, Staking: 9631},
		Staking: &luxnetwork.StakingSpec{SecretName: "staking", KMS: &luxnetwork.KMSStakingSpec{HostAPI: "https://kms", ProjectSlug: "p", EnvSlug: "e",
			SecretsPath: "/staking", ResyncInterval: ptr.To[uint64](300), Auth: luxnetwork.KMSAuthSpec{CredentialsSecret: "creds", CredentialsNamespace: "lux-system"}}},
		PluginSource:  &luxnetwork.PluginSource{Bucket: "plugins", Endpoint: "https://s3", VMPlugins: []luxnetwork.VMPluginMapping{{VMID: "evm", ObjectKey: "evm/v1", SHA256: strings.Repeat("a", 64)}}},
		Security:      &luxnetwork.SecuritySpec{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](1000)},
		AdoptExisting: true,
		Chains:        []luxnetwork.ChainRef{{BlockchainID: "zoo-id", Alias: "zoo", TrackingID: "zoo-subnet"}},
		Consensus: &luxnetwork.ConsensusSpec{SampleSize: ptr.To[uint32](5), QuorumSize: ptr.To[uint32](4), SybilProtectionEnabled: ptr.To(true),
			RequireValidatorToConnect: ptr.To(false), AllowPrivateIPs: ptr.To(true)},
		DBType:                 "zapdb",
		UpgradeConfig:          raw(map[string]any{"durangoTimestamp": 0}),
		EVMConfig:              raw(map[string]any{"pruning-enabled": false}),
		ChainUpgradeConfig:     raw(map[string]any{"precompileUpgrades": []any{}}),
		Bootstrap:              &luxnetwork.BootstrapSpec{UseHostnames: ptr.To(true)},
		API:                    &luxnetwork.APISpec{AdminEnabled: ptr.To(true), MetricsEnabled: ptr.To(true), IndexEnabled: ptr.To(true), HTTPAllowedHosts: "*"},
		NetworkCompressionType: "zstd",
		ChainAliases:           map[string][]string{"zoo-id": {"zoo"}},
		ImportChainData:        "/data/import",
		UpgradeStrategy:        &luxnetwork.UpgradeStrategy{StrategyType: "RollingUpdate", MaxUnavailable: ptr.To[uint32](1), HealthCheckBetweenRestarts: ptr.To(true)},
		SeedRestore: &luxnetwork.SeedRestoreSpec{Enabled: true, SourceType: "ObjectStore", ObjectStoreURL: "https://s3/seed.tar.gz",
			ExpectedHash: strings.Repeat("b", 64), RestorePolicy: "IfNotSeeded", MarkerPath: "/data/.seeded"},
		SnapshotSchedule: &luxnetwork.SnapshotScheduleSpec{Enabled: true, IntervalSeconds: ptr.To[uint64](3600), ObjectStoreEndpoint: "https://s3",
			Bucket: "snaps", Prefix: "mainnet", AccessKey: "hanzo", SecretKeyRef: "snap-creds", SourceNodeIndex: 0, IncludeRLPExports: ptr.To(true), MaxRetained: ptr.To[uint32](5)},
		StartupGate: &luxnetwork.StartupGateSpec{Enabled: ptr.To(true), MinPeers: ptr.To[uint32](2), TimeoutSeconds: ptr.To[uint64](30), CheckIntervalSeconds: ptr.To[uint64](5), OnTimeout: "StartAnyway"},
	}
}

// luxNetworkChanges is luxRuntimeChanges for the LuxNetwork spec. "same" marks a field whose
// luxfi meaning this operator has by construction (adoptExisting: children are always applied
// in place), checked instead by the change leaving the objects as they are.
var luxNetworkChanges = map[string]struct {
	change     func(*luxnetwork.LuxNetworkSpec)
	halt, same bool
}{
	"networkId":                             {change: func(s *luxnetwork.LuxNetworkSpec) { s.NetworkID = 5 }},
	"validators":                            {change: func(s *luxnetwork.LuxNetworkSpec) { s.Validators = 7 }},
	"image.repository":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.Image.Repository = "other" }},
	"image.tag":                             {change: func(s *luxnetwork.LuxNetworkSpec) { s.Image.Tag = "v2" }},
	"image.pullPolicy":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.Image.PullPolicy = "Always" }},
	"image.pullSecrets":                     {change: func(s *luxnetwork.LuxNetworkSpec) { s.Image.PullSecrets = []string{"x"} }},
	"storage.storageClass":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.Storage.StorageClass = "x" }},
	"storage.size":                          {change: func(s *luxnetwork.LuxNetworkSpec) { s.Storage.Size = "1Ti" }},
	"resources.cpuRequest":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.Resources.CPURequest = "3" }},
	"resources.cpuLimit":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.Resources.CPULimit = "3" }},
	"resources.memoryRequest":               {change: func(s *luxnetwork.LuxNetworkSpec) { s.Resources.MemoryRequest = "3Gi" }},
	"resources.memoryLimit":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.Resources.MemoryLimit = "3Gi" }},
	"config":                                {change: func(s *luxnetwork.LuxNetworkSpec) { s.Config.Raw = []byte(`{"x":1}`) }},
	"genesis":                               {change: func(s *luxnetwork.LuxNetworkSpec) { s.Genesis.Raw = []byte(`{"networkID":2}`) }},
	"genesisConfigMap":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.Genesis = nil; s.GenesisConfigMap = "g" }},
	"mpc":                                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.MPC = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"metrics":                               {change: func(s *luxnetwork.LuxNetworkSpec) { s.Metrics = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"service.serviceType":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Service.ServiceType = "LoadBalancer" }},
	"service.annotations":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Service.Annotations["c"] = "d" }},
	"service.ingressEnabled":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.Service.IngressEnabled = true }, halt: true},
	"service.ingressHost":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Service.IngressHost = "h" }, halt: true},
	"service.perPodServices":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.Service.PerPodServices = true }},
	"chainTracking.trackAllChains":          {change: func(s *luxnetwork.LuxNetworkSpec) { s.ChainTracking.TrackAllChains = true }},
	"chainTracking.trackedChains":           {change: func(s *luxnetwork.LuxNetworkSpec) { s.ChainTracking.TrackedChains = []string{"x"} }, halt: true},
	"chainTracking.aliases":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.ChainTracking.Aliases = []string{"x"} }, halt: true},
	"snapshot":                              {change: func(s *luxnetwork.LuxNetworkSpec) { s.Snapshot = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"rlpImport":                             {change: func(s *luxnetwork.LuxNetworkSpec) { s.RLPImport = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"ports.http":                            {change: func(s *luxnetwork.LuxNetworkSpec) { s.Ports.HTTP = 9650 }},
	"ports.staking":                         {change: func(s *luxnetwork.LuxNetworkSpec) { s.Ports.Staking = 9651 }},
	"staking.secretName":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.SecretName = "other" }},
	"staking.kms.hostApi":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.HostAPI = "https://kms2" }},
	"staking.kms.projectSlug":               {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.ProjectSlug = "p2" }},
	"staking.kms.envSlug":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.EnvSlug = "e2" }},
	"staking.kms.secretsPath":               {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.SecretsPath = "/x" }},
	"staking.kms.auth.credentialsSecret":    {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.Auth.CredentialsSecret = "c2" }},
	"staking.kms.auth.credentialsNamespace": {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.Auth.CredentialsNamespace = "n2" }},
	"staking.kms.resyncInterval":            {change: func(s *luxnetwork.LuxNetworkSpec) { s.Staking.KMS.ResyncInterval = ptr.To[uint64](60) }},
	"init":                                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.Init = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"pluginSource.bucket":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.Bucket = "b2" }},
	"pluginSource.endpoint":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.Endpoint = "https://s4" }},
	"pluginSource.credentialsSecret":        {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.CredentialsSecret = "c" }, halt: true},
	"pluginSource.vmPlugins[].vmId":         {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.VMPlugins[0].VMID = "evm2" }},
	"pluginSource.vmPlugins[].objectKey":    {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.VMPlugins[0].ObjectKey = "k2" }},
	"pluginSource.vmPlugins[].sha256":       {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.VMPlugins[0].SHA256 = strings.Repeat("c", 64) }},
	"pluginSource.kmsConfigPath":            {change: func(s *luxnetwork.LuxNetworkSpec) { s.PluginSource.KMSConfigPath = "/p" }, halt: true},
	"startupScript":                         {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupScript = "s" }, halt: true},
	"security.runAsUser":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.Security.RunAsUser = ptr.To[int64](1) }},
	"security.runAsGroup":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Security.RunAsGroup = ptr.To[int64](1) }},
	"security.fsGroup":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.Security.FSGroup = ptr.To[int64](1) }},
	"adoptExisting":                         {change: func(s *luxnetwork.LuxNetworkSpec) { s.AdoptExisting = false }, same: true},
	"chains[].blockchainId":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.Chains[0].BlockchainID = "x"; s.ChainAliases = nil }},
	"chains[].alias":                        {change: func(s *luxnetwork.LuxNetworkSpec) { s.Chains[0].Alias = "zoo2"; s.ChainAliases = nil }},
	"chains[].trackingId":                   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Chains[0].TrackingID = "t2" }},
	"consensus.sampleSize":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.Consensus.SampleSize = ptr.To[uint32](7) }},
	"consensus.quorumSize":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.Consensus.QuorumSize = ptr.To[uint32](6) }},
	"consensus.sybilProtectionEnabled":      {change: func(s *luxnetwork.LuxNetworkSpec) { s.Consensus.SybilProtectionEnabled = ptr.To(false) }},
	"consensus.requireValidatorToConnect":   {change: func(s *luxnetwork.LuxNetworkSpec) { s.Consensus.RequireValidatorToConnect = ptr.To(true) }},
	"consensus.allowPrivateIps":             {change: func(s *luxnetwork.LuxNetworkSpec) { s.Consensus.AllowPrivateIPs = ptr.To(false) }},
	"dbType":                                {change: func(s *luxnetwork.LuxNetworkSpec) { s.DBType = "leveldb" }},
	"upgradeConfig":                         {change: func(s *luxnetwork.LuxNetworkSpec) { s.UpgradeConfig.Raw = []byte(`{"etnaTimestamp":1}`) }},
	"evmConfig":                             {change: func(s *luxnetwork.LuxNetworkSpec) { s.EVMConfig.Raw = []byte(`{"pruning-enabled":true}`) }},
	"chainUpgradeConfig":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.ChainUpgradeConfig.Raw = []byte(`{}`) }},
	"gateway.configMap":                     {change: func(s *luxnetwork.LuxNetworkSpec) { s.Gateway = &luxnetwork.GatewaySpec{ConfigMap: "g"} }, halt: true},
	"gateway.autoRoutes":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.Gateway = &luxnetwork.GatewaySpec{AutoRoutes: true} }, halt: true},
	"gateway.host":                          {change: func(s *luxnetwork.LuxNetworkSpec) { s.Gateway = &luxnetwork.GatewaySpec{Host: "h"} }, halt: true},
	"bootstrap.useHostnames":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.Bootstrap.UseHostnames = ptr.To(false) }, halt: true},
	"bootstrap.externalIps":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.Bootstrap.ExternalIPs = []string{"1.2.3.4"} }, halt: true},
	"api.adminEnabled":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.API.AdminEnabled = ptr.To(false) }},
	"api.metricsEnabled":                    {change: func(s *luxnetwork.LuxNetworkSpec) { s.API.MetricsEnabled = ptr.To(false) }},
	"api.indexEnabled":                      {change: func(s *luxnetwork.LuxNetworkSpec) { s.API.IndexEnabled = ptr.To(false) }},
	"api.httpAllowedHosts":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.API.HTTPAllowedHosts = "localhost" }},
	"networkCompressionType":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.NetworkCompressionType = "none" }},
	"chainAliases":                          {change: func(s *luxnetwork.LuxNetworkSpec) { s.ChainAliases["zoo-id"] = []string{"zoo", "z"} }},
	"importChainData":                       {change: func(s *luxnetwork.LuxNetworkSpec) { s.ImportChainData = "/data/other" }},
	"healthPolicy":                          {change: func(s *luxnetwork.LuxNetworkSpec) { s.HealthPolicy = &apiextensionsv1.JSON{Raw: []byte(`{}`)} }, halt: true},
	"upgradeStrategy.strategyType":          {change: func(s *luxnetwork.LuxNetworkSpec) { s.UpgradeStrategy.StrategyType = "RollingCanary" }, halt: true},
	"upgradeStrategy.maxUnavailable":        {change: func(s *luxnetwork.LuxNetworkSpec) { s.UpgradeStrategy.MaxUnavailable = ptr.To[uint32](2) }},
	"upgradeStrategy.healthCheckBetweenRestarts": {change: func(s *luxnetwork.LuxNetworkSpec) {
		s.UpgradeStrategy.HealthCheckBetweenRestarts = ptr.To(false)
	}, halt: true},
	"upgradeStrategy.stabilizationSeconds": {change: func(s *luxnetwork.LuxNetworkSpec) { s.UpgradeStrategy.StabilizationSeconds = ptr.To[uint64](60) }, halt: true},
	"seedRestore.enabled":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.Enabled = false }},
	"seedRestore.sourceType":               {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.SourceType = "VolumeSnapshot" }, halt: true},
	"seedRestore.objectStoreUrl":           {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.ObjectStoreURL = "https://s3/other.tar.gz" }},
	"seedRestore.expectedHash":             {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.ExpectedHash = strings.Repeat("e", 64) }},
	"seedRestore.volumeSnapshotName": {change: func(s *luxnetwork.LuxNetworkSpec) {
		s.SeedRestore.SourceType, s.SeedRestore.VolumeSnapshotName = "VolumeSnapshot", "v"
	}, halt: true},
	"seedRestore.donorPvcName": {change: func(s *luxnetwork.LuxNetworkSpec) {
		s.SeedRestore.SourceType, s.SeedRestore.DonorPVCName = "PVCClone", "d"
	}, halt: true},
	"seedRestore.restorePolicy":            {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.RestorePolicy = "Always" }, halt: true},
	"seedRestore.markerPath":               {change: func(s *luxnetwork.LuxNetworkSpec) { s.SeedRestore.MarkerPath = "/data/.restored" }},
	"snapshotSchedule.enabled":             {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.Enabled = false }},
	"snapshotSchedule.intervalSeconds":     {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.IntervalSeconds = ptr.To[uint64](7200) }},
	"snapshotSchedule.objectStoreEndpoint": {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.ObjectStoreEndpoint = "https://s5" }},
	"snapshotSchedule.bucket":              {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.Bucket = "b5" }},
	"snapshotSchedule.prefix":              {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.Prefix = "p5" }},
	"snapshotSchedule.accessKey":           {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.AccessKey = "other" }},
	"snapshotSchedule.secretKeyRef":        {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.SecretKeyRef = "other" }},
	"snapshotSchedule.sourceNodeIndex":     {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.SourceNodeIndex = 3 }},
	"snapshotSchedule.includeRlpExports":   {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.IncludeRLPExports = ptr.To(false) }},
	"snapshotSchedule.maxRetained":         {change: func(s *luxnetwork.LuxNetworkSpec) { s.SnapshotSchedule.MaxRetained = ptr.To[uint32](2) }},
	"startupGate.enabled":                  {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.Enabled = ptr.To(false) }},
	"startupGate.minPeers":                 {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.MinPeers = ptr.To[uint32](3) }},
	"startupGate.waitForHealthyPeer":       {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.WaitForHealthyPeer = true }, halt: true},
	"startupGate.timeoutSeconds":           {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.TimeoutSeconds = ptr.To[uint64](99) }},
	"startupGate.checkIntervalSeconds":     {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.CheckIntervalSeconds = ptr.To[uint64](9) }},
	"startupGate.onTimeout":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.StartupGate.OnTimeout = "Fail" }},
	"allowValidatorRemoval":                {change: func(s *luxnetwork.LuxNetworkSpec) { s.AllowValidatorRemoval = ptr.To(true) }, halt: true},
}

func buildLuxNetworkSpec(s luxnetwork.LuxNetworkSpec) ([]*unstructured.Unstructured, error) {
	cr := &luxnetwork.LuxNetwork{ObjectMeta: objMeta("luxd"), Spec: s}
	return kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: "LuxNetwork"}].Build(cr, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
}

// TestLuxNetworkNoFieldIgnored is TestLuxRuntimeNoFieldIgnored for LuxNetwork: every field of
// the luxfi spec is converted (its change changes the objects) or refused (a Halt).
func TestLuxNetworkNoFieldIgnored(t *testing.T) {
	base, err := buildLuxNetworkSpec(productionLuxNetwork())
	if err != nil {
		t.Fatalf("the production spec must build: %v", err)
	}
	paths := specPaths(reflect.TypeOf(luxnetwork.LuxNetworkSpec{}), "")
	sort.Strings(paths)
	for _, p := range paths {
		if _, ok := luxNetworkChanges[p]; !ok {
			t.Errorf("spec.%s has no case: convert it or refuse it, and add a change here", p)
		}
	}
	for path, c := range luxNetworkChanges {
		t.Run(path, func(t *testing.T) {
			if !slices.Contains(paths, path) {
				t.Fatalf("no field spec.%s", path)
			}
			s := productionLuxNetwork()
			c.change(&s)
			got, err := buildLuxNetworkSpec(s)
			_, halted := kinds.AsHalt(err)
			switch {
			case c.halt && !halted:
				t.Fatalf("a refused field built (err %v)", err)
			case c.halt:
				return
			case err != nil:
				t.Fatalf("build: %v", err)
			case c.same:
				if !reflect.DeepEqual(base, got) {
					t.Errorf("changing spec.%s changed the objects", path)
				}
			case reflect.DeepEqual(base, got):
				t.Errorf("changing spec.%s changed no object: the field is ignored", path)
			}
		})
	}
}

// TestLuxNetworkSeedWithoutHash: a LuxNetwork's https archive without expectedHash builds
// (verified against <url>.sha256 by its init container) and its status carries the
// SeedRestoreUnverified Warning; an http one, and a LuxRuntime source without a hash, are
// still refused.
func TestLuxNetworkSeedWithoutHash(t *testing.T) {
	if _, err := buildLuxNetworkSpec(luxNetworkSeedSpec("https://s3.lux.network/lux-snapshots/mainnet/mainnet-node0-full.tar.gz")); err != nil {
		t.Fatalf("https without expectedHash: %v", err)
	}
	if _, err := buildLuxNetworkSpec(luxNetworkSeedSpec("http://s3.lux.network/x.tar.gz")); err == nil || !strings.Contains(err.Error(), "only an https archive") {
		t.Errorf("http without expectedHash: err %v, want a refusal", err)
	}
	rt := productionLuxRuntime()
	rt.SeedRestore.Sources[0].ExpectedHash = ""
	if _, err := buildLuxRuntimeSpec(rt); err == nil || !strings.Contains(err.Error(), "needs expectedHash") {
		t.Errorf("LuxRuntime without expectedHash: err %v, want a refusal", err)
	}
	e := kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: "LuxNetwork"}]
	unverified := &luxnetwork.LuxNetwork{ObjectMeta: objMeta("luxd"), Spec: luxNetworkSeedSpec("https://s3/x.tar.gz")}
	sf := e.Status(unverified, kinds.Observed{})
	if len(sf.Warnings) != 1 || sf.Warnings[0].Reason != kinds.ReasonSeedRestoreUnverified || !strings.Contains(sf.Warnings[0].Message, "https://s3/x.tar.gz.sha256") {
		t.Errorf("warnings %+v, want one SeedRestoreUnverified naming the checksum URL", sf.Warnings)
	}
	verified := unverified.DeepCopy()
	verified.Spec.SeedRestore.ExpectedHash = strings.Repeat("a", 64)
	if sf := e.Status(verified, kinds.Observed{}); len(sf.Warnings) != 0 {
		t.Errorf("with expectedHash: warnings %+v, want none", sf.Warnings)
	}
}
