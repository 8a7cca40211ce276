package kinds

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// nodeRuntimeOwns are the children of the Bitcoin, Ethereum and Solana runtimes.
var nodeRuntimeOwns = []schema.GroupVersionKind{gvkStatefulSet, gvkService, gvkPDB, gvkConfigMap}

// nodeConfigHashAnnotation changes with the node's rendered configuration, so a config change
// rolls the node.
const nodeConfigHashAnnotation = "bootno.de/config-hash"

// nodeSet is the working set of one blockchain node: an optional config ConfigMap <cr>-config,
// StatefulSet <cr> of one pod (one claim per volume template, sized from the spec), Service
// <cr> on the RPC ports (when there are any), headless Service <cr>-p2p (the StatefulSet's
// serviceName, publishNotReadyAddresses, the p2p ports) and PDB <cr> (maxUnavailable 1: a
// single node may be drained, the budget only orders it).
type nodeSet struct {
	o           owner
	labels      map[string]string
	config      map[string]string // data of <cr>-config, nil for none
	containers  []corev1.Container
	volumes     []corev1.Volume
	claims      []corev1.PersistentVolumeClaim
	retention   string
	pullSecrets []string
	rpc, p2p    []corev1.ServicePort
}

func (n *nodeSet) build() (built, error) {
	sel := selectorLabels(n.o.Name)
	var children []child
	h := sha256.New()
	if n.config != nil {
		for _, k := range slices.Sorted(maps.Keys(n.config)) {
			fmt.Fprintf(h, "%s=%d:%s\n", k, len(n.config[k]), n.config[k])
		}
		children = append(children, child{&corev1.ConfigMap{ObjectMeta: n.o.meta(n.o.Name+"-config", maps.Clone(n.labels)), Data: n.config}, gvkConfigMap})
	}
	retention := appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if n.retention == "Delete" {
		retention = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: n.o.meta(n.o.Name, maps.Clone(n.labels)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To[int32](1),
			Selector:                             &metav1.LabelSelector{MatchLabels: maps.Clone(sel)},
			ServiceName:                          n.o.Name + "-p2p",
			PodManagementPolicy:                  appsv1.OrderedReadyPodManagement,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: retention, WhenScaled: retention},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(n.labels), Annotations: map[string]string{nodeConfigHashAnnotation: hex.EncodeToString(h.Sum(nil))[:32]}},
				Spec: corev1.PodSpec{
					Containers:                    withPreStop(n.containers),
					Volumes:                       n.volumes,
					ImagePullSecrets:              secretRefs(n.pullSecrets),
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](nodeGracePeriodSeconds),
				},
			},
			VolumeClaimTemplates: n.claims,
		},
	}
	children = append(children, child{sts, gvkStatefulSet})
	if len(n.rpc) > 0 {
		children = append(children, child{&corev1.Service{
			ObjectMeta: n.o.meta(n.o.Name, maps.Clone(n.labels)),
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: maps.Clone(sel), Ports: n.rpc},
		}, gvkService})
	}
	children = append(children, child{&corev1.Service{
		ObjectMeta: n.o.meta(n.o.Name+"-p2p", maps.Clone(n.labels)),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: maps.Clone(sel), Ports: n.p2p},
	}, gvkService})
	children = append(children, child{&policyv1.PodDisruptionBudget{
		ObjectMeta: n.o.meta(n.o.Name, maps.Clone(n.labels)),
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(sel)}, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}, gvkPDB})
	return objects(children...)
}

// nodeGracePeriodSeconds lets a node flush its databases on shutdown.
const nodeGracePeriodSeconds = 120

// svcPort is a Service port named name on port, TCP or UDP.
func svcPort(name string, port int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: proto}
}

// ctrPorts are the container ports of Service ports.
func ctrPorts(ports ...[]corev1.ServicePort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, ps := range ports {
		for _, p := range ps {
			out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: p.Protocol})
		}
	}
	return out
}

