package kinds

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The node working set's paths, names and defaults. The paths are where the node reads what
// the spec names; the flags below point at them.
const (
	luxGenesisDir     = "/genesis"
	luxChainConfigDir = "/etc/luxd/chains"
	luxUpgradeDir     = "/etc/luxd/upgrade"
	luxNodeConfigDir  = "/etc/luxd/config"
	luxStakingDir     = "/staking"
	luxStakingKeysDir = "/staking-keys"
	luxDefaultPlugins = "/plugins"
	luxdBinary        = "/luxd/build/luxd"
	// luxConfigHashAnnotation is the pod template annotation that changes whenever the node's
	// configuration does, so a change rolls the validators.
	luxConfigHashAnnotation = "lux.network/config-hash"
	luxEngineLabel          = "lux.network/engine"
	luxNetworkLabel         = "lux.network/network"
	// podIndexLabel is the ordinal label the StatefulSet controller stamps on every pod.
	podIndexLabel = "apps.kubernetes.io/pod-index"
	podNameLabel  = "statefulset.kubernetes.io/pod-name"
	// The gate defaults.
	defaultGateMinPeers = 1
	defaultGateTimeout  = 300
	defaultGateInterval = 5
	gateStartAnyway     = "StartAnyway"
	gateFail            = "Fail"
	// The snapshot defaults.
	defaultSnapshotInterval = 3600
	defaultS3Region         = "us-east-1"
	jobsHistory             = 3
	seedMarkerName          = ".seeded"
)

