package kinds

// Placement says where a Kind is served: the canonical v1 Kinds of crd-contract.json, the
// legacy v1alpha1 Kinds, or the HIP-era placements of the chain Kinds at <universe>/v1.
type Placement string

// The placements.
const (
	PlacementCanonical Placement = "v1"
	PlacementV1alpha1  Placement = "v1alpha1"
	PlacementHIP       Placement = "hip"
	// PlacementFleet is the fleet's cluster-scoped registry, kinds/fleet, at <universe>/v1.
	PlacementFleet Placement = "fleet"
	// PlacementGitSync is the git path's status object, kinds/gitsync, at <universe>/v1.
	PlacementGitSync Placement = "gitsync"
)

// Extension is a spec field served beyond crd-contract.json (or, for the legacy placements,
// beyond the schema they were published with), with the real CR that needs it.
type Extension struct {
	Placement Placement
	Kinds     []string
	// Field is the path below spec, with [] for list items.
	Field  string
	Reason string
	// Read names what the builders read when the field has two spellings.
	Read string
}

var (
	datastoreKinds  = []string{"Datastore", "DocDB", "KV", "S3", "SQL"}
	kmsSecretsKinds = []string{
		"App", "Base", "DocDB", "Datastore", "Explorer", "Function", "IAM", "Indexer", "KMS", "KV",
		"LLM", "ManagedDatabase", "Observability", "Queue", "S3", "SQL", "Service",
	}
	autoscalingKinds = []string{
		"App", "Explorer", "Function", "IAM", "Indexer", "KMS", "LLM", "Observability", "Queue", "Service",
	}
)