// nodeClaim is the claim template of volume def (or storage.volumeName), sized from storage,
// else defSize.
func nodeClaim(o owner, field string, st *v1.StorageSpec, def, defSize string) (corev1.PersistentVolumeClaim, string, error) {
	name, size := def, resource.MustParse(defSize)
	var class string
	if st != nil {
		if st.VolumeName != nil && *st.VolumeName != "" {
			name = *st.VolumeName
		}
		if !st.Size.IsZero() {
			size = st.Size
		}
		class = st.StorageClassName
		switch st.RetentionPolicy {
		case "", "Retain", "Delete":
		default:
			return corev1.PersistentVolumeClaim{}, "", invalidSpec("%s %s/%s: %s.retentionPolicy %q: want Retain or Delete", o.Kind, o.Namespace, o.Name, field, st.RetentionPolicy)
		}
	}
	c := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if class != "" {
		c.Spec.StorageClassName = ptr.To(class)
	}
	return c, name, nil
}

func retentionOf(st ...*v1.StorageSpec) string {
	for _, s := range st {
		if s != nil && s.RetentionPolicy == "Delete" {
			return "Delete"
		}
	}
	return "Retain"
}

func requireImage(o owner, field string, img *v1.ImageSpec) error {
	if img == nil || img.Repository == "" {
		return invalidSpec("%s %s/%s: %s.repository is required (no node image is assumed)", o.Kind, o.Namespace, o.Name, field)
	}
	return nil
}

func secretVolume(name, secret, key, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: path}}, DefaultMode: ptr.To[int32](0o440),
	}}}
}

func nodeResources(r ...*corev1.ResourceRequirements) corev1.ResourceRequirements {
	for _, x := range r {
		if x != nil {
			return *x.DeepCopy()
		}
	}
	return corev1.ResourceRequirements{}
}

// bitcoinNet is a Bitcoin network: bitcoind's -chain value (and config section) and its
// default p2p and RPC ports.
type bitcoinNet struct {
	chain    string
	p2p, rpc int32
	size     string
}

var bitcoinNets = map[string]bitcoinNet{
	"mainnet":  {"main", 8333, 8332, "1Ti"},
	"testnet":  {"test", 18333, 18332, "200Gi"},
	"testnet4": {"testnet4", 48333, 48332, "100Gi"},
	"signet":   {"signet", 38333, 38332, "50Gi"},
	"regtest":  {"regtest", 18444, 18443, "10Gi"},
}

// The paths of the Bitcoin node.
const (
	bitcoinConfDir  = "/etc/bitcoin"
	bitcoinAuthDir  = "/etc/bitcoin/rpc"
	bitcoinAuthKey  = "rpcauth.conf"
	bitcoinMinPrune = 550
)

