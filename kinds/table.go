package kinds

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds/hip"
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
		canon  = PlacementCanonical
		legacy = PlacementV1alpha1
		hipera = PlacementHIP
		uni    = FamilyUniverse
		kms    = FamilyKMS
		chain  = FamilyChain
	)
	return newRegistry(
		// The Service shape: Service and the Service-backed facades.
		entry(canon, "Service", uni, func() *v1.Service { return &v1.Service{} }, func(cr *v1.Service, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "IAM", uni, func() *v1.IAM { return &v1.IAM{} }, func(cr *v1.IAM, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "KMS", uni, func() *v1.KMS { return &v1.KMS{} }, func(cr *v1.KMS, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "LLM", uni, func() *v1.LLM { return &v1.LLM{} }, func(cr *v1.LLM, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "Queue", uni, func() *v1.Queue { return &v1.Queue{} }, func(cr *v1.Queue, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "Observability", uni, func() *v1.Observability { return &v1.Observability{} }, func(cr *v1.Observability, o owner) ([]*unstructured.Unstructured, error) {
			return buildService(o, &cr.Spec)
		}, serviceOwns...),
		entry(canon, "Function", uni, func() *v1.Function { return &v1.Function{} }, func(cr *v1.Function, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "Indexer", chain, func() *v1.Indexer { return &v1.Indexer{} }, func(cr *v1.Indexer, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "Explorer", chain, func() *v1.Explorer { return &v1.Explorer{} }, func(cr *v1.Explorer, o owner) ([]*unstructured.Unstructured, error) { return buildService(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "SPA", uni, func() *v1.SPA { return &v1.SPA{} }, func(cr *v1.SPA, o owner) ([]*unstructured.Unstructured, error) { return buildSPA(o, &cr.Spec) }, serviceOwns...),
		entry(canon, "App", uni, func() *v1.App { return &v1.App{} }, buildApp, append(append([]schema.GroupVersionKind{}, serviceOwns...), gvkStatefulSet)...),

		// The datastore shape: the Kind (or field) fixes the engine, never spec.type.
		entry(canon, "SQL", uni, func() *v1.SQL { return &v1.SQL{} }, func(cr *v1.SQL, o owner) ([]*unstructured.Unstructured, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EnginePostgreSQL, cr.Labels)
		}, datastoreOwns...),
		entry(canon, "KV", uni, func() *v1.KV { return &v1.KV{} }, func(cr *v1.KV, o owner) ([]*unstructured.Unstructured, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineValkey, cr.Labels)
		}, datastoreOwns...),
		entry(canon, "DocDB", uni, func() *v1.DocDB { return &v1.DocDB{} }, func(cr *v1.DocDB, o owner) ([]*unstructured.Unstructured, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineDocDB, cr.Labels)
		}, datastoreOwns...),
		entry(canon, "S3", uni, func() *v1.S3 { return &v1.S3{} }, func(cr *v1.S3, o owner) ([]*unstructured.Unstructured, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, v1.EngineS3, cr.Labels)
		}, datastoreOwns...),
		entry(canon, "Datastore", uni, func() *v1.Datastore { return &v1.Datastore{} }, func(cr *v1.Datastore, o owner) ([]*unstructured.Unstructured, error) {
			return buildDatastore(o, &cr.Spec.DBSpec, cr.Engine(), cr.Labels)
		}, datastoreOwns...),
		entry(canon, "ManagedDatabase", uni, func() *v1.ManagedDatabase { return &v1.ManagedDatabase{} }, func(cr *v1.ManagedDatabase, o owner) ([]*unstructured.Unstructured, error) {
			engine := cr.Spec.Engine
			if engine == "" {
				engine = v1.EnginePostgreSQL
			}
			return buildDatastore(o, &cr.Spec.DBSpec, engine, cr.Labels)
		}, datastoreOwns...),

		// The edge.
		entry(canon, "Ingress", uni, func() *v1.Ingress { return &v1.Ingress{} }, func(cr *v1.Ingress, o owner) ([]*unstructured.Unstructured, error) {
			return buildIngressKind(o, &cr.Spec)
		}, gvkIngress),
		entry(canon, "Gateway", uni, func() *v1.Gateway { return &v1.Gateway{} }, func(cr *v1.Gateway, o owner) ([]*unstructured.Unstructured, error) { return buildGateway(o, &cr.Spec) }, append([]schema.GroupVersionKind{gvkConfigMap}, deploymentSvcOwns...)...),
		entry(canon, "DNS", uni, func() *v1.DNS { return &v1.DNS{} }, func(cr *v1.DNS, o owner) ([]*unstructured.Unstructured, error) { return buildDNS(o, &cr.Spec) }, deploymentSvcOwns...),
		entry(canon, "Base", uni, func() *v1.Base { return &v1.Base{} }, func(cr *v1.Base, o owner) ([]*unstructured.Unstructured, error) { return buildBase(o, &cr.Spec) }, statefulOwns...),

		// The chain family.
		entry(canon, "MPC", chain, func() *v1.MPC { return &v1.MPC{} }, func(cr *v1.MPC, o owner) ([]*unstructured.Unstructured, error) { return buildMPC(o, &cr.Spec) }, statefulOwns...),
		entry(canon, "Network", chain, func() *v1.Network { return &v1.Network{} }, func(cr *v1.Network, o owner) ([]*unstructured.Unstructured, error) { return buildNetwork(o, &cr.Spec) }, statefulOwns...),
		entry(canon, "Chain", chain, func() *v1.Chain { return &v1.Chain{} }, nothing[*v1.Chain]),
		entry(canon, "Validator", chain, func() *v1.Validator { return &v1.Validator{} }, nothing[*v1.Validator]),
		entry(canon, "LuxRuntime", chain, func() *v1.LuxRuntime { return &v1.LuxRuntime{} }, func(_ *v1.LuxRuntime, o owner) ([]*unstructured.Unstructured, error) { return nil, notImplemented(o) }),
		entry(canon, "NodeFleet", chain, func() *v1.NodeFleet { return &v1.NodeFleet{} }, func(_ *v1.NodeFleet, o owner) ([]*unstructured.Unstructured, error) { return nil, notImplemented(o) }),
		entry(canon, "BitcoinRuntime", chain, func() *v1.BitcoinRuntime { return &v1.BitcoinRuntime{} }, func(_ *v1.BitcoinRuntime, o owner) ([]*unstructured.Unstructured, error) {
			return nil, notImplemented(o)
		}),
		entry(canon, "EthereumRuntime", chain, func() *v1.EthereumRuntime { return &v1.EthereumRuntime{} }, func(_ *v1.EthereumRuntime, o owner) ([]*unstructured.Unstructured, error) {
			return nil, notImplemented(o)
		}),
		entry(canon, "SolanaRuntime", chain, func() *v1.SolanaRuntime { return &v1.SolanaRuntime{} }, func(_ *v1.SolanaRuntime, o owner) ([]*unstructured.Unstructured, error) {
			return nil, notImplemented(o)
		}),

		// Kinds whose loops act outside the cluster's object graph: no children.
		entry(canon, "Static", uni, func() *v1.Static { return &v1.Static{} }, nothing[*v1.Static]),
		entry(canon, "AgentDeployment", uni, func() *v1.AgentDeployment { return &v1.AgentDeployment{} }, nothing[*v1.AgentDeployment]),
		entry(canon, "ImageUpdate", uni, func() *v1.ImageUpdate { return &v1.ImageUpdate{} }, nothing[*v1.ImageUpdate]),
		entry(canon, "KMSSecret", kms, func() *v1.KMSSecret { return &v1.KMSSecret{} }, nothing[*v1.KMSSecret]),

		// Legacy v1alpha1 Kinds, owned as themselves, built through their v1 conversion.
		entry(legacy, "HanzoService", uni, func() *v1alpha1.HanzoService { return &v1alpha1.HanzoService{} }, func(cr *v1alpha1.HanzoService, o owner) ([]*unstructured.Unstructured, error) {
			return buildService(o, &v1alpha1.ToService(cr).Spec)
		}, serviceOwns...),
		entry(legacy, "HanzoDatastore", uni, func() *v1alpha1.HanzoDatastore { return &v1alpha1.HanzoDatastore{} }, func(cr *v1alpha1.HanzoDatastore, o owner) ([]*unstructured.Unstructured, error) {
			ds := v1alpha1.ToDatastore(cr)
			return buildDatastore(o, &ds.Spec.DBSpec, ds.Engine(), ds.Labels)
		}, datastoreOwns...),
		entry(legacy, "HanzoDNS", uni, func() *v1alpha1.HanzoDNS { return &v1alpha1.HanzoDNS{} }, func(cr *v1alpha1.HanzoDNS, o owner) ([]*unstructured.Unstructured, error) {
			return buildDNS(o, &v1alpha1.ToDNS(cr).Spec)
		}, deploymentSvcOwns...),

		// HIP-era placements at <universe>/v1, built through their canonical conversion.
		entry(hipera, "MPC", uni, func() *hip.MPC { return &hip.MPC{} }, func(cr *hip.MPC, o owner) ([]*unstructured.Unstructured, error) {
			return buildMPC(o, &hip.ToMPC(cr).Spec)
		}, statefulOwns...),
		entry(hipera, "Network", uni, func() *hip.Network { return &hip.Network{} }, func(cr *hip.Network, o owner) ([]*unstructured.Unstructured, error) {
			n, err := hip.ToNetwork(cr)
			if err != nil {
				return nil, invalidSpec("%v", err)
			}
			return buildNetwork(o, &n.Spec)
		}, statefulOwns...),
		entry(hipera, "Indexer", uni, func() *hip.Indexer { return &hip.Indexer{} }, func(cr *hip.Indexer, o owner) ([]*unstructured.Unstructured, error) {
			return buildService(o, &hip.ToIndexer(cr).Spec)
		}, serviceOwns...),
		entry(hipera, "Explorer", uni, func() *hip.Explorer { return &hip.Explorer{} }, func(cr *hip.Explorer, o owner) ([]*unstructured.Unstructured, error) {
			return buildService(o, &hip.ToExplorer(cr).Spec)
		}, serviceOwns...),
		entry(hipera, "Chain", uni, func() *hip.Chain { return &hip.Chain{} }, nothing[*hip.Chain]),
		entry(hipera, "Validator", uni, func() *hip.Validator { return &hip.Validator{} }, nothing[*hip.Validator]),
		entry(hipera, "LuxRuntime", uni, func() *hip.LuxRuntime { return &hip.LuxRuntime{} }, func(_ *hip.LuxRuntime, o owner) ([]*unstructured.Unstructured, error) { return nil, notImplemented(o) }),
		entry(hipera, "NodeFleet", uni, func() *hip.NodeFleet { return &hip.NodeFleet{} }, func(_ *hip.NodeFleet, o owner) ([]*unstructured.Unstructured, error) { return nil, notImplemented(o) }),
		entry(hipera, "Subnet", uni, func() *hip.Subnet { return &hip.Subnet{} }, nothing[*hip.Subnet]),
	)
}

// entry adapts a typed builder to an Entry: it checks the CR's type and derives the owner
// (apiVersion and Kind of the CR as served, its name, namespace and uid) from the Context.
func entry[T Object](p Placement, kind string, fam Family, newT func() T, build func(T, owner) ([]*unstructured.Unstructured, error), owns ...schema.GroupVersionKind) Entry {
	e := Entry{Kind: kind, Family: fam, Placement: p, New: func() Object { return newT() }, Owns: owns}
	e.Build = func(cr Object, c Context) ([]*unstructured.Unstructured, error) {
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
		return build(t, o)
	}
	return e
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