// gvkCronJob is the CronJob child of the snapshot and export schedules.
var (
	gvkCronJob   = batchv1.SchemeGroupVersion.WithKind("CronJob")
	luxNodeOwns  = []schema.GroupVersionKind{gvkStatefulSet, gvkService, gvkPDB, gvkConfigMap, gvkCronJob, gvkKMSSecret}
	sha256Hex    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	shellUnsafe  = regexp.MustCompile(`['\\\n]`)
	flagNameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// luxReservedFlags are the node flags the working set sets itself; nodeFlags may not.
var luxReservedFlags = []string{
	"network-id", "http-host", "http-port", "staking-port", "public-ip", "data-dir", "db-dir",
	"staking-tls-cert-file", "staking-tls-key-file", "staking-signer-key-file", "genesis-file",
	"upgrade-file", "upgrade-file-content", "config-file", "chain-config-dir", "plugin-dir",
	"bootstrap-nodes", "track-chains", "track-all-chains", "chain-aliases-file-content",
}

// luxPrimaryChains are the primary network's chain aliases, which every node tracks.
var luxPrimaryChains = []string{"C", "P", "X"}

// cmpID is the ID a chain is tracked by.
func cmpID(c v1.LuxChainSpec) string { return or(c.TrackingID, c.ChainID) }

// luxIdentity is how a node working set is named and selected. A LuxRuntime uses ours; a
// lux.network LuxNetwork uses the luxfi operator's, so that taking one over applies onto the
// StatefulSet it already has (its selector, serviceName, podManagementPolicy and claim
// templates are immutable).
type luxIdentity struct {
	container string
	// labels go on every object and the pod template; selector selects the pods.
	labels, selector map[string]string
	pdbName          string
	// defaultStorageClass is the claim template's class when the spec names none; "" leaves
	// it to the cluster default.
	defaultStorageClass string
	// serviceType and serviceAnnotations shape the ClusterIP-or-LB Service <cr>.
	serviceType        corev1.ServiceType
	serviceAnnotations map[string]string
	podSecurity        *corev1.PodSecurityContext
	// configMaps are generated from inline content; they lead the objects and their data is
	// part of the config hash.
	configMaps []*corev1.ConfigMap
	// kms renders the staking KMSSecret child; nil means the canonical kms.<group>/v1 one.
	kms func(o owner, secretName string, labels map[string]string) (*unstructured.Unstructured, error)
	// snapshot: a literal access key, the slots kept, whether to export the C-chain RLP, the
	// Secret key of the secret access key.
	snapshotAccessKey   string
	snapshotMaxRetained int32
	snapshotRLP         bool
	seedMarker          string
	// seedPublished lets an https seed source without expectedHash be verified against the
	// checksum published beside it (<url>.sha256, same origin, no redirect); a LuxNetwork's
	// seed restore names no hash. seedUnverified (Context.AllowUnverifiedSeed) then unpacks
	// one with no published checksum, into the empty data dir only; without it the pod stops.
	seedPublished, seedUnverified bool
	// perPodServices adds Service <cr>-<i> per validator.
	perPodServices bool
	topologySpread bool
}

// luxRuntimeIdentity is a LuxRuntime's own identity: the selector is name and instance of the
// CR, the container is named like the CR, the PDB like the CR.
func luxRuntimeIdentity(o owner, s *v1.LuxRuntimeSpec) luxIdentity {
	labels := withLabels(standardLabels(o.Name, "validator", "", imageTag(s.Image)), s.Labels)
	return luxIdentity{
		container:           o.Name,
		labels:              labels,
		selector:            selectorLabels(o.Name),
		pdbName:             o.Name,
		defaultStorageClass: defaultStorageClass,
		serviceType:         corev1.ServiceTypeClusterIP,
		seedMarker:          seedMarkerName,
		topologySpread:      true,
	}
}

// buildLuxRuntime renders a LuxRuntime's working set; see buildLuxNode.
func buildLuxRuntime(o owner, s *v1.LuxRuntimeSpec) ([]*unstructured.Unstructured, error) {
	return buildLuxNode(o, s, luxRuntimeIdentity(o, s))
}

// refuse is the Halt of a spec field this operator does not materialize: nothing is built, so
// the field is never accepted and silently dropped.
func refuse(o owner, field, why string) error {
	return invalidSpec("%s %s/%s: %s is not materialized (%s); remove it", o.Kind, o.Namespace, o.Name, field, why)
}

// luxPlan is the validated spec with its defaults resolved.
type luxPlan struct {
	o                   owner
	s                   *v1.LuxRuntimeSpec
	id                  luxIdentity
	replicas            int32
	staking, http       int32
	maxUnavailable      int32
	vct                 string
	dataVolume          string
	stakingFiles        string
	pluginDir           string
	gate                bool
	gateMinPeers        int32
	gateTimeout, gateIv int32
	gateFail            bool
}

// buildLuxNode renders the working set of a Lux node network (luxd, hanzod or zood) from a
// LuxRuntime spec. In order:
//
//   - the generated ConfigMaps (inline content of a converted LuxNetwork);
//   - the KMSSecret that projects the staking Secret when staking.kms is set;
//   - StatefulSet <cr>: Parallel pod management (a fresh validator set only becomes healthy
//     together), RollingUpdate, one validator at a time (rollingUpdate.maxUnavailable only
//     when upgradeStrategy.maxUnavailable is above 1) and minReadySeconds, so a change rolls the validators a bounded number at a time, each
//     gated on readiness (GET /ext/health); the config hash on the pod template changes with
//     any configuration, so a config change is a rollout. Init containers: seed-restore
//     (verifies expectedHash before unpacking, never touches a non-empty data dir), fetch-plugins
//     (sha256-verified), staking-keys (the ordinal's keys from the Secret into a memory
//     volume) and startup-gate (waits for peers). The node's flags come from the spec;
//   - Services <cr> and <cr>-headless (publishNotReadyAddresses, so peers resolve each other
//     before they are healthy), per-pod Services when asked;
//   - PodDisruptionBudget with the same maxUnavailable;
//   - CronJob <cr>-snapshot (replication) and <cr>-export-<name> (exportSchedules), each with
//     its own credentials and no service account token, reading the source validator's claim
//     read-only and archiving an allow-list that never includes the staking keys.
//
// Fields it cannot honour are refused with an InvalidSpec Halt that names them.
func buildLuxNode(o owner, s *v1.LuxRuntimeSpec, id luxIdentity) ([]*unstructured.Unstructured, error) {
	p, err := planLuxNode(o, s, id)
	if err != nil {
		return nil, err
	}
	var children []child
	for _, cm := range id.configMaps {
		c := cm.DeepCopy()
		c.ObjectMeta = o.meta(cm.Name, maps.Clone(id.labels))
		children = append(children, child{c, gvkConfigMap})
	}
	out := []*unstructured.Unstructured{}
	pre, err := objects(children...)
	if err != nil {
		return nil, err
	}
	out = append(out, pre...)
	if s.Staking != nil && s.Staking.KMS != nil {
		k, err := p.kmsSecret()
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	sts, err := p.statefulSet()
	if err != nil {
		return nil, err
	}
	rest := []child{{sts, gvkStatefulSet}}
	rest = append(rest, p.services()...)
	rest = append(rest, child{p.pdb(), gvkPDB})
	jobs, err := p.cronJobs()
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		rest = append(rest, child{j, gvkCronJob})
	}
	objs, err := objects(rest...)
	if err != nil {
		return nil, err
	}
	return append(out, objs...), nil
}

// planLuxNode validates the spec and resolves its defaults; every refusal names its field.
//
//nolint:gocyclo,funlen // one check per field, in spec order
func planLuxNode(o owner, s *v1.LuxRuntimeSpec, id luxIdentity) (*luxPlan, error) {
	if s.Image == nil || s.Image.Repository == "" {
		return nil, invalidSpec("%s %s/%s: image.repository is required", o.Kind, o.Namespace, o.Name)
	}
	if s.NetworkID == 0 && s.NetworkName == "" {
		return nil, invalidSpec("%s %s/%s: networkID or networkName is required (the node's --network-id)", o.Kind, o.Namespace, o.Name)
	}
	if len(s.TenantImports) > 0 {
		return nil, refuse(o, "spec.tenantImports", "importing a tenant chain needs the chain's creation on the P-chain, which no object expresses")
	}
	if len(s.TenantNetworks) > 0 {
		return nil, refuse(o, "spec.tenantNetworks", "anchoring a tenant network is a P-chain transaction, not a cluster object")
	}
	if s.WipeOnRecreate != nil {
		return nil, refuse(o, "spec.wipeOnRecreate", "the data claim is never wiped by the operator")
	}
	p := &luxPlan{o: o, s: s, id: id}
	p.replicas = deref32(s.Validators, defaultLuxRuntimeReplicas)
	ports := luxPorts(s.StakingPort, s.HTTPPort)
	p.staking, p.http = ports[0].ContainerPort, ports[1].ContainerPort
	p.maxUnavailable = 1
	if s.UpgradeStrategy != nil && s.UpgradeStrategy.MaxUnavailable != nil {
		p.maxUnavailable = *s.UpgradeStrategy.MaxUnavailable
		if p.maxUnavailable < 1 {
			return nil, invalidSpec("%s %s/%s: upgradeStrategy.maxUnavailable must be at least 1", o.Kind, o.Namespace, o.Name)
		}
	}
	p.vct, p.dataVolume = defaultVolumeName, defaultVolumeName
	if s.Storage != nil {
		if s.Storage.VolumeName != nil && *s.Storage.VolumeName != "" {
			p.vct, p.dataVolume = *s.Storage.VolumeName, *s.Storage.VolumeName
		}
		switch s.Storage.RetentionPolicy {
		case "", "Retain", "Delete":
		default:
			return nil, invalidSpec("%s %s/%s: storage.retentionPolicy %q: want Retain or Delete", o.Kind, o.Namespace, o.Name, s.Storage.RetentionPolicy)
		}
	}
	ids := map[string]bool{}
	for i, c := range s.Chains {
		ids[c.ChainID] = true
		if c.Component != "" {
			return nil, refuse(o, fmt.Sprintf("spec.chains[%d].component", i), "a chain is served by every validator; there are no per-chain components")
		}
		if c.BootstrapBlocking != nil && !*c.BootstrapBlocking {
			return nil, refuse(o, fmt.Sprintf("spec.chains[%d].bootstrapBlocking: false", i), "readiness (GET /ext/health) waits for every tracked chain")
		}
		if strings.ContainsAny(c.Alias, " ,\"'") {
			return nil, invalidSpec("%s %s/%s: chains[%d].alias %q", o.Kind, o.Namespace, o.Name, i, c.Alias)
		}
	}
	if err := p.checkPlugins(ids); err != nil {
		return nil, err
	}
	for k := range s.NodeFlags {
		if !flagNameRule.MatchString(k) {
			return nil, invalidSpec("%s %s/%s: nodeFlags key %q is not a flag name (lower-case, digits and dashes, no leading dashes)", o.Kind, o.Namespace, o.Name, k)
		}
		if slices.Contains(luxReservedFlags, k) {
			return nil, invalidSpec("%s %s/%s: nodeFlags sets --%s, which the operator derives from the spec", o.Kind, o.Namespace, o.Name, k)
		}
	}
	p.stakingFiles = path.Join(luxDataPath, "staking")
	if st := s.Staking; st != nil {
		if k := st.KMS; k != nil {
			if n := k.SecretName(); n != "" && st.SecretName != "" && n != st.SecretName {
				return nil, invalidSpec("%s %s/%s: staking.kms names Secret %s but staking.secretName is %s: name one", o.Kind, o.Namespace, o.Name, n, st.SecretName)
			}
			if k.Name != "" {
				return nil, refuse(o, "spec.staking.kms.name", "the KMSSecret is named like the staking Secret")
			}
		}
		if st.KMS != nil && st.SecretName == "" && st.KMS.SecretName() == "" {
			return nil, invalidSpec("%s %s/%s: staking.kms needs staking.secretName (the Secret it projects)", o.Kind, o.Namespace, o.Name)
		}
		if st.SecretName != "" || st.KMS != nil {
			p.stakingFiles = luxStakingDir
		}
	}
	if err := p.planGate(); err != nil {
		return nil, err
	}
	if err := p.checkSeed(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *luxPlan) fail(format string, args ...any) error {
	return invalidSpec("%s %s/%s: "+format, append([]any{p.o.Kind, p.o.Namespace, p.o.Name}, args...)...)
}

func (p *luxPlan) checkPlugins(chains map[string]bool) error {
	ps := p.s.PluginSource
	if ps == nil {
		return nil
	}
	if ps.Endpoint == "" || ps.Bucket == "" {
		return p.fail("pluginSource needs endpoint and bucket (plugins are fetched from <endpoint>/<bucket>/<objectKey>)")
	}
	if len(ps.VMPlugins) == 0 {
		return p.fail("pluginSource lists no vmPlugins")
	}
	p.pluginDir = luxDefaultPlugins
	if ps.PluginDir != "" {
		if !path.IsAbs(ps.PluginDir) || path.Clean(ps.PluginDir) == luxDataPath || strings.HasPrefix(path.Clean(ps.PluginDir), luxDataPath+"/") {
			return p.fail("pluginSource.pluginDir %q must be an absolute path outside %s", ps.PluginDir, luxDataPath)
		}
		p.pluginDir = path.Clean(ps.PluginDir)
	}
	vms := map[string]bool{}
	for i, vm := range ps.VMPlugins {
		if !sha256Hex.MatchString(strings.TrimPrefix(vm.SHA256, "sha256:")) {
			return p.fail("pluginSource.vmPlugins[%d] (%s) needs sha256 (64 hex digits): a plugin is never run unverified", i, vm.VMID)
		}
		if vm.VMID == "" || strings.Contains(vm.VMID, "/") || shellUnsafe.MatchString(vm.VMID+vm.ObjectKey+ps.Endpoint+ps.Bucket) {
			return p.fail("pluginSource.vmPlugins[%d]: vmID %q / objectKey %q", i, vm.VMID, vm.ObjectKey)
		}
		vms[vm.VMID] = true
		for _, c := range vm.ChainIDs {
			if !chains[c] {
				return p.fail("pluginSource.vmPlugins[%d].chainIDs names %s, which spec.chains does not list", i, c)
			}
		}
	}
	for i, c := range p.s.Chains {
		if c.VMID != "" && !vms[c.VMID] {
			return p.fail("chains[%d] (%s) runs VM %s, which pluginSource does not fetch (with pluginSource the image's plugins are not used)", i, c.ChainID, c.VMID)
		}
	}
	return nil
}

func (p *luxPlan) planGate() error {
	g := p.s.StartupGate
	p.gate = p.replicas > 1
	p.gateMinPeers, p.gateTimeout, p.gateIv = defaultGateMinPeers, defaultGateTimeout, defaultGateInterval
	if g == nil {
		return nil
	}
	if g.Enabled != nil {
		p.gate = *g.Enabled && p.replicas > 1
	}
	if g.MinPeers != nil {
		p.gateMinPeers = *g.MinPeers
	}
	if g.TimeoutSeconds != nil {
		p.gateTimeout = *g.TimeoutSeconds
	}
	if g.CheckIntervalSeconds != nil {
		p.gateIv = *g.CheckIntervalSeconds
	}
	switch g.OnTimeout {
	case "", gateStartAnyway:
	case gateFail:
		p.gateFail = true
	default:
		return p.fail("startupGate.onTimeout %q: want StartAnyway or Fail", g.OnTimeout)
	}
	p.gateMinPeers = min(p.gateMinPeers, p.replicas-1)
	return nil
}

// seedFormat is how an archive is unpacked, from its URL.
func seedFormat(url string) string {
	u := strings.ToLower(url)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch {
	case strings.HasSuffix(u, ".tar.zst"), strings.HasSuffix(u, ".tzst"):
		return "zstd"
	case strings.HasSuffix(u, ".tar.gz"), strings.HasSuffix(u, ".tgz"):
		return "gzip"
	case strings.HasSuffix(u, ".tar"):
		return "tar"
	}
	return ""
}

func (p *luxPlan) seedDir() string {
	if sr := p.s.SeedRestore; sr != nil && sr.DataDir != "" {
		return path.Clean(sr.DataDir)
	}
	return luxDataPath
}

func (p *luxPlan) checkSeed() error {
	sr := p.s.SeedRestore
	if sr == nil || !sr.Enabled {
		return nil
	}
	if len(sr.Sources) == 0 {
		return p.fail("seedRestore is enabled with no sources")
	}
	if d := p.seedDir(); d != luxDataPath && !strings.HasPrefix(d, luxDataPath+"/") {
		return p.fail("seedRestore.dataDir %q must be %s or below it (the data claim)", sr.DataDir, luxDataPath)
	}
	for i, src := range sr.Sources {
		switch src.Type {
		case "http", "https":
		default:
			return p.fail("seedRestore.sources[%d].type %q: want http or https (the archive is fetched by URL)", i, src.Type)
		}
		if !strings.HasPrefix(src.URL, src.Type+"://") || shellUnsafe.MatchString(src.URL) {
			return p.fail("seedRestore.sources[%d].url %q must be a %s:// URL", i, src.URL, src.Type)
		}
		if seedFormat(src.URL) == "" {
			return p.fail("seedRestore.sources[%d].url %q: want a .tar, .tar.gz/.tgz or .tar.zst archive", i, src.URL)
		}
		if src.ExpectedHash == "" && p.id.seedPublished {
			if src.Type != "https" {
				return p.fail("seedRestore.sources[%d].url %q has no expectedHash: only an https archive is verified against the checksum published beside it (<url>.sha256)", i, src.URL)
			}
			continue
		}
		if !sha256Hex.MatchString(strings.TrimPrefix(src.ExpectedHash, "sha256:")) {
			return p.fail("seedRestore.sources[%d] needs expectedHash (sha256, 64 hex digits): an archive is never unpacked unverified", i)
		}
	}
	return nil
}

// headless is <cr>-headless, the StatefulSet's serviceName.
func (p *luxPlan) headless() string { return p.o.Name + luxHeadlessSuffix }

// peer is the DNS name of validator i.
func (p *luxPlan) peer(i int32) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", p.o.Name, i, p.headless(), p.o.Namespace)
}

// args are the node's flags, derived from the spec in a fixed order.
func (p *luxPlan) args() []string {
	s := p.s
	network := strconv.Itoa(int(s.NetworkID))
	if s.NetworkID == 0 {
		network = s.NetworkName
	}
	a := []string{
		"--network-id=" + network,
		"--http-host=0.0.0.0",
		fmt.Sprintf("--http-port=%d", p.http),
		fmt.Sprintf("--staking-port=%d", p.staking),
		"--public-ip=$(POD_IP)",
		"--data-dir=" + luxDataPath,
		"--db-dir=" + path.Join(luxDataPath, "db"),
	}
	if p.stakingFiles == luxStakingDir {
		a = append(a,
			"--staking-tls-cert-file="+path.Join(luxStakingDir, "staker.crt"),
			"--staking-tls-key-file="+path.Join(luxStakingDir, "staker.key"),
			"--staking-signer-key-file="+path.Join(luxStakingDir, "signer.key"))
	}
	if s.GenesisConfigMap != "" {
		a = append(a, "--genesis-file="+path.Join(luxGenesisDir, "genesis.json"))
	}
	if s.UpgradeConfigMap != "" {
		a = append(a, "--upgrade-file="+path.Join(luxUpgradeDir, "upgrade.json"))
	}
	if s.NodeConfigMap != "" {
		a = append(a, "--config-file="+path.Join(luxNodeConfigDir, "config.json"))
	}
	if p.chainConfigs() {
		a = append(a, "--chain-config-dir="+luxChainConfigDir)
	}
	if p.pluginDir != "" {
		a = append(a, "--plugin-dir="+p.pluginDir)
	}
	if p.replicas > 1 {
		peers := make([]string, 0, p.replicas)
		for i := range p.replicas {
			peers = append(peers, fmt.Sprintf("%s:%d", p.peer(i), p.staking))
		}
		a = append(a, "--bootstrap-nodes="+strings.Join(peers, ","))
	}
	switch {
	case s.TrackAllChains:
		a = append(a, "--track-all-chains=true")
	case slices.ContainsFunc(s.Chains, func(c v1.LuxChainSpec) bool { return !slices.Contains(luxPrimaryChains, cmpID(c)) }):
		var track []string
		for _, c := range s.Chains {
			id := cmpID(c)
			if slices.Contains(luxPrimaryChains, id) {
				continue // the primary network's chains are always tracked
			}
			if !slices.Contains(track, id) {
				track = append(track, id)
			}
		}
		a = append(a, "--track-chains="+strings.Join(track, ","))
	}
	if aliases := p.aliases(); aliases != "" {
		a = append(a, "--chain-aliases-file-content="+aliases)
	}
	for _, k := range slices.Sorted(maps.Keys(s.NodeFlags)) {
		a = append(a, "--"+k+"="+s.NodeFlags[k])
	}
	return a
}

// aliases is the base64 chain-aliases JSON ({chainID: [alias]}), "" without aliases.
func (p *luxPlan) aliases() string {
	m := map[string][]string{}
	for _, c := range p.s.Chains {
		if c.Alias != "" && !slices.Contains(m[c.ChainID], c.Alias) {
			m[c.ChainID] = append(m[c.ChainID], c.Alias)
		}
	}
	if len(m) == 0 {
		return ""
	}
	data, _ := json.Marshal(m) // map keys are sorted
	return base64.StdEncoding.EncodeToString(data)
}

// chainConfigs: some chain names its configuration ConfigMap.
func (p *luxPlan) chainConfigs() bool {
	return slices.ContainsFunc(p.s.Chains, func(c v1.LuxChainSpec) bool { return c.GenesisConfigMap != "" })
}

// configHash covers everything the node reads that is not in the pod template: the generated
// ConfigMaps' content and the names of the referenced ConfigMaps and Secret (a referenced
// ConfigMap is changed by naming a new one, as a configMapGenerator does).
func (p *luxPlan) configHash() string {
	h := sha256.New()
	for _, cm := range p.id.configMaps {
		fmt.Fprintf(h, "configmap %s\n", cm.Name)
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			fmt.Fprintf(h, "%s=%d:%s\n", k, len(cm.Data[k]), cm.Data[k])
		}
	}
	fmt.Fprintf(h, "genesis %s\nupgrade %s\nconfig %s\n", p.s.GenesisConfigMap, p.s.UpgradeConfigMap, p.s.NodeConfigMap)
	for _, c := range p.s.Chains {
		fmt.Fprintf(h, "chain %s %s\n", c.ChainID, c.GenesisConfigMap)
	}
	if p.s.Staking != nil {
		fmt.Fprintf(h, "staking %s\n", p.s.Staking.SecretName)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func (p *luxPlan) podEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{
		field("POD_NAME", "metadata.name"),
		field("POD_INDEX", "metadata.labels['"+podIndexLabel+"']"),
		field("POD_IP", "status.podIP"),
	}
}

func (p *luxPlan) image() string { return imageRef(p.s.Image) }

func shellInit(name, image string, pull corev1.PullPolicy, script string, env []corev1.EnvVar, mounts []corev1.VolumeMount) corev1.Container {
	return corev1.Container{
		Name: name, Image: image, ImagePullPolicy: pull,
		Command: []string{"/bin/sh", "-c", script}, Env: env, VolumeMounts: mounts,
	}
}

// statefulSet is the validator StatefulSet.
//
//nolint:funlen // the pod is assembled in one place
func (p *luxPlan) statefulSet() (*appsv1.StatefulSet, error) {
	s, o := p.s, p.o
	pull := pullPolicy(s.Image)
	dataMount := corev1.VolumeMount{Name: p.dataVolume, MountPath: luxDataPath}
	mounts := []corev1.VolumeMount{dataMount}
	var volumes []corev1.Volume
	var inits []corev1.Container
	if s.Storage == nil {
		volumes = append(volumes, corev1.Volume{Name: p.dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if s.GenesisConfigMap != "" {
		volumes = append(volumes, configMapVolume("genesis", s.GenesisConfigMap, "genesis.json", "genesis.json", false))
		mounts = append(mounts, corev1.VolumeMount{Name: "genesis", MountPath: luxGenesisDir, ReadOnly: true})
	}
	if s.UpgradeConfigMap != "" {
		volumes = append(volumes, configMapVolume("upgrade", s.UpgradeConfigMap, "upgrade.json", "upgrade.json", false))
		mounts = append(mounts, corev1.VolumeMount{Name: "upgrade", MountPath: luxUpgradeDir, ReadOnly: true})
	}
	if s.NodeConfigMap != "" {
		volumes = append(volumes, configMapVolume("node-config", s.NodeConfigMap, "config.json", "config.json", false))
		mounts = append(mounts, corev1.VolumeMount{Name: "node-config", MountPath: luxNodeConfigDir, ReadOnly: true})
	}
	if p.chainConfigs() {
		var sources []corev1.VolumeProjection
		for _, c := range s.Chains {
			if c.GenesisConfigMap == "" {
				continue
			}
			sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: c.GenesisConfigMap},
				Items: []corev1.KeyToPath{
					{Key: "config.json", Path: c.ChainID + "/config.json"},
					{Key: "upgrade.json", Path: c.ChainID + "/upgrade.json"},
				},
				Optional: ptr.To(true),
			}})
		}
		volumes = append(volumes, corev1.Volume{Name: "chain-config", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "chain-config", MountPath: luxChainConfigDir, ReadOnly: true})
	}
	if sr := s.SeedRestore; sr != nil && sr.Enabled {
		img := sr.Image
		if img == "" {
			img = p.image()
		}
		inits = append(inits, shellInit("seed-restore", img, pull, p.seedScript(), nil, []corev1.VolumeMount{dataMount}))
	}
	if p.pluginDir != "" {
		img := s.PluginSource.Image
		if img == "" {
			img = p.image()
		}
		pm := corev1.VolumeMount{Name: "plugins", MountPath: p.pluginDir}
		volumes = append(volumes, corev1.Volume{Name: "plugins", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		inits = append(inits, shellInit("fetch-plugins", img, pull, p.pluginScript(), nil, []corev1.VolumeMount{pm}))
		mounts = append(mounts, corev1.VolumeMount{Name: "plugins", MountPath: p.pluginDir, ReadOnly: true})
	}
	if p.stakingFiles == luxStakingDir {
		secret := s.Staking.SecretName
		if secret == "" {
			secret = s.Staking.KMS.SecretName()
		}
		volumes = append(volumes,
			corev1.Volume{Name: "staking-keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: ptr.To[int32](0o440)}}},
			corev1.Volume{Name: "staking", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		inits = append(inits, shellInit("staking-keys", p.image(), pull, stakingScript, p.podEnv()[1:2], []corev1.VolumeMount{
			{Name: "staking-keys", MountPath: luxStakingKeysDir, ReadOnly: true},
			{Name: "staking", MountPath: luxStakingDir},
		}))
		mounts = append(mounts, corev1.VolumeMount{Name: "staking", MountPath: luxStakingDir, ReadOnly: true})
	}
	if p.gate {
		inits = append(inits, shellInit("startup-gate", p.image(), pull, p.gateScript(), p.podEnv()[1:2], nil))
	}
	env := p.podEnv()
	if p.stakingFiles != luxStakingDir {
		// The node generates its identity under $HOME; on the claim it survives restarts.
		env = append(env, corev1.EnvVar{Name: "HOME", Value: luxDataPath})
	}
	main := corev1.Container{
		Name:            p.id.container,
		Image:           p.image(),
		ImagePullPolicy: pull,
		Args:            p.args(),
		Env:             env,
		Ports:           containerPorts(luxPorts(p.staking, p.http)),
		VolumeMounts:    mounts,
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds:    defaultProbePeriod,
			TimeoutSeconds:   probeTimeoutSeconds,
			FailureThreshold: 30,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds:    15,
			TimeoutSeconds:   probeTimeoutSeconds,
			FailureThreshold: probeFailureThreshold,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ext/health", Port: intstr.FromString("http")}},
			PeriodSeconds:    defaultProbePeriod,
			TimeoutSeconds:   probeTimeoutSeconds,
			FailureThreshold: 3,
		},
	}
	if s.Engine == "" || s.Engine == "luxd" {
		main.Command = []string{luxdBinary}
	}
	if s.Resources != nil {
		main.Resources = *s.Resources
	}
	podLabels := maps.Clone(p.id.labels)
	if s.Engine != "" {
		podLabels[luxEngineLabel] = s.Engine
	}
	annotations := withLabels(s.Annotations, map[string]string{luxConfigHashAnnotation: p.configHash()})
	retention := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if s.Storage != nil && s.Storage.RetentionPolicy == "Delete" {
		retention = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: o.meta(o.Name, p.id.labels),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(p.replicas),
			Selector:                             &metav1.LabelSelector{MatchLabels: maps.Clone(p.id.selector)},
			ServiceName:                          p.headless(),
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			MinReadySeconds:                      minReadySeconds,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retention, WhenScaled: retention},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec: corev1.PodSpec{
					InitContainers:                orNil(inits),
					Containers:                    withPreStop([]corev1.Container{main}),
					Volumes:                       volumes,
					ImagePullSecrets:              secretRefs(s.ImagePullSecrets),
					SecurityContext:               p.id.podSecurity.DeepCopy(),
					TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriodSeconds),
				},
			},
		},
	}
	if p.maxUnavailable > 1 {
		// One at a time is the StatefulSet controller's own rolling update. A larger bound
		// needs the MaxUnavailableStatefulSet feature gate; an apiserver without it drops the
		// field and rolls one at a time, the safe side (the PDB still allows maxUnavailable).
		sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(p.maxUnavailable))}
	}
	if p.id.topologySpread {
		sts.Spec.Template.Spec.TopologySpreadConstraints = topologySpread(p.replicas, p.id.selector)
	}
	if s.Storage != nil {
		claim := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: p.vct},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: s.Storage.Size}},
			},
		}
		if class := or(s.Storage.StorageClassName, p.id.defaultStorageClass); class != "" {
			claim.Spec.StorageClassName = ptr.To(class)
		}
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim}
	}
	return sts, nil
}

