package kinds

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/kinds/gitsync"
	"github.com/openuniverse/operator/kinds/hip"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

// Builtin returns the Registry of every served Kind: the 34 canonical v1 Kinds, the legacy
// v1alpha1 Kinds (built through their v1 conversion) and the HIP-era placements. This literal
// is the only place a Kind is mapped to its builder.
//
//nolint:funlen // one line per Kind
func Builtin() Registry {
	const (
		legacy = PlacementV1alpha1
		hipera = PlacementHIP
		luxfi  = PlacementLuxNetwork
		uni    = FamilyUniverse
		kms    = FamilyKMS
		chain  = FamilyChain
	)
	return newRegistry(
		// The Service shape: Service and the Service-backed facades.
		serviceEntry("Service", newOf[v1.Service], func(cr *v1.Service) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("IAM", newOf[v1.IAM], func(cr *v1.IAM) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("KMS", newOf[v1.KMS], func(cr *v1.KMS) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("LLM", newOf[v1.LLM], func(cr *v1.LLM) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("Queue", newOf[v1.Queue], func(cr *v1.Queue) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("Observability", newOf[v1.Observability], func(cr *v1.Observability) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("Function", newOf[v1.Function], func(cr *v1.Function) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("Indexer", newOf[v1.Indexer], func(cr *v1.Indexer) *v1.ServiceSpec { return &cr.Spec }),
		serviceEntry("Explorer", newOf[v1.Explorer], func(cr *v1.Explorer) *v1.ServiceSpec { return &cr.Spec }),
		canonical("SPA", newOf[v1.SPA], func(cr *v1.SPA, o owner) (built, error) { return buildSPA(o, &cr.Spec) }, serviceOwns...),
		withServiceSpec(canonical("App", newOf[v1.App], buildApp, appOwns...), appServiceSpec),
		canonicalWith("Static", newOf[v1.Static], buildStatic, serviceOwns...),

		// The datastore shape: the Kind (or field) fixes the engine, never spec.type.
		canonical("SQL", newOf[v1.SQL], func(cr *v1.SQL, o owner) (built, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EnginePostgreSQL, cr.Labels)
		}, datastoreOwns...),
		canonical("KV", newOf[v1.KV], func(cr *v1.KV, o owner) (built, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineValkey, cr.Labels)
		}, datastoreOwns...),
		canonical("DocDB", newOf[v1.DocDB], func(cr *v1.DocDB, o owner) (built, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineDocDB, cr.Labels)
		}, datastoreOwns...),
		canonical("S3", newOf[v1.S3], func(cr *v1.S3, o owner) (built, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineS3, cr.Labels)
		}, datastoreOwns...),
		canonical("Datastore", newOf[v1.Datastore], func(cr *v1.Datastore, o owner) (built, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, cr.Engine(), cr.Labels)
		}, datastoreOwns...),
		canonical("ManagedDatabase", newOf[v1.ManagedDatabase], func(cr *v1.ManagedDatabase, o owner) (built, error) {
			engine := cr.Spec.Engine
			if engine == "" {
				engine = v1.EnginePostgreSQL
			}
			return buildDatastore(o, &cr.Spec.DBSpec, engine, cr.Labels)
		}, datastoreOwns...),

		// The edge.
		canonical("Ingress", newOf[v1.Ingress], func(cr *v1.Ingress, o owner) (built, error) { return buildIngressKind(o, &cr.Spec) }, gvkIngress),
		canonical("Gateway", newOf[v1.Gateway], func(cr *v1.Gateway, o owner) (built, error) { return buildGateway(o, &cr.Spec) }, gatewayOwns...),
		canonical("DNS", newOf[v1.DNS], func(cr *v1.DNS, o owner) (built, error) { return buildDNS(o, &cr.Spec) }, deploymentSvcOwns...),
		canonical("Base", newOf[v1.Base], func(cr *v1.Base, o owner) (built, error) { return buildBase(o, &cr.Spec) }, statefulOwns...),

		// The chain family.
		canonical("MPC", newOf[v1.MPC], func(cr *v1.MPC, o owner) (built, error) { return buildMPC(o, &cr.Spec) }, statefulOwns...),
		canonical("Network", newOf[v1.Network], func(cr *v1.Network, o owner) (built, error) { return buildNetwork(o, &cr.Spec) }, statefulOwns...),
		canonical("Chain", newOf[v1.Chain], nothing[*v1.Chain]),
		canonical("Validator", newOf[v1.Validator], nothing[*v1.Validator]),
		canonical("LuxRuntime", newOf[v1.LuxRuntime], func(cr *v1.LuxRuntime, o owner) (built, error) {
			return buildLuxRuntime(o, &cr.Spec)
		}, luxNodeOwns...),
		canonical("NodeFleet", newOf[v1.NodeFleet], func(cr *v1.NodeFleet, o owner) (built, error) {
			return buildNodeFleet(o, &cr.Spec)
		}, statefulOwns...),
		canonical("BitcoinRuntime", newOf[v1.BitcoinRuntime], func(cr *v1.BitcoinRuntime, o owner) (built, error) { return buildBitcoin(o, &cr.Spec) }, nodeRuntimeOwns...),
		canonical("EthereumRuntime", newOf[v1.EthereumRuntime], func(cr *v1.EthereumRuntime, o owner) (built, error) { return buildEthereum(o, &cr.Spec) }, nodeRuntimeOwns...),
		canonical("SolanaRuntime", newOf[v1.SolanaRuntime], func(cr *v1.SolanaRuntime, o owner) (built, error) { return buildSolana(o, &cr.Spec) }, nodeRuntimeOwns...),

		// Kinds whose loops act outside the cluster's object graph: no children.
		loopKind("AgentDeployment", newOf[v1.AgentDeployment], "agents", "the agent binding loop (cloud and visor APIs)"),
		loopKind("ImageUpdate", newOf[v1.ImageUpdate], "imageupdate", "the registry-to-git image update loop"),
		canonical("KMSSecret", newOf[v1.KMSSecret], loopLater[*v1.KMSSecret]("the KMS secret projector")),
		// The fleet's cluster registry (cluster-scoped): reconcile/fleet reads it; it builds nothing.
		withExternal("the fleet (reconcile/fleet)", entry(PlacementFleet, fleet.Kind, uni, newOf[fleet.Cluster], nothing[*fleet.Cluster])),
		// The git path's status object: the git sweep writes its status; it builds nothing.
		withExternal("the git sweep (reconcile/gitops)", entry(PlacementGitSync, gitsync.Kind, uni, newOf[gitsync.GitSync], nothing[*gitsync.GitSync])),

		// Legacy v1alpha1 Kinds, owned as themselves, built through their v1 conversion.
		withServiceSpec(entry(legacy, "HanzoService", uni, newOf[v1alpha1.HanzoService], func(cr *v1alpha1.HanzoService, o owner) (built, error) {
			return buildService(o, &v1alpha1.ToService(cr).Spec)
		}, serviceOwns...), hanzoServiceSpec),
		entry(legacy, "HanzoDatastore", uni, newOf[v1alpha1.HanzoDatastore], func(cr *v1alpha1.HanzoDatastore, o owner) (built, error) {
			ds := v1alpha1.ToDatastore(cr)
			return buildDatastore(o, &ds.Spec.DBSpec, ds.Engine(), ds.Labels)
		}, datastoreOwns...),
		// HanzoDNS keeps the Go operator's object set, which such CRs made in clusters.
		entry(legacy, "HanzoDNS", uni, newOf[v1alpha1.HanzoDNS], func(cr *v1alpha1.HanzoDNS, o owner) (built, error) {
			return buildLegacyDNS(o, &v1alpha1.ToDNS(cr).Spec)
		}, legacyDNSOwns...),

		// HIP-era placements at <universe>/v1, built through their canonical conversion.
		entry(hipera, "MPC", uni, newOf[hip.MPC], func(cr *hip.MPC, o owner) (built, error) {
			return buildMPC(o, &hip.ToMPC(cr).Spec)
		}, statefulOwns...),
		entry(hipera, "Network", uni, newOf[hip.Network], func(cr *hip.Network, o owner) (built, error) {
			n, err := hip.ToNetwork(cr)
			if err != nil {
				return nil, invalidSpec("%v", err)
			}
			return buildNetwork(o, &n.Spec)
		}, statefulOwns...),
		entry(hipera, "Indexer", uni, newOf[hip.Indexer], func(cr *hip.Indexer, o owner) (built, error) {
			return buildService(o, &hip.ToIndexer(cr).Spec)
		}, serviceOwns...),
		entry(hipera, "Explorer", uni, newOf[hip.Explorer], func(cr *hip.Explorer, o owner) (built, error) {
			return buildService(o, &hip.ToExplorer(cr).Spec)
		}, serviceOwns...),
		entry(hipera, "Chain", uni, newOf[hip.Chain], nothing[*hip.Chain]),
		entry(hipera, "Validator", uni, newOf[hip.Validator], nothing[*hip.Validator]),
		entry(hipera, "LuxRuntime", uni, newOf[hip.LuxRuntime], func(cr *hip.LuxRuntime, o owner) (built, error) {
			return buildLuxRuntime(o, &hip.ToLuxRuntime(cr).Spec)
		}, luxNodeOwns...),
		entry(hipera, "NodeFleet", uni, newOf[hip.NodeFleet], func(cr *hip.NodeFleet, o owner) (built, error) {
			return buildNodeFleet(o, &hip.ToNodeFleet(cr).Spec)
		}, statefulOwns...),
		entry(hipera, "Subnet", uni, newOf[hip.Subnet], nothing[*hip.Subnet]),

		// The luxfi operator's Kinds at lux.network/v1alpha1 and secrets.lux.network/v1alpha1,
		// from its own CRDs. LuxNetwork converts to LuxRuntime and builds with the node builder
		// under the luxfi names, labels and selectors.
		luxfiEntry(entryWith(luxfi, "LuxNetwork", chain, newOf[luxnetwork.LuxNetwork], buildLuxNetwork, luxNetworkOwns...), luxNetworkStatus, gvkLuxChain),
		luxfiEntry(entryWith(luxfi, "LuxChain", chain, newOf[luxnetwork.LuxChain], buildLuxChain), luxChainStatus, gvkLuxNetwork),
		luxfiEntry(entryWith(luxfi, "LuxIndexer", chain, newOf[luxnetwork.LuxIndexer], buildLuxIndexer, luxIndexerOwns...), luxIndexerStatus, gvkLuxNetwork),
		luxfiEntry(entryWith(luxfi, "LuxExplorer", chain, newOf[luxnetwork.LuxExplorer], buildLuxExplorer, luxExplorerOwns...), luxExplorerStatus, gvkLuxIndexer),
		luxfiEntry(entryWith(luxfi, "LuxGateway", chain, newOf[luxnetwork.LuxGateway], buildLuxGateway, luxGatewayOwns...), luxGatewayStatus, gvkLuxNetwork, gvkLuxIndexer),
		luxfiEntry(entryWith(luxfi, "LuxMPC", chain, newOf[luxnetwork.LuxMPC], buildLuxMPC, luxMPCOwns...), luxMPCStatus),
		withExternal("the secrets.lux.network KMS operator", entry(luxfi, "KMSSecret", kms, newOf[luxnetwork.KMSSecret], func(_ *luxnetwork.KMSSecret, o owner) (built, error) {
			return nil, &Halt{Phase: v1.PhasePending, Reason: ReasonDelegated,
				Message: fmt.Sprintf("KMSSecret %s/%s: the secrets.lux.network KMS operator fills its Secrets and owns its status; this operator declares it and builds nothing", o.Namespace, o.Name)}
		})),
	)
}

// built is what a builder returns.
type built = []*unstructured.Unstructured

// newOf returns a new empty T; newOf[v1.SQL] is the New of the SQL entry.
func newOf[T any]() *T { return new(T) }

// serviceEntry is a canonical Kind whose spec is a ServiceSpec, built through the Service path.
func serviceEntry[T Object](kind string, newT func() T, spec func(T) *v1.ServiceSpec) Entry {
	build := func(cr T, o owner) (built, error) { return buildService(o, spec(cr)) }
	return withServiceSpec(canonical(kind, newT, build, serviceOwns...), spec)
}

// canonical is an entry of the canonical placement in the family kinds/v1 declares for its
// Kind (v1.Kinds is the one Kind→Family table; the other placements declare their own here).
func canonical[T Object](kind string, newT func() T, build func(T, owner) (built, error), owns ...schema.GroupVersionKind) Entry {
	fam, ok := v1.FamilyOf(kind)
	if !ok {
		panic("kinds: " + kind + " is not a Kind of kinds/v1")
	}
	return entry(PlacementCanonical, kind, fam, newT, build, owns...)
}

// canonicalWith is canonical for a builder that reads the Context.
func canonicalWith[T Object](kind string, newT func() T, build func(T, owner, Context) (built, error), owns ...schema.GroupVersionKind) Entry {
	fam, ok := v1.FamilyOf(kind)
	if !ok {
		panic("kinds: " + kind + " is not a Kind of kinds/v1")
	}
	return entryWith(PlacementCanonical, kind, fam, newT, build, owns...)
}

// hanzoServiceSpec is the converted spec of a HanzoService whose Image points into the CR, so
// the upgrade machine's image, written through it, is what the conversion builds.
func hanzoServiceSpec(cr *v1alpha1.HanzoService) *v1.ServiceSpec {
	s := v1alpha1.ToService(cr).Spec
	s.Image = &cr.Spec.Image
	return &s
}

// withServiceSpec sets the Entry's ServiceSpec accessor.
func withServiceSpec[T Object](e Entry, spec func(T) *v1.ServiceSpec) Entry {
	e.ServiceSpec = func(cr Object) *v1.ServiceSpec {
		t, ok := cr.(T)
		if !ok {
			return nil
		}
		return spec(t)
	}
	return e
}

// entry adapts a typed builder to an Entry: it checks the CR's type and derives the owner
// (apiVersion and Kind of the CR as served, its name, namespace and uid) from the Context.
func entry[T Object](p Placement, kind string, fam Family, newT func() T, build func(T, owner) (built, error), owns ...schema.GroupVersionKind) Entry {
	return entryWith(p, kind, fam, newT, func(cr T, o owner, _ Context) (built, error) { return build(cr, o) }, owns...)
}

// withExternal marks a Kind whose status another operator owns (Entry.External).
func withExternal(owner string, e Entry) Entry {
	e.External = owner
	return e
}

// luxfiEntry sets a luxfi Kind's status fields and the inputs its build reads.
func luxfiEntry[T Object](e Entry, status func(T, Observed) StatusFields, inputs ...schema.GroupVersionKind) Entry {
	e.Inputs = inputs
	e.Status = func(cr Object, obs Observed) StatusFields {
		t, ok := cr.(T)
		if !ok {
			return StatusFields{}
		}
		return status(t, obs)
	}
	return e
}

// entryWith is entry for a builder that reads the Context's inputs.
func entryWith[T Object](p Placement, kind string, fam Family, newT func() T, build func(T, owner, Context) (built, error), owns ...schema.GroupVersionKind) Entry {
	e := Entry{Kind: kind, Family: fam, Placement: p, New: func() Object { return newT() }, Owns: owns, Workloads: workloadsOf(owns)}
	e.Build = func(cr Object, c Context) (built, error) {
		if err := c.validate(); err != nil {
			return nil, err
		}
		t, ok := cr.(T)
		if !ok {
			return nil, fmt.Errorf("build %s: got a %T", Ref{p, kind}, cr)
		}
		gvk := e.GroupVersionKind(c.APIGroup)
		o := owner{
			APIVersion: gvk.GroupVersion().String(),
			Kind:       kind,
			Name:       cr.GetName(),
			Namespace:  cr.GetNamespace(),
			UID:        cr.GetUID(),
			Group:      c.APIGroup,
		}
		return build(t, o, c)
	}
	return e
}

// workloadsOf returns the kinds among owns that can run the main workload, in owns' order.
func workloadsOf(owns []schema.GroupVersionKind) []schema.GroupKind {
	var out []schema.GroupKind
	for _, gvk := range owns {
		if slices.Contains(workloadKinds, gvk.GroupKind()) && !slices.Contains(out, gvk.GroupKind()) {
			out = append(out, gvk.GroupKind())
		}
	}
	return out
}

func newRegistry(entries ...Entry) Registry {
	r := make(Registry, len(entries))
	for _, e := range entries {
		ref := Ref{e.Placement, e.Kind}
		if _, dup := r[ref]; dup {
			panic("kinds: duplicate registry entry " + ref.String())
		}
		r[ref] = e
	}
	return r
}
