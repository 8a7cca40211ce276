package luxnetwork

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The luxfi operator's defaults (src/crd.rs, src/controller.rs at 552ce16).
const (
	DefaultImage        = "ghcr.io/luxfi/node"
	defaultTag          = "latest"
	defaultPullPolicy   = corev1.PullIfNotPresent
	defaultStorageSize  = "200Gi"
	defaultHTTPPort     = 9650
	defaultStakingPort  = 9651
	defaultUID          = 1000
	defaultKMSHost      = "https://kms.lux.network/api"
	defaultKMSPath      = "/staking"
	defaultKMSResync    = 300
	defaultMarkerPath   = "/data/.seeded"
	defaultSnapBucket   = "lux-snapshots"
	defaultSnapInterval = 3600
	defaultMaxRetained  = 5
	defaultGateMinPeers = 2
	defaultGateTimeout  = 300
	defaultGateInterval = 5
	// ManagedBy is the luxfi operator's managed-by label value, part of its selector.
	ManagedBy = "lux-operator"
	// ContainerName is its node container's name.
	ContainerName = "luxd"
)

// defaultEVMConfig is the chain config.json the luxfi operator writes for C and every chain
// when evmConfig is not set (src/controller.rs at 552ce16).
const defaultEVMConfig = `{"admin-api-enabled":true,"eth-apis":["eth","eth-filter","net","web3","internal-eth","internal-blockchain","internal-transaction","internal-tx-pool","internal-account","internal-personal","debug","internal-debug","admin"],"rpc-gas-cap":50000000,"rpc-tx-fee-cap":100,"pruning-enabled":false,"allow-unfinalized-queries":true,"allow-unprotected-txs":true,"log-level":"info","state-sync-enabled":false,"allow-missing-tries":true}`

// FieldError is a LuxNetwork field this operator refuses: Field names it, Why says why.
// +kubebuilder:object:generate=false
type FieldError struct {
	Field, Why string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Why }

// Takeover is what the luxfi operator's objects look like, beyond what a LuxRuntime spec says:
// the builder applies it so that a taken-over network keeps its StatefulSet.
// +kubebuilder:object:generate=false
type Takeover struct {
	// Labels are the three common labels; they are also the selector of the StatefulSet, the
	// pod template, the Services and the PDB.
	Labels map[string]string
	// ConfigMaps are generated from inline content: <cr>-config (genesis.json, config.json,
	// upgrade.json) and <cr>-chains (config.json, upgrade.json of every chain).
	ConfigMaps []corev1.ConfigMap
	// PodSecurity is spec.security (1000 each by default).
	PodSecurity *corev1.PodSecurityContext
	// ServiceType and ServiceAnnotations shape Service <cr>; PerPodServices adds <cr>-<i>.
	ServiceType        corev1.ServiceType
	ServiceAnnotations map[string]string
	PerPodServices     bool
	// KMSSecret is the secrets.lux.network KMSSecret <cr>-staking-kms-sync spec, when
	// staking.kms is set.
	KMSSecret map[string]any
	// The snapshot schedule: the literal access key, the slots kept, the C-chain RLP export.
	SnapshotAccessKey   string
	SnapshotMaxRetained int32
	SnapshotRLP         bool
	// SeedMarker is seedRestore.markerPath.
	SeedMarker string
}

// Labels returns the luxfi operator's common labels for network name.
func Labels(name string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "luxd",
		"app.kubernetes.io/instance":   name,
		"app.kubernetes.io/managed-by": ManagedBy,
	}
}

func refuse(field, why string) error { return &FieldError{Field: field, Why: why} }