// orNil returns nil for no init containers, so the field is omitted.
func orNil(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// or is a, else b.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func configMapVolume(volume, name, key, path string, optional bool) corev1.Volume {
	src := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: []corev1.KeyToPath{{Key: key, Path: path}}}
	if optional {
		src.Optional = ptr.To(true)
	}
	return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{ConfigMap: src}}
}

// stakingScript copies the ordinal's keys from the Secret into the memory volume the node
// reads; a missing certificate, key or signer key stops the pod with a message naming it
// (a validator must never start with a fresh identity).
const stakingScript = `set -eu
i="${POD_INDEX:?pod index label missing}"
for f in "staker-$i.crt:staker.crt" "staker-$i.key:staker.key" "signer-$i.key:signer.key"; do
  src="/staking-keys/${f%%:*}"; dst="/staking/${f#*:}"
  if [ ! -s "$src" ]; then echo "staking-keys: the staking Secret has no ${f%%:*}" >&2; exit 1; fi
  cp "$src" "$dst"; chmod 600 "$dst"
done
echo "staking-keys: keys of validator $i in place"
`

// seedScript restores the first source whose archive matches its expectedHash into the data
// dir, only when the dir is empty (lost+found aside) and unseeded; a mismatch is never
// unpacked, and when every source fails the pod stops rather than start from a bad seed.
func (p *luxPlan) seedScript() string {
	dir := p.seedDir()
	marker := p.id.seedMarker
	if !path.IsAbs(marker) {
		marker = path.Join(dir, marker)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `set -eu
dir='%s'; marker='%s'; tmp="$dir/.seed-restore.partial"
mkdir -p "$dir"
if [ -e "$marker" ]; then echo "seed-restore: $marker exists, nothing to do"; exit 0; fi
if [ -n "$(ls -A "$dir" | grep -v -x -e lost+found -e .seed-restore.partial || true)" ]; then
  echo "seed-restore: $dir is not empty, never overwritten"; exit 0
fi
restore() {
  rm -f "$tmp"
  curl -fsSL --retry 5 --retry-delay 5 -o "$tmp" "$1" || { echo "seed-restore: download of $1 failed" >&2; return 1; }
  if ! echo "$2  $tmp" | sha256sum -c - >/dev/null; then echo "seed-restore: $1 does not match its expectedHash, not unpacked" >&2; rm -f "$tmp"; return 1; fi
  case "$3" in
    zstd) zstd -dc "$tmp" | tar -x -C "$dir" ;;
    gzip) tar -xzf "$tmp" -C "$dir" ;;
    *) tar -xf "$tmp" -C "$dir" ;;
  esac
  rm -f "$tmp"; touch "$marker"; echo "seed-restore: restored $1"
}
`, dir, marker)
	if slices.ContainsFunc(p.s.SeedRestore.Sources, func(s v1.SeedSource) bool { return s.ExpectedHash == "" }) {
		fmt.Fprintf(&b, seedPublishedScript, map[bool]int{true: 1, false: 0}[p.id.seedUnverified])
	}
	for _, src := range p.s.SeedRestore.Sources {
		if src.ExpectedHash == "" {
			fmt.Fprintf(&b, "restore_published '%s' %s && exit 0\n", src.URL, seedFormat(src.URL))
			continue
		}
		fmt.Fprintf(&b, "restore '%s' '%s' %s && exit 0\n", src.URL, strings.TrimPrefix(src.ExpectedHash, "sha256:"), seedFormat(src.URL))
	}
	b.WriteString("echo 'seed-restore: no source restored' >&2; exit 1\n")
	return b.String()
}

