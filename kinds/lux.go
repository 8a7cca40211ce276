package kinds

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// The Lux-family node defaults (wire-contract §11). LuxRuntime and NodeFleet share the ports of
// Network's validatorTemplate.
const (
	defaultLuxRuntimeReplicas = 1
	// luxHeadlessSuffix is the headless Service suffix of the LuxNetwork lineage that
	// LuxRuntime and NodeFleet inherit (wire-contract §11, §16.6): <workload>-headless, not the
	// -hs of Datastore, MPC, Network and Base. A cutover from the Rust operator must find the
	// same names, and a StatefulSet's serviceName is immutable.
	luxHeadlessSuffix = "-headless"
	// The NodeFleet groups: <cr>-archive (one replica, full history) and <cr>-state-sync
	// (stateSync.replicas pruned replicas), as the Rust reconciler names them.
	fleetArchiveSuffix   = "-archive"
	fleetStateSyncSuffix = "-state-sync"
	// The component labels of the two NodeFleet groups.
	fleetArchiveComponent   = "archive"
	fleetStateSyncComponent = "state-sync"
	// luxDataPath is where the data claim is mounted, as for Network's validators.
	luxDataPath = "/data"
)

// luxPorts are the staking and http ports of a Lux-family node: the spec's, else 9631 and 9630.
func luxPorts(staking, http int32) []v1.ServicePort {
	if staking == 0 {
		staking = defaultStakingPort
	}
	if http == 0 {
		http = defaultNodeHTTPPort
	}
	return []v1.ServicePort{{Name: "staking", ContainerPort: staking}, {Name: "http", ContainerPort: http}}
}

// buildNodeFleet renders the two groups of a NodeFleet ("one archive serves N state-sync
// replicas"), each a StatefulSet of spec.image with ports staking (stakingPort, default 9631)
// and http (httpPort, default 9630) and spec.imagePullSecrets:
//
//   - StatefulSet <cr>-archive: one replica, component archive, archive.resources, claim data
//     from archive.storage mounted at /data, pods on archive.hostAffinity.nodeSelector; the
//     headless Service <cr>-archive-headless and the ClusterIP Service <cr>-archive.
//   - StatefulSet <cr>-state-sync: stateSync.replicas (0 when stateSync is absent; the objects
//     stay so scaling up is an edit, not a create), component state-sync, stateSync.resources,
//     storage and hostAffinity.nodeSelector likewise; the headless Service
//     <cr>-state-sync-headless only. Clients reach the fleet through the archive's ClusterIP.
//
// Each group is its own workload, so its selector is exactly name and instance of the group's
// name (<cr>-archive or <cr>-state-sync), never the CR name: two StatefulSets, or a Service of
// one group, must never select the other group's pods. Every object carries part-of <cr> and
// spec.labels; spec.annotations go on both pod templates. Not materialized: networkID,
// networkName and chains (no argument or environment convention in the contract),
// hostAffinity.nodeName (a nodeName would bypass the scheduler and so the claim's volume
// binding; a hostname label is not the node name everywhere), ancientStore, and the cache and
// stateSyncMinBlocks/lowMemory tuning. A missing image is InvalidSpec.
func buildNodeFleet(o owner, s *v1.NodeFleetSpec) ([]*unstructured.Unstructured, error) {
	if s.Image == nil || s.Image.Repository == "" {
		return nil, invalidSpec("NodeFleet %s/%s: image.repository is required", o.Namespace, o.Name)
	}
	archive := s.Archive
	if archive == nil {
		archive = &v1.ArchiveSpec{}
	}
	sync := s.StateSync
	if sync == nil {
		sync = &v1.StateSyncSpec{}
	}
	a := fleetGroup(o, s, o.Name+fleetArchiveSuffix, fleetArchiveComponent, 1, archive.Storage, archive.Resources, archive.HostAffinity)
	ss := fleetGroup(o, s, o.Name+fleetStateSyncSuffix, fleetStateSyncComponent, sync.Replicas, sync.Storage, sync.Resources, sync.HostAffinity)
	return objects(
		child{a.statefulSet(o), gvkStatefulSet},
		a.clusterIP(o, a.labels),
		a.headlessService(o, a.labels),
		child{ss.statefulSet(o), gvkStatefulSet},
		ss.headlessService(o, ss.labels),
	)
}

// fleetGroup is one NodeFleet group's StatefulSet named name.
func fleetGroup(o owner, s *v1.NodeFleetSpec, name, component string, replicas int32, storage *v1.StorageSpec, res *corev1.ResourceRequirements, aff *v1.HostAffinity) *stateful {
	img := *s.Image
	w := &stateful{
		name:             name,
		headless:         name + luxHeadlessSuffix,
		image:            &img,
		replicas:         replicas,
		ports:            luxPorts(s.StakingPort, s.HTTPPort),
		storage:          storage,
		mountPath:        luxDataPath,
		labels:           withLabels(standardLabels(name, component, o.Name, imageTag(&img)), s.Labels),
		podAnnotations:   s.Annotations,
		resources:        res,
		imagePullSecrets: secretRefs(s.ImagePullSecrets),
	}
	if aff != nil && len(aff.NodeSelector) > 0 {
		w.nodeSelector = aff.NodeSelector
	}
	return w
}
