package kinds

import (
	"errors"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
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

// buildLuxNetwork converts a LuxNetwork and builds it with the node builder under the luxfi
// identity. A refused field is an InvalidSpec Halt naming it.
func buildLuxNetwork(cr *luxnetwork.LuxNetwork, o owner) (built, error) {
	rt, t, err := luxnetwork.ToLuxRuntime(cr)
	if err != nil {
		var fe *luxnetwork.FieldError
		if errors.As(err, &fe) {
			return nil, refuse(o, fe.Field, fe.Why)
		}
		return nil, invalidSpec("%s %s/%s: %v", o.Kind, o.Namespace, o.Name, err)
	}
	id := luxNetworkIdentity(t)
	id.pdbName = o.Name + "-pdb"
	return buildLuxNode(o, &rt.Spec, id)
}

// luxDeclared is the builder of the luxfi Kinds that are served and stored but not built
// here: it says what acts on them instead.
func luxDeclared[T Object](reason v1.Phase, why string) func(T, owner) (built, error) {
	return func(_ T, o owner) (built, error) {
		return nil, &Halt{Phase: reason, Reason: ReasonNotImplemented, Message: fmt.Sprintf("%s %s/%s: %s", o.Kind, o.Namespace, o.Name, why)}
	}
}