// seedPublishedScript restores a source without expectedHash: its checksum is <url>.sha256
// from the same https origin (no redirect followed). Published: the archive is unpacked only
// when it matches. Not published (404): with allow_unverified it is unpacked into the data dir,
// which the caller has checked is empty, with a warning; without it nothing is unpacked. Any
// other answer is a failure, never a reason to skip verification.
const seedPublishedScript = `allow_unverified=%d
restore_published() {
  resp=$(curl -sS --proto =https --retry 5 --retry-delay 5 -w '\n%%{http_code}' "$1.sha256") || { echo "seed-restore: fetching $1.sha256 failed" >&2; return 1; }
  code=$(printf '%%s\n' "$resp" | tail -n1)
  case "$code" in
    200)
      sum=$(printf '%%s\n' "$resp" | head -n1 | cut -d' ' -f1 | tr -d '\r'); sum="${sum#sha256:}"
      if ! printf '%%s' "$sum" | grep -qxE '[0-9a-f]{64}'; then echo "seed-restore: $1.sha256 holds no sha256, not unpacked" >&2; return 1; fi
      restore "$1" "$sum" "$2" ;;
    404)
      if [ "$allow_unverified" != 1 ]; then echo "seed-restore: $1 has no expectedHash and no $1.sha256 is published: not unpacked unverified" >&2; return 1; fi
      echo "seed-restore: WARNING SeedRestoreUnverified: $1 has no expectedHash and no $1.sha256 is published; unpacking it unverified into the empty $dir" >&2
      rm -f "$tmp"
      curl -fsSL --proto-redir =https --retry 5 --retry-delay 5 -o "$tmp" "$1" || { echo "seed-restore: download of $1 failed" >&2; return 1; }
      if ! case "$2" in
        zstd) zstd -t -q "$tmp" && zstd -dc "$tmp" | tar -x -C "$dir" ;;
        gzip) tar -xzf "$tmp" -C "$dir" ;;
        *) tar -xf "$tmp" -C "$dir" ;;
      esac; then echo "seed-restore: unpacking $1 failed, not marked seeded" >&2; rm -f "$tmp"; return 1; fi
      rm -f "$tmp"; touch "$marker"; echo "seed-restore: restored $1 (unverified)" ;;
    *) echo "seed-restore: $1.sha256 answered HTTP $code, not unpacked" >&2; return 1 ;;
  esac
}
`