// Extensions is the one list of fields served beyond the published schemas. The contract test
// allows an extra spec field only when it is listed here, and checks that every listed field
// exists in the generated schema.
var Extensions = []Extension{
	{
		Placement: PlacementCanonical, Kinds: datastoreKinds, Field: "type",
		Reason: "HIP-401..405 CRs (fixtures/crs/hip-examples) and every HanzoDatastore carry the retired engine discriminator",
		Read:   "ignored for SQL, KV, DocDB and S3 (the Kind fixes the engine); v1.Datastore.Engine() for Datastore",
	},
	{
		Placement: PlacementCanonical, Kinds: kmsSecretsKinds, Field: "kmsSecrets[].hostAPI",
		Reason: "the Go spelling used by every production CR (fixtures/crs/production) and the Rust v1alpha1 aliases",
		Read:   "v1.KMSSecretRef.Host(): hostApi, else hostAPI",
	},
	{
		Placement: PlacementCanonical, Kinds: kmsSecretsKinds, Field: "kmsSecrets[].secretName",
		Reason: "HIP-410 (fixtures/crs/hip-examples/hip-0410-llm-crd.yaml) names the target Secret secretName",
		Read:   "v1.KMSSecretRef.SecretName(): managedSecretName, else secretName",
	},
	{
		Placement: PlacementCanonical, Kinds: kmsSecretsKinds, Field: "kmsSecrets[].name",
		Reason: "HIP-410 names each sync entry",
	},
	{
		Placement: PlacementCanonical, Kinds: kmsSecretsKinds, Field: "kmsSecrets[].keys",
		Reason: "HIP-410 lists the keys to sync",
	},
	{
		Placement: PlacementCanonical, Kinds: autoscalingKinds, Field: "autoscaling.targetCPUUtilization",
		Reason: "the Go spelling of targetCpuUtilization (HanzoService CRs converted to v1 and CRs written for the Go CRD)",
		Read:   "v1.AutoscalingSpec.TargetCPU(): targetCpuUtilization, else targetCPUUtilization",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"Gateway"}, Field: "routes[].rateLimit",
		Reason: "HIP-412 writes the name of a rateLimits entry where the Rust type has an object; the field takes either (free-form: the apiserver cannot check a free-form field with CEL, so the conversion rejects other shapes)",
		Read:   "v1.GatewayRoute.RateLimitOf(spec.rateLimits), which rejects other shapes",
	},
	{
		Placement: PlacementV1alpha1, Kinds: []string{"HanzoService"}, Field: "probes",
		Reason: "the Go sample CR (fixtures/crs/samples/hanzo_v1alpha1_hanzoservice.yaml) writes probes.readiness/liveness.httpGet, which matched neither schema",
		Read:   "v1alpha1.ToService: livenessProbe/readinessProbe, else probes",
	},
	{
		Placement: PlacementV1alpha1, Kinds: []string{"HanzoService"}, Field: "autoscaling.targetCPUUtilizationPercentage",
		Reason: "the Go sample CR's spelling of targetCPUUtilization",
		Read:   "v1alpha1.ToService: targetCpuUtilization, else targetCPUUtilization, else targetCPUUtilizationPercentage",
	},
	{
		Placement: PlacementV1alpha1, Kinds: []string{"HanzoService", "HanzoDatastore"}, Field: "kmsSecrets[].hostApi",
		Reason: "the Rust v0.3-v0.5 binaries served the v1alpha1 Kinds with the v1 schema",
		Read:   "v1alpha1.ToService/ToDatastore move it to hostApi",
	},
	{
		Placement: PlacementHIP, Kinds: []string{"Chain"}, Field: "chain.vmID",
		Reason: "HIP-415 (fixtures/crs/hip-examples/hip-0415-chain-crd.yaml) spells vmId as vmID",
		Read:   "hip.ToChain: vmId, else vmID",
	},
	{
		Placement: PlacementHIP, Kinds: []string{"Chain"}, Field: "chain.subnetID",
		Reason: "HIP-415 names the network subnetID",
		Read:   "hip.ToChain: networkId, else subnetID",
	},
	{
		Placement: PlacementHIP, Kinds: []string{"Network"}, Field: "validators",
		Reason: "HIP-414 writes a validator object where v0.6 has a count; the field takes either (free-form: the apiserver cannot check a free-form field with CEL, so the conversion rejects other shapes)",
		Read:   "hip.ToNetwork: a count, or validatorTemplate with its replicas",
	},
	{
		Placement: PlacementHIP, Kinds: []string{"Network"}, Field: "chains[].genesis",
		Reason: "HIP-414 gives each chain's genesis inline",
		Read:   "dropped by hip.ToNetwork; the canonical Network has no genesis",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "upgradeConfigMap",
		Reason: "a lux.network LuxNetwork (testdata/luxnetwork) carries an upgrade config; the contract's LuxRuntime has no field for it",
		Read:   "the node's --upgrade-file from the ConfigMap's upgrade.json",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "nodeConfigMap",
		Reason: "a LuxNetwork's spec.config (the node config file)",
		Read:   "the node's --config-file from the ConfigMap's config.json",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "trackAllChains",
		Reason: "a LuxNetwork's chainTracking.trackAllChains (every luxfi network CR sets it)",
		Read:   "--track-all-chains instead of --track-chains",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "nodeFlags",
		Reason: "a LuxNetwork's consensus, api, dbType, networkCompressionType and importChainData flags",
		Read:   "passed as --<name>=<value> in name order; a flag the builder sets is refused",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "upgradeStrategy",
		Reason: "a LuxNetwork's upgradeStrategy.maxUnavailable",
		Read:   "the StatefulSet's rollingUpdate.maxUnavailable and the PDB",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "startupGate",
		Reason: "a LuxNetwork's startupGate (luxfi mainnet sets onTimeout and timeoutSeconds)",
		Read:   "the startup-gate init container",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "chains[].alias",
		Reason: "a LuxNetwork's chains[].alias and chainAliases",
		Read:   "--chain-aliases-file-content",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"LuxRuntime"}, Field: "chains[].trackingID",
		Reason: "a LuxNetwork's chains[].trackingId",
		Read:   "--track-chains names it instead of chainID",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"ImageUpdate"}, Field: "insecure",
		Reason: "issue 12: plain HTTP to a non-loopback registry only when the CR says so",
		Read:   "upgrade/image.Reconciler",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"ImageUpdate"}, Field: "pushBranch",
		Reason: "issue 12: commit to a branch instead of writebackRef, never force-pushed (Flux's git.push.branch)",
		Read:   "upgrade/image.Reconciler",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"ImageUpdate"}, Field: "commitMessage",
		Reason: "issue 12: the commit message, a template over repository and old and new tag (Flux's messageTemplate)",
		Read:   "upgrade/image.Reconciler",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"ImageUpdate"}, Field: "commitAuthor",
		Reason: "issue 12: the commit author and committer (Flux's git.commit.author)",
		Read:   "upgrade/image.Reconciler",
	},
	{
		Placement: PlacementCanonical, Kinds: []string{"ImageUpdate"}, Field: "signingKeySecret",
		Reason: "issue 12: OpenPGP-signed commits, key git.asc (Flux's signingKey)",
		Read:   "upgrade/image.Reconciler",
	},
}

// Record says the Kind is a record another loop keeps (the fleet's Cluster registrations,
// the git path's GitSync status), not an application: it builds no children, the deploy
// plane lists none and takeover diff renders none.
func (p Placement) Record() bool { return p == PlacementFleet || p == PlacementGitSync }