var hostPort = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-fA-F:]+\](:[0-9]{1,5})?$`)

// buildBitcoin renders a bitcoind node: bitcoin.conf in <cr>-config (the chain, server, txindex,
// prune, maxconnections and, in the chain's section, port, rpcport, rpcbind and addnode), the
// RPC credentials included from the rpcAuth Secret's key rpcauth.conf (rpcauth= lines, as
// share/rpcauth/rpcauth.py prints them; never in the ConfigMap, args or env), readiness from
// bitcoin-cli getblockchaininfo over the node's own cookie.
//
//nolint:funlen // one step per spec field, in the CRD's order
func buildBitcoin(o owner, s *v1.BitcoinRuntimeSpec) (built, error) {
	if err := requireImage(o, "spec.nodeImage", s.NodeImage); err != nil {
		return nil, err
	}
	network := or(s.Network, "mainnet")
	net, ok := bitcoinNets[network]
	if !ok {
		return nil, invalidSpec("BitcoinRuntime %s/%s: network %q: want mainnet, testnet, testnet4, signet or regtest", o.Namespace, o.Name, s.Network)
	}
	if s.Indexer != nil {
		return nil, refuse(o, "spec.indexer", "no indexer is built beside a Bitcoin node (its client and wire are unspecified); run it as a Service against the node's RPC")
	}
	p2pPort, rpcPort := net.p2p, net.rpc
	if s.P2P != nil && s.P2P.Port != 0 {
		p2pPort = s.P2P.Port
	}
	if s.RPCPort != 0 {
		rpcPort = s.RPCPort
	}
	var top, section []string
	top = append(top, "chain="+net.chain, "server=1", "printtoconsole=1", "rpcallowip=0.0.0.0/0")
	if s.TxIndex {
		top = append(top, "txindex=1")
	}
	if pr := s.Pruning; pr != nil && pr.Enabled {
		if s.TxIndex {
			return nil, invalidSpec("BitcoinRuntime %s/%s: pruning.enabled with txIndex: bitcoind cannot index a pruned chain", o.Namespace, o.Name)
		}
		target := pr.TargetMB
		if target == 0 {
			target = bitcoinMinPrune
		}
		if target < bitcoinMinPrune {
			return nil, invalidSpec("BitcoinRuntime %s/%s: pruning.targetMB %d: bitcoind keeps at least %d MB", o.Namespace, o.Name, target, bitcoinMinPrune)
		}
		top = append(top, fmt.Sprintf("prune=%d", target))
	} else if pr != nil && pr.TargetMB != 0 {
		return nil, invalidSpec("BitcoinRuntime %s/%s: pruning.targetMB without pruning.enabled", o.Namespace, o.Name)
	}
	section = append(section, fmt.Sprintf("port=%d", p2pPort), fmt.Sprintf("rpcport=%d", rpcPort), "bind=0.0.0.0", "rpcbind=0.0.0.0")
	if p := s.P2P; p != nil {
		if p.MaxConnections != 0 {
			top = append(top, fmt.Sprintf("maxconnections=%d", p.MaxConnections))
		}
		for i, a := range p.AddNodes {
			if !hostPort.MatchString(a) {
				return nil, invalidSpec("BitcoinRuntime %s/%s: p2p.addNodes[%d] %q is not host[:port]", o.Namespace, o.Name, i, a)
			}
			section = append(section, "addnode="+a)
		}
	}
	claim, data, err := nodeClaim(o, "spec.storage", s.Storage, defaultVolumeName, net.size)
	if err != nil {
		return nil, err
	}
	mounts := []corev1.VolumeMount{{Name: data, MountPath: luxDataPath}, {Name: "config", MountPath: bitcoinConfDir + "/conf", ReadOnly: true}}
	volumes := []corev1.Volume{configMapVolume("config", o.Name+"-config", "bitcoin.conf", "bitcoin.conf", false)}
	if a := s.RPCAuth; a != nil {
		if a.Name == "" {
			return nil, invalidSpec("BitcoinRuntime %s/%s: rpcAuth.name is required", o.Namespace, o.Name)
		}
		if a.Namespace != "" && a.Namespace != o.Namespace {
			return nil, refuse(o, "spec.rpcAuth.namespace", "a pod mounts Secrets of its own namespace only")
		}
		top = append(top, "includeconf="+bitcoinAuthDir+"/"+bitcoinAuthKey)
		volumes = append(volumes, secretVolume("rpc-auth", a.Name, bitcoinAuthKey, bitcoinAuthKey))
		mounts = append(mounts, corev1.VolumeMount{Name: "rpc-auth", MountPath: bitcoinAuthDir, ReadOnly: true})
	}
	conf := strings.Join(top, "\n") + "\n\n[" + net.chain + "]\n" + strings.Join(section, "\n") + "\n"
	confPath := bitcoinConfDir + "/conf/bitcoin.conf"
	p2p := []corev1.ServicePort{svcPort("p2p", p2pPort, corev1.ProtocolTCP)}
	rpc := []corev1.ServicePort{svcPort("rpc", rpcPort, corev1.ProtocolTCP)}
	c := corev1.Container{
		Name: "bitcoind", Image: imageRef(s.NodeImage), ImagePullPolicy: pullPolicy(s.NodeImage),
		Command:      []string{"bitcoind"},
		Args:         []string{"-datadir=" + luxDataPath, "-conf=" + confPath},
		Ports:        ctrPorts(p2p, rpc),
		VolumeMounts: mounts,
		Resources:    nodeResources(s.Resources),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"bitcoin-cli", "-datadir=" + luxDataPath, "-conf=" + confPath, "getblockchaininfo"}}},
			PeriodSeconds:  defaultProbePeriod,
			TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: 3,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("p2p")}},
			PeriodSeconds: 30, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: 5, InitialDelaySeconds: 60,
		},
	}
	n := &nodeSet{o: o, labels: standardLabels(o.Name, "bitcoin", "", imageTag(s.NodeImage)), config: map[string]string{"bitcoin.conf": conf},
		containers: []corev1.Container{c}, volumes: volumes, claims: []corev1.PersistentVolumeClaim{claim},
		retention: retentionOf(s.Storage), pullSecrets: s.ImagePullSecrets, rpc: rpc, p2p: p2p}
	n.labels[LabelNetwork] = network
	return n.build()
}

// LabelNetwork is the network a node runtime joins.
const LabelNetwork = "bootno.de/network"

// The Ethereum pair's defaults and paths.
const (
	ethJWTDir      = "/jwt"
	ethJWTKey      = "jwt.hex"
	ethELP2P       = 30303
	ethCLP2P       = 9000
	ethDefaultEL   = 8545
	ethDefaultCL   = 5052
	ethDefaultAuth = 8551
)

var (
	ethNetworks  = []string{"mainnet", "sepolia", "holesky", "hoodi"}
	ethAddress   = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	ethElSize    = map[bool]string{true: "2Ti", false: "500Gi"}
	ethClSize    = map[bool]string{true: "300Gi", false: "100Gi"}
	ethCheckSync = []string{"--checkpoint-sync-url", "--allow-insecure-genesis-sync"}
)

// buildEthereum renders an execution + consensus pair in one pod (geth and a lighthouse beacon
// node, the clients this operator renders flags for): the engine API on localhost, both
// authenticated with the JWT from the jwtSecret Secret's key jwt.hex (a file, never an arg or
// env value), one claim each, the EL JSON-RPC and the beacon API on Service <cr>, the p2p ports
// (TCP and UDP) on <cr>-p2p, the beacon node's readiness from its own /eth/v1/node/health.
//
//nolint:funlen // one step per field
func buildEthereum(o owner, s *v1.EthereumRuntimeSpec) (built, error) {
	network := or(s.Network, "mainnet")
	if !slices.Contains(ethNetworks, network) {
		return nil, invalidSpec("EthereumRuntime %s/%s: network %q: want one of %s", o.Namespace, o.Name, s.Network, strings.Join(ethNetworks, ", "))
	}
	el, cl := s.Execution, s.Consensus
	if el == nil || cl == nil {
		return nil, invalidSpec("EthereumRuntime %s/%s: execution and consensus are both required (a post-merge node is the pair)", o.Namespace, o.Name)
	}
	if err := requireImage(o, "spec.execution.image", el.Image); err != nil {
		return nil, err
	}
	if err := requireImage(o, "spec.consensus.image", cl.Image); err != nil {
		return nil, err
	}
	if c := or(el.Client, "geth"); c != "geth" {
		return nil, refuse(o, "spec.execution.client "+c, "only geth's flags are rendered")
	}
	if c := or(cl.Client, "lighthouse"); c != "lighthouse" {
		return nil, refuse(o, "spec.consensus.client "+c, "only lighthouse's flags are rendered")
	}
	if s.JWTSecret == "" {
		return nil, invalidSpec("EthereumRuntime %s/%s: jwtSecret is required: it names the Secret (key %s) both clients authenticate the engine API with", o.Namespace, o.Name, ethJWTKey)
	}
	if !slices.ContainsFunc(cl.ExtraArgs, func(a string) bool {
		return slices.ContainsFunc(ethCheckSync, func(f string) bool { return a == f || strings.HasPrefix(a, f+"=") })
	}) {
		return nil, invalidSpec("EthereumRuntime %s/%s: consensus.extraArgs needs --checkpoint-sync-url=<trusted beacon API> (lighthouse will not sync from genesis without --allow-insecure-genesis-sync)", o.Namespace, o.Name)
	}
	elRPC, clRPC, auth := s.ELRPCPort, s.CLRPCPort, s.AuthRPCPort
	if elRPC == 0 {
		elRPC = ethDefaultEL
	}
	if clRPC == 0 {
		clRPC = ethDefaultCL
	}
	if auth == 0 {
		auth = ethDefaultAuth
	}
	main := network == "mainnet"
	elClaim, elVol, err := nodeClaim(o, "spec.execution.storage", el.Storage, "execution", ethElSize[main])
	if err != nil {
		return nil, err
	}
	clClaim, clVol, err := nodeClaim(o, "spec.consensus.storage", cl.Storage, "consensus", ethClSize[main])
	if err != nil {
		return nil, err
	}
	if elVol == clVol {
		return nil, invalidSpec("EthereumRuntime %s/%s: execution and consensus storage share volumeName %q", o.Namespace, o.Name, elVol)
	}
	jwt := corev1.VolumeMount{Name: "jwt", MountPath: ethJWTDir, ReadOnly: true}
	jwtFile := ethJWTDir + "/" + ethJWTKey
	gethArgs := []string{
		"--" + network, "--datadir=/data/execution",
		"--http", "--http.addr=0.0.0.0", fmt.Sprintf("--http.port=%d", elRPC), "--http.vhosts=*", "--http.api=eth,net,web3",
		"--authrpc.addr=127.0.0.1", fmt.Sprintf("--authrpc.port=%d", auth), "--authrpc.jwtsecret=" + jwtFile,
		fmt.Sprintf("--port=%d", ethELP2P),
	}
	bnArgs := []string{
		"bn", "--network=" + network, "--datadir=/data/consensus",
		"--http", "--http-address=0.0.0.0", fmt.Sprintf("--http-port=%d", clRPC),
		fmt.Sprintf("--execution-endpoint=http://127.0.0.1:%d", auth), "--execution-jwt=" + jwtFile,
		fmt.Sprintf("--port=%d", ethCLP2P),
	}
	if s.FeeRecipient != "" {
		if !ethAddress.MatchString(s.FeeRecipient) {
			return nil, invalidSpec("EthereumRuntime %s/%s: feeRecipient %q is not an address (0x and 40 hex digits)", o.Namespace, o.Name, s.FeeRecipient)
		}
		bnArgs = append(bnArgs, "--suggested-fee-recipient="+s.FeeRecipient)
	}
	elP2P := []corev1.ServicePort{svcPort("el-p2p", ethELP2P, corev1.ProtocolTCP), svcPort("el-disc", ethELP2P, corev1.ProtocolUDP)}
	clP2P := []corev1.ServicePort{svcPort("cl-p2p", ethCLP2P, corev1.ProtocolTCP), svcPort("cl-disc", ethCLP2P, corev1.ProtocolUDP)}
	elR := []corev1.ServicePort{svcPort("el-rpc", elRPC, corev1.ProtocolTCP)}
	clR := []corev1.ServicePort{svcPort("cl-rpc", clRPC, corev1.ProtocolTCP)}
	geth := corev1.Container{
		Name: "execution", Image: imageRef(el.Image), ImagePullPolicy: pullPolicy(el.Image),
		Command: []string{"geth"}, Args: append(gethArgs, el.ExtraArgs...),
		Ports:        ctrPorts(elR, elP2P),
		VolumeMounts: []corev1.VolumeMount{{Name: elVol, MountPath: "/data/execution"}, jwt},
		Resources:    nodeResources(el.Resources, s.Resources),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("el-rpc")}},
			PeriodSeconds: defaultProbePeriod, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: 3,
		},
	}
	bn := corev1.Container{
		Name: "consensus", Image: imageRef(cl.Image), ImagePullPolicy: pullPolicy(cl.Image),
		Command: []string{"lighthouse"}, Args: append(bnArgs, cl.ExtraArgs...),
		Ports:        ctrPorts(clR, clP2P),
		VolumeMounts: []corev1.VolumeMount{{Name: clVol, MountPath: "/data/consensus"}, jwt},
		Resources:    nodeResources(cl.Resources, s.Resources),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/eth/v1/node/health", Port: intstr.FromString("cl-rpc")}},
			PeriodSeconds: defaultProbePeriod, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: 3,
		},
	}
	n := &nodeSet{o: o, labels: standardLabels(o.Name, "ethereum", "", ""),
		containers: []corev1.Container{geth, bn}, volumes: []corev1.Volume{secretVolume("jwt", s.JWTSecret, ethJWTKey, ethJWTKey)},
		claims: []corev1.PersistentVolumeClaim{elClaim, clClaim}, retention: retentionOf(el.Storage, cl.Storage),
		pullSecrets: s.ImagePullSecrets, rpc: append(elR, clR...), p2p: append(elP2P, clP2P...)}
	n.labels[LabelNetwork] = network
	return n.build()
}

// solanaCluster is a Solana cluster's default entry points and genesis hash.
type solanaCluster struct {
	entryPoints []string
	genesisHash string
}

var solanaClusters = map[string]solanaCluster{
	"mainnet-beta": {[]string{"entrypoint.mainnet-beta.solana.com:8001", "entrypoint2.mainnet-beta.solana.com:8001", "entrypoint3.mainnet-beta.solana.com:8001"}, "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"},
	"testnet":      {[]string{"entrypoint.testnet.solana.com:8001", "entrypoint2.testnet.solana.com:8001"}, "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"},
	"devnet":       {[]string{"entrypoint.devnet.solana.com:8001"}, "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"},
}

// The Solana node's defaults and paths.
const (
	solanaIdentityDir  = "/identity"
	solanaIdentityKey  = "identity.json"
	solanaDefaultRPC   = 8899
	solanaDefaultGosip = 8001
	solanaPortRange    = 20 // the dynamic ports above the gossip port
)

var base58Key = regexp.MustCompile(`^[1-9A-HJ-NP-Za-km-z]{32,44}$`)

// buildSolana renders an agave-validator: the identity keypair from the identityKeypair
// Secret's key identity.json (a file), the cluster's entry points and expected genesis hash
// (or the spec's entry points), voting with voteAccount or --no-voting without, the ledger (and
// snapshots, when snapshot.storage is set) on their own claims, the full RPC API on Service
// <cr> with readiness from the node's GET /health when rpcEnabled (else a private RPC and
// readiness from the gossip port), the gossip port and the dynamic range on <cr>-p2p.
//
//nolint:funlen // one step per field
func buildSolana(o owner, s *v1.SolanaRuntimeSpec) (built, error) {
	if err := requireImage(o, "spec.nodeImage", s.NodeImage); err != nil {
		return nil, err
	}
	cluster := or(s.Cluster, "mainnet-beta")
	cl, ok := solanaClusters[cluster]
	if !ok {
		return nil, invalidSpec("SolanaRuntime %s/%s: cluster %q: want mainnet-beta, testnet or devnet", o.Namespace, o.Name, s.Cluster)
	}
	if s.IdentityKeypair == "" {
		return nil, invalidSpec("SolanaRuntime %s/%s: identityKeypair is required: it names the Secret (key %s) the node's identity is read from", o.Namespace, o.Name, solanaIdentityKey)
	}
	if s.Snapshot != nil && s.Snapshot.URL != "" {
		return nil, refuse(o, "spec.snapshot.url", "the node fetches its snapshot from the cluster's validators and verifies it; an archive by URL is never unpacked unverified")
	}
	rpcPort, gossip := s.RPCPort, s.GossipPort
	if rpcPort == 0 {
		rpcPort = solanaDefaultRPC
	}
	if gossip == 0 {
		gossip = solanaDefaultGosip
	}
	if int(gossip)+solanaPortRange > 65535 {
		return nil, invalidSpec("SolanaRuntime %s/%s: gossipPort %d leaves no room for the %d dynamic ports above it", o.Namespace, o.Name, gossip, solanaPortRange)
	}
	if rpcPort > gossip && rpcPort <= gossip+solanaPortRange {
		return nil, invalidSpec("SolanaRuntime %s/%s: rpcPort %d is in the dynamic port range %d-%d", o.Namespace, o.Name, rpcPort, gossip+1, gossip+solanaPortRange)
	}
	entry := cl.entryPoints
	if len(s.EntryPoints) > 0 {
		entry = s.EntryPoints
	}
	args := []string{
		"--identity=" + solanaIdentityDir + "/" + solanaIdentityKey,
		"--ledger=/ledger", "--limit-ledger-size",
		"--expected-genesis-hash=" + cl.genesisHash,
		fmt.Sprintf("--gossip-port=%d", gossip),
		fmt.Sprintf("--dynamic-port-range=%d-%d", gossip+1, gossip+solanaPortRange),
		fmt.Sprintf("--rpc-port=%d", rpcPort),
		"--log=-",
	}
	for i, e := range entry {
		if !hostPort.MatchString(e) {
			return nil, invalidSpec("SolanaRuntime %s/%s: entryPoints[%d] %q is not host[:port]", o.Namespace, o.Name, i, e)
		}
		args = append(args, "--entrypoint="+e)
	}
	if s.VoteAccount != "" {
		if !base58Key.MatchString(s.VoteAccount) {
			return nil, invalidSpec("SolanaRuntime %s/%s: voteAccount %q is not a base58 public key", o.Namespace, o.Name, s.VoteAccount)
		}
		args = append(args, "--vote-account="+s.VoteAccount)
	} else {
		args = append(args, "--no-voting")
	}
	if s.RPCEnabled {
		args = append(args, "--full-rpc-api", "--rpc-bind-address=0.0.0.0")
	} else {
		args = append(args, "--private-rpc")
	}
	ledger, ledgerVol, err := nodeClaim(o, "spec.ledger", s.Ledger, "ledger", "2Ti")
	if err != nil {
		return nil, err
	}
	claims := []corev1.PersistentVolumeClaim{ledger}
	mounts := []corev1.VolumeMount{{Name: ledgerVol, MountPath: "/ledger"}, {Name: "identity", MountPath: solanaIdentityDir, ReadOnly: true}}
	retention := retentionOf(s.Ledger)
	if s.Snapshot != nil && s.Snapshot.Storage != nil {
		snap, snapVol, err := nodeClaim(o, "spec.snapshot.storage", s.Snapshot.Storage, "snapshots", "500Gi")
		if err != nil {
			return nil, err
		}
		if snapVol == ledgerVol {
			return nil, invalidSpec("SolanaRuntime %s/%s: ledger and snapshot.storage share volumeName %q", o.Namespace, o.Name, snapVol)
		}
		claims = append(claims, snap)
		mounts = append(mounts, corev1.VolumeMount{Name: snapVol, MountPath: "/snapshots"})
		args = append(args, "--snapshots=/snapshots")
		retention = retentionOf(s.Ledger, s.Snapshot.Storage)
	} else if s.Snapshot != nil {
		return nil, invalidSpec("SolanaRuntime %s/%s: snapshot names neither url nor storage", o.Namespace, o.Name)
	}
	p2p := []corev1.ServicePort{svcPort("gossip", gossip, corev1.ProtocolTCP), svcPort("gossip-udp", gossip, corev1.ProtocolUDP)}
	for i := int32(1); i <= solanaPortRange; i++ {
		p2p = append(p2p, svcPort(fmt.Sprintf("dyn-%d", i), gossip+i, corev1.ProtocolUDP))
	}
	rpc := []corev1.ServicePort{svcPort("rpc", rpcPort, corev1.ProtocolTCP)}
	ready := &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("gossip")}},
		PeriodSeconds: defaultProbePeriod, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: 3,
	}
	ports := ctrPorts(p2p)
	if s.RPCEnabled {
		ready.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("rpc")}}
		ports = ctrPorts(rpc, p2p)
	} else {
		rpc = nil
	}
	c := corev1.Container{
		Name: "validator", Image: imageRef(s.NodeImage), ImagePullPolicy: pullPolicy(s.NodeImage),
		Command: []string{"agave-validator"}, Args: append(args, s.ExtraArgs...),
		Ports: ports, VolumeMounts: mounts, Resources: nodeResources(s.Resources), ReadinessProbe: ready,
	}
	n := &nodeSet{o: o, labels: standardLabels(o.Name, "solana", "", imageTag(s.NodeImage)),
		containers: []corev1.Container{c}, volumes: []corev1.Volume{secretVolume("identity", s.IdentityKeypair, solanaIdentityKey, solanaIdentityKey)},
		claims: claims, retention: retention, pullSecrets: s.ImagePullSecrets, rpc: rpc, p2p: p2p}
	n.labels[LabelNetwork] = cluster
	return n.build()
}