// pluginScript fetches each VM plugin and installs it under its VM ID only when its sha256
// matches.
func (p *luxPlan) pluginScript() string {
	ps := p.s.PluginSource
	var b strings.Builder
	fmt.Fprintf(&b, `set -eu
dir='%s'
fetch() {
  curl -fsSL --retry 5 --retry-delay 5 -o "$dir/$1.partial" "$2"
  if ! echo "$3  $dir/$1.partial" | sha256sum -c - >/dev/null; then echo "fetch-plugins: $2 does not match its sha256, not installed" >&2; exit 1; fi
  chmod 0755 "$dir/$1.partial"; mv "$dir/$1.partial" "$dir/$1"; echo "fetch-plugins: installed $1"
}
`, p.pluginDir)
	base := strings.TrimRight(ps.Endpoint, "/") + "/" + strings.Trim(ps.Bucket, "/") + "/"
	for _, vm := range ps.VMPlugins {
		fmt.Fprintf(&b, "fetch '%s' '%s' '%s'\n", vm.VMID, base+strings.TrimLeft(vm.ObjectKey, "/"), strings.TrimPrefix(vm.SHA256, "sha256:"))
	}
	return b.String()
}

// gateScript waits until gateMinPeers other validators answer on their staking port.
func (p *luxPlan) gateScript() string {
	var peers []string
	for i := range p.replicas {
		peers = append(peers, fmt.Sprintf("%d:%s", i, p.peer(i)))
	}
	onTimeout := `echo "startup-gate: timed out with $up of $want peers, starting anyway"; exit 0`
	if p.gateFail {
		onTimeout = `echo "startup-gate: timed out with $up of $want peers" >&2; exit 1`
	}
	return fmt.Sprintf(`set -u
want=%d; deadline=$(( $(date +%%s) + %d ))
while :; do
  up=0
  for p in %s; do
    [ "${p%%%%:*}" = "$POD_INDEX" ] && continue
    nc -z -w 2 "${p#*:}" %d 2>/dev/null && up=$((up+1))
  done
  if [ "$up" -ge "$want" ]; then echo "startup-gate: $up peers up"; exit 0; fi
  if [ "$(date +%%s)" -ge "$deadline" ]; then %s; fi
  sleep %d
done
`, p.gateMinPeers, p.gateTimeout, strings.Join(peers, " "), p.staking, onTimeout, p.gateIv)
}