// ToLuxRuntime converts a LuxNetwork into the canonical LuxRuntime and its Takeover. Every
// field is converted, defaulted as the luxfi operator defaults it, or refused with a
// FieldError; none is dropped.
//
//nolint:gocyclo,funlen // one step per field, in spec order
func ToLuxRuntime(in *LuxNetwork) (*v1.LuxRuntime, *Takeover, error) {
	s := in.Spec.DeepCopy()
	name := in.Name
	if s.NetworkID == 0 {
		return nil, nil, refuse("spec.networkId", "is required")
	}
	if err := refused(s); err != nil {
		return nil, nil, err
	}
	out := &v1.LuxRuntime{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	t := &Takeover{Labels: Labels(name), SeedMarker: defaultMarkerPath}
	rs := &out.Spec
	rs.Engine = "luxd"
	rs.NetworkID = int32(s.NetworkID)           //nolint:gosec // network IDs are small
	rs.Validators = ptr.To(int32(s.Validators)) //nolint:gosec // validator counts are small

	img := ImageSpec{}
	if s.Image != nil {
		img = *s.Image
	}
	rs.Image = &v1.ImageSpec{Repository: or(img.Repository, DefaultImage), Tag: or(img.Tag, defaultTag), PullPolicy: corev1.PullPolicy(or(img.PullPolicy, string(defaultPullPolicy)))}
	rs.ImagePullSecrets = slices.Clone(img.PullSecrets)

	st := StorageSpec{}
	if s.Storage != nil {
		st = *s.Storage
	}
	size, err := resource.ParseQuantity(or(st.Size, defaultStorageSize))
	if err != nil {
		return nil, nil, refuse("spec.storage.size", err.Error())
	}
	rs.Storage = &v1.StorageSpec{StorageClassName: st.StorageClass, Size: size, RetentionPolicy: "Retain"}

	res, err := resources(s.Resources)
	if err != nil {
		return nil, nil, err
	}
	rs.Resources = res

	ports := PortSpec{}
	if s.Ports != nil {
		ports = *s.Ports
	}
	rs.HTTPPort = orInt(ports.HTTP, defaultHTTPPort)
	rs.StakingPort = orInt(ports.Staking, defaultStakingPort)

	// <cr>-config: genesis, node config and upgrade file from inline content.
	cfg := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-config"}, Data: map[string]string{}}
	if s.Genesis != nil {
		if s.GenesisConfigMap != "" {
			return nil, nil, refuse("spec.genesis", "set together with genesisConfigMap: name one genesis")
		}
		cfg.Data["genesis.json"] = string(s.Genesis.Raw)
		rs.GenesisConfigMap = cfg.Name
	} else {
		rs.GenesisConfigMap = s.GenesisConfigMap
	}
	if s.Config != nil && len(s.Config.Raw) > 0 && string(s.Config.Raw) != "{}" {
		var m map[string]any
		if err := json.Unmarshal(s.Config.Raw, &m); err != nil {
			return nil, nil, refuse("spec.config", "must be an object: "+err.Error())
		}
		data, _ := json.Marshal(m) // sorted keys
		cfg.Data["config.json"] = string(data)
		rs.NodeConfigMap = cfg.Name
	}
	if s.UpgradeConfig != nil {
		cfg.Data["upgrade.json"] = compact(s.UpgradeConfig.Raw)
		rs.UpgradeConfigMap = cfg.Name
	}
	if len(cfg.Data) > 0 {
		t.ConfigMaps = append(t.ConfigMaps, cfg)
	}

	// Chains: C and every chain get <cr>-chains' config.json (evmConfig, else the luxfi
	// default) and upgrade.json (chainUpgradeConfig), as the luxfi script wrote them.
	if s.EVMConfig != nil || len(s.Chains) > 0 {
		chains := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-chains"}, Data: map[string]string{"config.json": defaultEVMConfig}}
		if s.EVMConfig != nil {
			chains.Data["config.json"] = compact(s.EVMConfig.Raw)
		}
		if s.ChainUpgradeConfig != nil {
			chains.Data["upgrade.json"] = compact(s.ChainUpgradeConfig.Raw)
		}
		t.ConfigMaps = append(t.ConfigMaps, chains)
		rs.Chains = append(rs.Chains, v1.LuxChainSpec{ChainID: "C", GenesisConfigMap: chains.Name})
		for _, c := range s.Chains {
			rs.Chains = append(rs.Chains, v1.LuxChainSpec{ChainID: c.BlockchainID, Alias: c.Alias, TrackingID: c.TrackingID, GenesisConfigMap: chains.Name})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.ChainAliases)) {
		if !slices.ContainsFunc(rs.Chains, func(c v1.LuxChainSpec) bool { return c.ChainID == id }) {
			return nil, nil, refuse("spec.chainAliases["+id+"]", "names a chain that spec.chains does not list")
		}
		for _, a := range s.ChainAliases[id] {
			rs.Chains = appendAlias(rs.Chains, id, a)
		}
	}
	if ct := s.ChainTracking; ct != nil {
		rs.TrackAllChains = ct.TrackAllChains
		if !ct.TrackAllChains && len(ct.TrackedChains) > 0 {
			if len(s.Chains) > 0 {
				return nil, nil, refuse("spec.chainTracking.trackedChains", "set together with chains: the chains' trackingId (else blockchainId) say what is tracked")
			}
			for _, c := range ct.TrackedChains {
				rs.Chains = append(rs.Chains, v1.LuxChainSpec{ChainID: c})
			}
		}
	}

	rs.NodeFlags = nodeFlags(s)

	if ps := s.PluginSource; ps != nil {
		rs.PluginSource = &v1.PluginSource{Bucket: ps.Bucket, Endpoint: ps.Endpoint}
		for _, vm := range ps.VMPlugins {
			rs.PluginSource.VMPlugins = append(rs.PluginSource.VMPlugins, v1.VMPlugin{VMID: vm.VMID, ObjectKey: vm.ObjectKey, SHA256: vm.SHA256})
		}
	}

	sec := SecuritySpec{}
	if s.Security != nil {
		sec = *s.Security
	}
	t.PodSecurity = &corev1.PodSecurityContext{
		RunAsUser:  ptr.To(deref(sec.RunAsUser, defaultUID)),
		RunAsGroup: ptr.To(deref(sec.RunAsGroup, defaultUID)),
		FSGroup:    ptr.To(deref(sec.FSGroup, defaultUID)),
	}

	// Service <cr>: type ClusterIP unless the block is omitted (the derived default: "", the
	// apiserver's ClusterIP), plus the luxfi annotations.
	t.ServiceType = corev1.ServiceTypeClusterIP
	t.ServiceAnnotations = map[string]string{
		"lux.network/network-id":                          strconv.FormatUint(uint64(s.NetworkID), 10),
		"service.beta.kubernetes.io/do-loadbalancer-name": "k8s-" + name,
	}
	if sv := s.Service; sv != nil {
		t.ServiceType = corev1.ServiceType(or(sv.ServiceType, string(corev1.ServiceTypeClusterIP)))
		maps.Copy(t.ServiceAnnotations, sv.Annotations)
		t.PerPodServices = sv.PerPodServices
	}

	if k := s.Staking; k != nil {
		if k.SecretName == "" {
			return nil, nil, refuse("spec.staking.secretName", "is required with staking")
		}
		rs.Staking = &v1.Staking{SecretName: k.SecretName}
		if m := k.KMS; m != nil {
			rs.Staking.KMS = &v1.KMSSecretRef{ProjectSlug: m.ProjectSlug, EnvSlug: m.EnvSlug, SecretsPath: or(m.SecretsPath, defaultKMSPath), ManagedSecretName: k.SecretName}
			t.KMSSecret = kmsSecret(in, k)
		}
	}

	if sr := s.SeedRestore; sr != nil && sr.Enabled {
		switch or(sr.SourceType, "None") {
		case "ObjectStore":
		case "None":
			return nil, nil, refuse("spec.seedRestore.sourceType", "None with enabled: true restores nothing; say ObjectStore or disable it")
		default:
			return nil, nil, refuse("spec.seedRestore.sourceType "+sr.SourceType, "a claim cannot be cloned or restored from a VolumeSnapshot once the StatefulSet exists (its claim templates are immutable); use ObjectStore")
		}
		if p := or(sr.RestorePolicy, "IfNotSeeded"); p != "IfNotSeeded" {
			return nil, nil, refuse("spec.seedRestore.restorePolicy "+p, "a non-empty data dir is never overwritten")
		}
		if sr.ObjectStoreURL == "" {
			return nil, nil, refuse("spec.seedRestore.objectStoreUrl", "is required with sourceType ObjectStore")
		}
		typ := "https"
		if len(sr.ObjectStoreURL) > 7 && sr.ObjectStoreURL[:7] == "http://" {
			typ = "http"
		}
		rs.SeedRestore = &v1.SeedRestore{Enabled: true, Sources: []v1.SeedSource{{Type: typ, URL: sr.ObjectStoreURL, ExpectedHash: sr.ExpectedHash}}}
		t.SeedMarker = or(sr.MarkerPath, defaultMarkerPath)
	}

	if sn := s.SnapshotSchedule; sn != nil && sn.Enabled {
		if sn.ObjectStoreEndpoint == "" {
			return nil, nil, refuse("spec.snapshotSchedule.objectStoreEndpoint", "is required when enabled")
		}
		if sn.SecretKeyRef == "" {
			return nil, nil, refuse("spec.snapshotSchedule.secretKeyRef", "must name the Secret holding AWS_SECRET_ACCESS_KEY (the job has its own credentials)")
		}
		interval := int64(defaultSnapInterval)
		if sn.IntervalSeconds != nil {
			interval = int64(*sn.IntervalSeconds) //nolint:gosec // an interval in seconds
		}
		rs.Replication = &v1.Replication{
			Enabled: true, S3Endpoint: sn.ObjectStoreEndpoint, S3Bucket: or(sn.Bucket, defaultSnapBucket),
			S3Path: or(sn.Prefix, name), CredentialsSecret: sn.SecretKeyRef, SnapshotIntervalSeconds: interval,
			SourceNodeIndex: ptr.To(int32(sn.SourceNodeIndex)), //nolint:gosec // an ordinal
		}
		t.SnapshotAccessKey = sn.AccessKey
		t.SnapshotMaxRetained = int32(deref(sn.MaxRetained, defaultMaxRetained)) //nolint:gosec // a small count
		t.SnapshotRLP = deref(sn.IncludeRLPExports, true)
	}

	gate := StartupGateSpec{}
	if s.StartupGate != nil {
		gate = *s.StartupGate
	}
	if gate.WaitForHealthyPeer {
		return nil, nil, refuse("spec.startupGate.waitForHealthyPeer", "the gate waits for peers' staking ports; health gates the rollout through readiness")
	}
	rs.StartupGate = &v1.LuxStartupGate{
		Enabled:              ptr.To(deref(gate.Enabled, true)),
		MinPeers:             ptr.To(int32(deref(gate.MinPeers, defaultGateMinPeers))),             //nolint:gosec // small
		TimeoutSeconds:       ptr.To(int32(deref(gate.TimeoutSeconds, defaultGateTimeout))),        //nolint:gosec // small
		CheckIntervalSeconds: ptr.To(int32(deref(gate.CheckIntervalSeconds, defaultGateInterval))), //nolint:gosec // small
		OnTimeout:            or(gate.OnTimeout, "StartAnyway"),
	}

	mu := uint32(1)
	if u := s.UpgradeStrategy; u != nil {
		if u.StrategyType != "" && u.StrategyType != "OnDelete" && u.StrategyType != "RollingUpdate" {
			return nil, nil, refuse("spec.upgradeStrategy.strategyType "+u.StrategyType, "validators roll one bounded, readiness-gated step at a time (RollingUpdate)")
		}
		if u.StabilizationSeconds != nil {
			return nil, nil, refuse("spec.upgradeStrategy.stabilizationSeconds", "the pause between validators is minReadySeconds after readiness")
		}
		if u.HealthCheckBetweenRestarts != nil && !*u.HealthCheckBetweenRestarts {
			return nil, nil, refuse("spec.upgradeStrategy.healthCheckBetweenRestarts: false", "every restart waits for readiness")
		}
		mu = deref(u.MaxUnavailable, 1)
	}
	rs.UpgradeStrategy = &v1.LuxUpgradeStrategy{MaxUnavailable: ptr.To(int32(mu))}
	return out, t, nil
}

// refused are the fields no object can express; each is named.
func refused(s *LuxNetworkSpec) error {
	switch {
	case s.StartupScript != "":
		return refuse("spec.startupScript", "the node's flags come from the spec; a script would bypass every field")
	case s.Init != nil:
		return refuse("spec.init", "seed restore, plugins and staking keys have their own init containers; clearData would wipe a validator")
	case s.MPC != nil:
		return refuse("spec.mpc", "the luxfi operator only logged it; use a LuxMPC")
	case s.Metrics != nil:
		return refuse("spec.metrics", "the node serves /ext/metrics on its http port; there is no separate metrics port")
	case s.Snapshot != nil:
		return refuse("spec.snapshot", "the luxfi operator never read it; use seedRestore")
	case s.RLPImport != nil:
		return refuse("spec.rlpImport", "importing blocks over RPC after start is not a cluster object; use seedRestore or importChainData")
	case s.HealthPolicy != nil:
		return refuse("spec.healthPolicy", "health is the readiness probe (GET /ext/health) and the StatefulSet's rollout")
	case s.Gateway != nil:
		return refuse("spec.gateway", "use a LuxGateway")
	case s.AllowValidatorRemoval != nil:
		return refuse("spec.allowValidatorRemoval", "spec.validators is applied as written")
	case s.Service != nil && (s.Service.IngressEnabled || s.Service.IngressHost != ""):
		return refuse("spec.service.ingressEnabled/ingressHost", "the luxfi operator never created an Ingress; expose the RPC Service through a Gateway")
	case s.ChainTracking != nil && len(s.ChainTracking.Aliases) > 0:
		return refuse("spec.chainTracking.aliases", "use chains[].alias or chainAliases")
	case s.Bootstrap != nil && (len(s.Bootstrap.ExternalIPs) > 0 || (s.Bootstrap.UseHostnames != nil && !*s.Bootstrap.UseHostnames)):
		return refuse("spec.bootstrap.externalIps/useHostnames: false", "validators bootstrap from each other's headless DNS names and advertise their pod IP")
	case s.PluginSource != nil && (s.PluginSource.CredentialsSecret != "" || s.PluginSource.KMSConfigPath != ""):
		return refuse("spec.pluginSource.credentialsSecret/kmsConfigPath", "plugins are fetched unsigned and verified by sha256")
	case s.Staking != nil && s.Staking.KMS != nil && s.Staking.KMS.Auth.CredentialsSecret == "":
		return refuse("spec.staking.kms.auth.credentialsSecret", "is required: the KMS operator logs in with it")
	}
	return nil
}

// nodeFlags are the luxfi flags the LuxRuntime spec has no field for, with luxfi's defaults.
func nodeFlags(s *LuxNetworkSpec) map[string]string {
	c := ConsensusSpec{}
	if s.Consensus != nil {
		c = *s.Consensus
	}
	api := APISpec{}
	if s.API != nil {
		api = *s.API
	}
	b := strconv.FormatBool
	u := func(p *uint32, def uint32) string { return strconv.FormatUint(uint64(deref(p, def)), 10) }
	f := map[string]string{
		"http-allowed-hosts":                   or(api.HTTPAllowedHosts, "*"),
		"db-type":                              or(s.DBType, "zapdb"),
		"index-enabled":                        b(deref(api.IndexEnabled, true)),
		"api-admin-enabled":                    b(deref(api.AdminEnabled, true)),
		"api-metrics-enabled":                  b(deref(api.MetricsEnabled, true)),
		"api-keystore-enabled":                 "true",
		"log-level":                            "info",
		"network-compression-type":             or(s.NetworkCompressionType, "zstd"),
		"consensus-sample-size":                u(c.SampleSize, 5),
		"consensus-quorum-size":                u(c.QuorumSize, 4),
		"sybil-protection-enabled":             b(deref(c.SybilProtectionEnabled, false)),
		"network-require-validator-to-connect": b(deref(c.RequireValidatorToConnect, false)),
		"network-allow-private-ips":            b(deref(c.AllowPrivateIPs, true)),
	}
	if s.ImportChainData != "" {
		f["import-chain-data"] = s.ImportChainData
	}
	return f
}

// kmsSecret is the luxfi KMSSecret <cr>-staking-kms-sync spec (src/controller.rs at 552ce16).
func kmsSecret(in *LuxNetwork, k *StakingSpec) map[string]any {
	m := k.KMS
	ns := or(m.Auth.CredentialsNamespace, in.Namespace)
	return map[string]any{
		"hostAPI":        or(m.HostAPI, defaultKMSHost),
		"resyncInterval": int64(deref(m.ResyncInterval, defaultKMSResync)), //nolint:gosec // seconds
		"authentication": map[string]any{"universalAuth": map[string]any{
			"credentialsRef": map[string]any{"secretName": m.Auth.CredentialsSecret, "secretNamespace": ns},
			"secretsScope":   map[string]any{"projectSlug": m.ProjectSlug, "envSlug": m.EnvSlug, "secretsPath": or(m.SecretsPath, defaultKMSPath)},
		}},
		"managedKubeSecretReferences": []any{map[string]any{
			"creationPolicy": "Owner", "secretName": k.SecretName, "secretNamespace": in.Namespace, "secretType": "Opaque",
		}},
	}
}

func resources(r *ResourceSpec) (*corev1.ResourceRequirements, error) {
	x := ResourceSpec{}
	if r != nil {
		x = *r
	}
	q := func(field, v, def string) (resource.Quantity, error) {
		out, err := resource.ParseQuantity(or(v, def))
		if err != nil {
			return out, refuse("spec.resources."+field, err.Error())
		}
		return out, nil
	}
	var errs []error
	get := func(field, v, def string) resource.Quantity {
		out, err := q(field, v, def)
		if err != nil {
			errs = append(errs, err)
		}
		return out
	}
	out := &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: get("cpuRequest", x.CPURequest, "100m"), corev1.ResourceMemory: get("memoryRequest", x.MemoryRequest, "256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: get("cpuLimit", x.CPULimit, "1"), corev1.ResourceMemory: get("memoryLimit", x.MemoryLimit, "1Gi")},
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
}

func appendAlias(chains []v1.LuxChainSpec, id, alias string) []v1.LuxChainSpec {
	for i := range chains {
		if chains[i].ChainID == id && (chains[i].Alias == "" || chains[i].Alias == alias) {
			chains[i].Alias = alias
			return chains
		}
	}
	// a further alias of a known chain
	return append(chains, v1.LuxChainSpec{ChainID: id, Alias: alias})
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func orInt(a, b int32) int32 {
	if a != 0 {
		return a
	}
	return b
}

func deref[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// Resources is the luxfi operator's resource requirements of spec.resources: 100m and 256Mi
// requested, 1 CPU and 1Gi limits unless set (src/controller.rs build_resource_requirements).
func Resources(r *ResourceSpec) (*corev1.ResourceRequirements, error) { return resources(r) }
