package kinds

import (
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds/luxnetwork"
)

// PlacementLuxNetwork is the luxfi operator's lux.network/v1alpha1 (and
// secrets.lux.network/v1alpha1 KMSSecret) Kinds, served from its own CRDs.
const PlacementLuxNetwork Placement = "lux.network"

// gvkLuxKMSSecret is the luxfi staking KMSSecret child.
var (
	gvkLuxKMSSecret = luxnetwork.SecretsGroupVersion.WithKind("KMSSecret")
	luxNetworkOwns  = append(append([]schema.GroupVersionKind{}, luxNodeOwns...), gvkLuxKMSSecret)
)

// luxNetworkIdentity is the luxfi operator's naming (luxnetwork.md §3-4): the three common
// labels as selector and labels, container luxd, PDB <cr>-pdb, no default storage class, the
// RPC Service's type and annotations, and the generated ConfigMaps.
func luxNetworkIdentity(t *luxnetwork.Takeover) luxIdentity {
	id := luxIdentity{
		container:           luxnetwork.ContainerName,
		labels:              maps.Clone(t.Labels),
		selector:            maps.Clone(t.Labels),
		serviceType:         t.ServiceType,
		serviceAnnotations:  t.ServiceAnnotations,
		podSecurity:         t.PodSecurity,
		perPodServices:      t.PerPodServices,
		snapshotAccessKey:   t.SnapshotAccessKey,
		snapshotMaxRetained: t.SnapshotMaxRetained,
		snapshotRLP:         t.SnapshotRLP,
		seedMarker:          t.SeedMarker,
	}
	for i := range t.ConfigMaps {
		id.configMaps = append(id.configMaps, t.ConfigMaps[i].DeepCopy())
	}
	if t.KMSSecret != nil {
		spec := t.KMSSecret
		id.kms = func(o owner, _ string, labels map[string]string) (*unstructured.Unstructured, error) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": deepCopyJSON(spec)}}
			u.SetGroupVersionKind(gvkLuxKMSSecret)
			u.SetName(o.Name + "-staking-kms-sync")
			u.SetNamespace(o.Namespace)
			u.SetLabels(maps.Clone(labels))
			u.SetOwnerReferences(o.ref())
			return u, nil
		}
	}
	return id
}

func deepCopyJSON(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// buildLuxNetwork converts a LuxNetwork, with the LuxChains naming it (Context.Inputs), and
// builds it with the node builder under the luxfi identity. A refused field is an
// InvalidSpec Halt naming it.
func buildLuxNetwork(in *luxnetwork.LuxNetwork, o owner, c Context) (built, error) {
	cr, chainConfigs := luxNetworkChains(in, c)
	rt, t, err := luxnetwork.ToLuxRuntime(cr)
	if err != nil {
		var fe *luxnetwork.FieldError
		if errors.As(err, &fe) {
			return nil, refuse(o, fe.Field, fe.Why)
		}
		return nil, invalidSpec("%s %s/%s: %v", o.Kind, o.Namespace, o.Name, err)
	}
	// A LuxChain's vm.chainConfig is its chain's config.json (beside the network's
	// chainUpgradeConfig, when set), in a ConfigMap of its own.
	var upgrade string
	for i := range t.ConfigMaps {
		if t.ConfigMaps[i].Name == o.Name+"-chains" {
			upgrade = t.ConfigMaps[i].Data["upgrade.json"]
		}
	}
	for _, cc := range chainConfigs {
		cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cc.configMap}, Data: map[string]string{"config.json": cc.config}}
		if upgrade != "" {
			cm.Data["upgrade.json"] = upgrade
		}
		t.ConfigMaps = append(t.ConfigMaps, cm)
		for i := range rt.Spec.Chains {
			if rt.Spec.Chains[i].ChainID == cc.id {
				rt.Spec.Chains[i].GenesisConfigMap = cc.configMap
			}
		}
	}
	id := luxNetworkIdentity(t)
	id.pdbName = o.Name + "-pdb"
	// The luxfi CRs name their seed archive by URL alone (luxnetwork.md §4.2): it is verified
	// against the checksum published beside it, else unpacked only where the shell reports it.
	id.seedPublished, id.seedUnverified = true, c.AllowUnverifiedSeed
	return buildLuxNode(o, &rt.Spec, id)
}