// services are <cr> (type and annotations from the identity), <cr>-headless and the per-pod
// Services.
func (p *luxPlan) services() []child {
	ports := servicePorts(luxPorts(p.staking, p.http))
	svc := func(name string, sel map[string]string, labels map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: p.o.meta(name, labels),
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: sel, Ports: slices.Clone(ports)},
		}
	}
	rpc := svc(p.o.Name, maps.Clone(p.id.selector), maps.Clone(p.id.labels))
	if p.id.serviceType != "" {
		rpc.Spec.Type = p.id.serviceType
	}
	if len(p.id.serviceAnnotations) > 0 {
		rpc.Annotations = maps.Clone(p.id.serviceAnnotations)
	}
	hs := svc(p.headless(), maps.Clone(p.id.selector), maps.Clone(p.id.labels))
	hs.Spec.ClusterIP = corev1.ClusterIPNone
	hs.Spec.PublishNotReadyAddresses = true
	out := []child{{rpc, gvkService}, {hs, gvkService}}
	if p.id.perPodServices {
		for i := range p.replicas {
			name := fmt.Sprintf("%s-%d", p.o.Name, i)
			sel := maps.Clone(p.id.selector)
			sel[podNameLabel] = name
			delete(sel, LabelManagedBy)
			labels := withLabels(p.id.labels, map[string]string{"pod-index": strconv.Itoa(int(i))})
			ps := svc(name, sel, labels)
			ps.Spec.Type = rpc.Spec.Type
			ps.Annotations = maps.Clone(rpc.Annotations)
			out = append(out, child{ps, gvkService})
		}
	}
	return out
}

func (p *luxPlan) pdb() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: p.o.meta(p.id.pdbName, maps.Clone(p.id.labels)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: maps.Clone(p.id.selector)},
			MaxUnavailable: ptr.To(intstr.FromInt32(p.maxUnavailable)),
		},
	}
}

// kmsSecret is the KMSSecret projecting the staking Secret.
func (p *luxPlan) kmsSecret() (*unstructured.Unstructured, error) {
	st := p.s.Staking
	name := st.SecretName
	if name == "" {
		name = st.KMS.SecretName()
	}
	if p.id.kms != nil {
		return p.id.kms(p.o, name, p.id.labels)
	}
	k := st.KMS
	switch {
	case k.Host() != "":
		return nil, refuse(p.o, "spec.staking.kms.hostApi", "the kms."+p.o.Group+"/v1 KMSSecret has no endpoint: the projector's own configuration names it")
	case k.CredentialsRef != nil:
		return nil, refuse(p.o, "spec.staking.kms.credentialsRef", "the kms."+p.o.Group+"/v1 KMSSecret carries no credentials: the projector holds its own")
	case k.ResyncInterval != nil:
		return nil, refuse(p.o, "spec.staking.kms.resyncInterval", "the kms."+p.o.Group+"/v1 KMSSecret has no resync interval")
	}
	ref := *k.DeepCopy()
	ref.ManagedSecretName, ref.LegacySecretName = name, ""
	out := kmsSecrets(p.o, []v1.KMSSecretRef{ref}, p.id.labels)
	return out[0], nil
}

// cronSchedule turns an interval in seconds into a cron schedule, when cron can express it.
func cronSchedule(seconds int64) (string, bool) {
	if seconds <= 0 || seconds%60 != 0 {
		return "", false
	}
	m := seconds / 60
	switch {
	case m == 1:
		return "* * * * *", true
	case m < 60 && 60%m == 0:
		return fmt.Sprintf("*/%d * * * *", m), true
	case m == 60:
		return "0 * * * *", true
	case m%60 == 0 && m/60 < 24 && 24%(m/60) == 0:
		return fmt.Sprintf("0 */%d * * *", m/60), true
	case m == 24*60:
		return "0 0 * * *", true
	}
	return "", false
}

// sourceClaim is the data claim of validator i, which the schedules read read-only on the
// validator's node (a ReadWriteOnce claim mounts on one node, for any number of its pods).
func (p *luxPlan) sourceClaim(i int32) string { return fmt.Sprintf("%s-%s-%d", p.vct, p.o.Name, i) }

// jobPod is the pod of a schedule: beside validator i, its claim read-only at /data, scratch
// at /work, no service account token, never the staking Secret.
func (p *luxPlan) jobPod(i int32, c corev1.Container, extra []corev1.Volume) corev1.PodTemplateSpec {
	c.VolumeMounts = append([]corev1.VolumeMount{
		{Name: "data", MountPath: luxDataPath, ReadOnly: true},
		{Name: "work", MountPath: "/work"},
	}, c.VolumeMounts...)
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: withLabels(p.id.labels, map[string]string{LabelComponent: "schedule"})},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			ImagePullSecrets:             secretRefs(p.s.ImagePullSecrets),
			Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{podNameLabel: fmt.Sprintf("%s-%d", p.o.Name, i)}},
					TopologyKey:   hostnameTopologyKey,
				}},
			}},
			Containers: []corev1.Container{c},
			Volumes: append([]corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.sourceClaim(i), ReadOnly: true}}},
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}, extra...),
		},
	}
}

func (p *luxPlan) cronJob(name, schedule string, pod corev1.PodTemplateSpec) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: p.o.meta(name, maps.Clone(p.id.labels)),
		Spec: batchv1.CronJobSpec{
			Schedule:                   schedule,
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](jobsHistory),
			FailedJobsHistoryLimit:     ptr.To[int32](jobsHistory),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](2),
				Template:     pod,
			}},
		},
	}
}

// s3Env is the endpoint and credentials of an S3 upload: the access and secret keys from the
// schedule's own Secret (keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
func s3Env(endpoint, bucket, region, secret, literalAccessKey string) []corev1.EnvVar {
	key := func(name string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: name,
		}}}
	}
	env := []corev1.EnvVar{
		{Name: "S3_ENDPOINT", Value: strings.TrimRight(endpoint, "/")},
		{Name: "S3_BUCKET", Value: bucket},
		{Name: "S3_REGION", Value: region},
	}
	if literalAccessKey != "" {
		env = append(env, corev1.EnvVar{Name: "AWS_ACCESS_KEY_ID", Value: literalAccessKey})
	} else {
		env = append(env, key("AWS_ACCESS_KEY_ID"))
	}
	return append(env, key("AWS_SECRET_ACCESS_KEY"))
}

// s3Put uploads $1 to key $2 with a SigV4-signed PUT.
const s3Put = `put() { curl -fsS --retry 3 --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -T "$1" "$S3_ENDPOINT/$S3_BUCKET/$2"; }
`

// exportRLP asks validator i's node to export chain alias to file on its own data dir.
func (p *luxPlan) exportRLP(i int32, alias, file, from, to string) string {
	return fmt.Sprintf(`curl -fsS -X POST -H 'content-type: application/json' --data '{"jsonrpc":"2.0","id":1,"method":"admin_exportChain","params":["%s",%s,%s]}' 'http://%s:%d/ext/bc/%s/admin'
`, file, from, to, p.peer(i), p.http, alias)
}

// snapshotArchive lists what a snapshot archives: the chain data, never staking or $HOME.
var snapshotArchive = []string{"db", "chainData", "configs", "genesis.bytes"}

func (p *luxPlan) cronJobs() ([]*batchv1.CronJob, error) {
	var out []*batchv1.CronJob
	if r := p.s.Replication; r != nil && r.Enabled {
		j, err := p.snapshotJob(r)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	for i := range p.s.ExportSchedules {
		j, err := p.exportJob(i)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

func (p *luxPlan) snapshotJob(r *v1.Replication) (*batchv1.CronJob, error) {
	switch {
	case p.s.Storage == nil:
		return nil, p.fail("replication needs storage: a snapshot reads a validator's data claim")
	case r.S3Endpoint == "" || r.S3Bucket == "" || r.CredentialsSecret == "":
		return nil, p.fail("replication needs s3Endpoint, s3Bucket and credentialsSecret (keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	case r.AgeRecipient != "" || r.AgeIdentitySecret != "":
		return nil, refuse(p.o, "spec.replication.ageRecipient/ageIdentitySecret", "snapshots are not encrypted by the operator; encrypt the bucket")
	case r.IncrementalIntervalSeconds != 0:
		return nil, refuse(p.o, "spec.replication.incrementalIntervalSeconds", "every snapshot is a full archive")
	case shellUnsafe.MatchString(r.S3Path + r.S3Endpoint + r.S3Bucket):
		return nil, p.fail("replication: s3Path, s3Endpoint and s3Bucket may not contain quotes, backslashes or newlines")
	}
	interval := r.SnapshotIntervalSeconds
	if interval == 0 {
		interval = defaultSnapshotInterval
	}
	schedule, ok := cronSchedule(interval)
	if !ok {
		return nil, p.fail("replication.snapshotIntervalSeconds %d is not a cron schedule: use whole minutes dividing an hour, or hours dividing a day", interval)
	}
	src := deref32(r.SourceNodeIndex, 0)
	if src >= p.replicas {
		return nil, p.fail("replication.sourceNodeIndex %d: there are %d validators", src, p.replicas)
	}
	endpoint := r.S3Endpoint
	if !strings.Contains(endpoint, "://") {
		endpoint = map[bool]string{true: "https://", false: "http://"}[r.S3UseSSL] + endpoint
	}
	prefix := strings.Trim(or(r.S3Path, p.o.Name), "/")
	var b strings.Builder
	b.WriteString("set -eu\n" + s3Put)
	if p.id.snapshotRLP {
		b.WriteString(p.exportRLP(src, "C", "/data/snapshot-cchain.rlp", "null", "null"))
	}
	var name string
	if n := p.id.snapshotMaxRetained; n > 0 {
		// a fixed ring of slots: never more than maxRetained archives, and no listing needed
		fmt.Fprintf(&b, "slot=$(( $(date +%%s) / %d %% %d ))\n", interval, n)
		name = fmt.Sprintf("%s-node%d-$slot", p.o.Name, src)
	} else {
		b.WriteString("slot=$(date -u +%Y%m%dT%H%M%SZ)\n")
		name = fmt.Sprintf("%s-node%d-$slot", p.o.Name, src)
	}
	items := slices.Clone(snapshotArchive)
	if p.id.snapshotRLP {
		items = append(items, "snapshot-cchain.rlp")
	}
	fmt.Fprintf(&b, `key='%s'/"%s.tar.gz"
cd /data; set --
for p in %s; do [ -e "$p" ] && set -- "$@" "$p"; done
tar -czf /work/snapshot.tar.gz "$@"
sha256sum /work/snapshot.tar.gz | cut -d' ' -f1 > /work/snapshot.tar.gz.sha256
put /work/snapshot.tar.gz "$key"; put /work/snapshot.tar.gz.sha256 "$key.sha256"
echo "snapshot: uploaded $key ($(cat /work/snapshot.tar.gz.sha256))"
`, prefix, name, strings.Join(items, " "))
	c := corev1.Container{
		Name: "snapshot", Image: p.image(), ImagePullPolicy: pullPolicy(p.s.Image),
		Command: []string{"/bin/sh", "-c", b.String()},
		Env:     s3Env(endpoint, r.S3Bucket, or(r.S3Region, defaultS3Region), r.CredentialsSecret, p.id.snapshotAccessKey),
	}
	return p.cronJob(p.o.Name+"-snapshot", schedule, p.jobPod(src, c, nil)), nil
}

func (p *luxPlan) exportJob(i int) (*batchv1.CronJob, error) {
	e := p.s.ExportSchedules[i]
	field := fmt.Sprintf("exportSchedules[%d]", i)
	switch {
	case p.s.Storage == nil:
		return nil, p.fail("%s needs storage: the node writes the export to its data claim", field)
	case !flagNameRule.MatchString(e.Name) || len(e.Name) > 30:
		return nil, p.fail("%s.name %q: lower-case letters, digits and dashes, at most 30", field, e.Name)
	case e.Schedule == "" || e.ChainAlias == "" || shellUnsafe.MatchString(e.ChainAlias+e.ToHeight):
		return nil, p.fail("%s needs schedule and chainAlias", field)
	case (e.Destination.PVC == nil) == (e.Destination.S3 == nil):
		return nil, p.fail("%s.destination needs exactly one of pvc and s3", field)
	}
	to := "null"
	switch e.ToHeight {
	case "", "latest":
	default:
		if _, err := strconv.ParseUint(e.ToHeight, 10, 64); err != nil {
			return nil, p.fail("%s.toHeight %q: a block number or latest", field, e.ToHeight)
		}
		to = e.ToHeight
	}
	file := fmt.Sprintf("export-%s-%s.rlp", e.Name, e.ChainAlias)
	var b strings.Builder
	b.WriteString("set -eu\n")
	b.WriteString(p.exportRLP(0, e.ChainAlias, "/data/"+file, strconv.FormatInt(e.FromHeight, 10), to))
	b.WriteString(`stamp=$(date -u +%Y%m%dT%H%M%SZ)` + "\n")
	var env []corev1.EnvVar
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	out := fmt.Sprintf("%s-%s-$stamp.rlp", e.Name, e.ChainAlias)
	if d := e.Destination.PVC; d != nil {
		volumes = append(volumes, corev1.Volume{Name: "export", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.ClaimName}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "export", MountPath: "/export", SubPath: d.SubPath})
		fmt.Fprintf(&b, "cp '/data/%s' \"/export/%s\"\necho \"export: wrote /export/%s\"\n", file, out, out)
	} else {
		d := e.Destination.S3
		if d.Endpoint == "" || d.Bucket == "" || d.CredentialsSecretRef.Name == "" || shellUnsafe.MatchString(d.KeyPrefix) {
			return nil, p.fail("%s.destination.s3 needs endpoint, bucket and credentialsSecretRef", field)
		}
		env = s3Env(d.Endpoint, d.Bucket, defaultS3Region, d.CredentialsSecretRef.Name, "")
		key := strings.Trim(d.KeyPrefix, "/")
		if key != "" {
			key += "/"
		}
		b.WriteString(s3Put)
		fmt.Fprintf(&b, "put '/data/%s' \"%s%s\"\necho \"export: uploaded %s%s\"\n", file, key, out, key, out)
	}
	img := or(e.Image, p.image())
	c := corev1.Container{Name: "export", Image: img, Command: []string{"/bin/sh", "-c", b.String()}, Env: env, VolumeMounts: mounts}
	if e.Resources != nil {
		c.Resources = *e.Resources
	}
	return p.cronJob(fmt.Sprintf("%s-export-%s", p.o.Name, e.Name), e.Schedule, p.jobPod(0, c, volumes)), nil
}
