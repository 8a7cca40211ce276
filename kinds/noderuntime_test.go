package kinds_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// nodeCase is one field change of a node runtime spec: halt marks a refused field.
type nodeCase[S any] struct {
	change func(*S)
	halt   bool
}

// noFieldIgnored checks that every field of spec type S has a case, and that each case either
// changes the built objects or is refused with a Halt.
func noFieldIgnored[S any](t *testing.T, base func() S, build func(S) ([]*unstructured.Unstructured, error), cases map[string]nodeCase[S]) {
	t.Helper()
	want, err := build(base())
	if err != nil {
		t.Fatalf("the production spec must build: %v", err)
	}
	var zero S
	paths := specPaths(reflect.TypeOf(zero), "")
	for _, p := range paths {
		if _, ok := cases[p]; !ok {
			t.Errorf("spec.%s has no case: materialize it or refuse it, and add a change here", p)
		}
	}
	for path, c := range cases {
		t.Run(path, func(t *testing.T) {
			if !slices.Contains(paths, path) {
				t.Fatalf("no field spec.%s", path)
			}
			s := base()
			c.change(&s)
			got, err := build(s)
			h, halted := kinds.AsHalt(err)
			switch {
			case c.halt && !halted:
				t.Fatalf("a refused field built (err %v)", err)
			case c.halt:
				if field := strings.Split(path, ".")[0]; !strings.Contains(h.Message, "spec."+field) {
					t.Errorf("the refusal does not name spec.%s: %s", path, h.Message)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if reflect.DeepEqual(want, got) {
				t.Errorf("changing spec.%s changed no object: the field is ignored", path)
			}
		})
	}
}

// secretOnlyMounted: the named Secret appears in the objects only as a Secret volume, never
// in a ConfigMap, an argument or an env value.
func secretOnlyMounted(t *testing.T, objs []*unstructured.Unstructured, secret string) {
	t.Helper()
	mounted := false
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			b, _ := yaml.Marshal(o.Object["data"])
			if strings.Contains(string(b), secret) {
				t.Errorf("ConfigMap %s names Secret %s", o.GetName(), secret)
			}
		case "StatefulSet":
			pod := podSpec(t, o)
			for _, v := range pod.Volumes {
				if v.Secret != nil && v.Secret.SecretName == secret {
					mounted = true
				}
			}
			for _, c := range pod.Containers {
				for _, a := range append(slices.Clone(c.Args), c.Command...) {
					if strings.Contains(a, secret) {
						t.Errorf("container %s argument %q names Secret %s", c.Name, a, secret)
					}
				}
				for _, e := range c.Env {
					if e.Value != "" && strings.Contains(e.Value, secret) {
						t.Errorf("container %s env %s names Secret %s", c.Name, e.Name, secret)
					}
				}
			}
		}
	}
	if !mounted {
		t.Errorf("Secret %s is not mounted", secret)
	}
}

func buildBitcoinSpec(s v1.BitcoinRuntimeSpec) ([]*unstructured.Unstructured, error) {
	return kinds.Builtin()[canonRef("BitcoinRuntime")].Build(&v1.BitcoinRuntime{ObjectMeta: objMeta("btc"), Spec: s}, hanzoCtx)
}

func productionBitcoin() v1.BitcoinRuntimeSpec {
	return v1.BitcoinRuntimeSpec{
		Network: "mainnet", NodeImage: &v1.ImageSpec{Repository: "bitcoin/bitcoin", Tag: "28.1", PullPolicy: corev1.PullIfNotPresent},
		P2P:     &v1.BitcoinP2P{Port: 8333, MaxConnections: 40, AddNodes: []string{"peer.example:8333"}},
		Pruning: &v1.BitcoinPruning{}, RPCAuth: &v1.SecretReference{Name: "btc-auth"}, RPCPort: 8332,
		Storage:          &v1.StorageSpec{Size: resource.MustParse("1Ti"), StorageClassName: "ssd", RetentionPolicy: "Retain", VolumeName: ptr.To("data")},
		Resources:        &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		ImagePullSecrets: []string{"hub"},
	}
}

// TestBitcoinRuntimeNoFieldIgnored walks every BitcoinRuntime field: each changes the objects
// or is refused; the RPC credentials are only ever a mounted Secret.
func TestBitcoinRuntimeNoFieldIgnored(t *testing.T) {
	objs, err := buildBitcoinSpec(productionBitcoin())
	if err != nil {
		t.Fatal(err)
	}
	secretOnlyMounted(t, objs, "btc-auth")
	noFieldIgnored(t, productionBitcoin, buildBitcoinSpec, map[string]nodeCase[v1.BitcoinRuntimeSpec]{
		"network":                  {change: func(s *v1.BitcoinRuntimeSpec) { s.Network = "signet" }},
		"nodeImage.repository":     {change: func(s *v1.BitcoinRuntimeSpec) { s.NodeImage.Repository = "other" }},
		"nodeImage.tag":            {change: func(s *v1.BitcoinRuntimeSpec) { s.NodeImage.Tag = "29.0" }},
		"nodeImage.pullPolicy":     {change: func(s *v1.BitcoinRuntimeSpec) { s.NodeImage.PullPolicy = corev1.PullAlways }},
		"p2p.port":                 {change: func(s *v1.BitcoinRuntimeSpec) { s.P2P.Port = 9333 }},
		"p2p.maxConnections":       {change: func(s *v1.BitcoinRuntimeSpec) { s.P2P.MaxConnections = 8 }},
		"p2p.addNodes":             {change: func(s *v1.BitcoinRuntimeSpec) { s.P2P.AddNodes = nil }},
		"pruning.enabled":          {change: func(s *v1.BitcoinRuntimeSpec) { s.Pruning.Enabled = true }},
		"pruning.targetMB":         {change: func(s *v1.BitcoinRuntimeSpec) { s.Pruning.Enabled, s.Pruning.TargetMB = true, 2000 }},
		"rpcAuth.name":             {change: func(s *v1.BitcoinRuntimeSpec) { s.RPCAuth.Name = "other" }},
		"rpcAuth.namespace":        {change: func(s *v1.BitcoinRuntimeSpec) { s.RPCAuth.Namespace = "elsewhere" }, halt: true},
		"rpcPort":                  {change: func(s *v1.BitcoinRuntimeSpec) { s.RPCPort = 18400 }},
		"storage.storageClassName": {change: func(s *v1.BitcoinRuntimeSpec) { s.Storage.StorageClassName = "hdd" }},
		"storage.size":             {change: func(s *v1.BitcoinRuntimeSpec) { s.Storage.Size = resource.MustParse("2Ti") }},
		"storage.retentionPolicy":  {change: func(s *v1.BitcoinRuntimeSpec) { s.Storage.RetentionPolicy = "Delete" }},
		"storage.volumeName":       {change: func(s *v1.BitcoinRuntimeSpec) { s.Storage.VolumeName = ptr.To("chain") }},
		"txIndex":                  {change: func(s *v1.BitcoinRuntimeSpec) { s.TxIndex = true }},
		"indexer.client":           {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Client: "electrs"} }, halt: true},
		"indexer.image.repository": {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Image: imageOf("e", "1")} }, halt: true},
		"indexer.image.tag":        {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Image: imageOf("e", "1")} }, halt: true},
		"indexer.image.pullPolicy": {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Image: imageOf("e", "1")} }, halt: true},
		"indexer.resources": {change: func(s *v1.BitcoinRuntimeSpec) {
			s.Indexer = &v1.NodeComponent{Resources: &corev1.ResourceRequirements{}}
		}, halt: true},
		"indexer.storage.storageClassName": {change: func(s *v1.BitcoinRuntimeSpec) {
			s.Indexer = &v1.NodeComponent{Storage: &v1.StorageSpec{StorageClassName: "x"}}
		}, halt: true},
		"indexer.storage.size":            {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Storage: &v1.StorageSpec{}} }, halt: true},
		"indexer.storage.retentionPolicy": {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Storage: &v1.StorageSpec{}} }, halt: true},
		"indexer.storage.volumeName":      {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{Storage: &v1.StorageSpec{}} }, halt: true},
		"indexer.extraArgs":               {change: func(s *v1.BitcoinRuntimeSpec) { s.Indexer = &v1.NodeComponent{ExtraArgs: []string{"x"}} }, halt: true},
		"resources":                       {change: func(s *v1.BitcoinRuntimeSpec) { s.Resources = nil }},
		"imagePullSecrets":                {change: func(s *v1.BitcoinRuntimeSpec) { s.ImagePullSecrets = []string{"other"} }},
	})
}

func buildEthereumSpec(s v1.EthereumRuntimeSpec) ([]*unstructured.Unstructured, error) {
	return kinds.Builtin()[canonRef("EthereumRuntime")].Build(&v1.EthereumRuntime{ObjectMeta: objMeta("eth"), Spec: s}, hanzoCtx)
}

func productionEthereum() v1.EthereumRuntimeSpec {
	comp := func(client, repo, vol string, args ...string) *v1.NodeComponent {
		return &v1.NodeComponent{Client: client, Image: imageOf(repo, "v1"),
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			Storage:   &v1.StorageSpec{Size: resource.MustParse("1Ti"), StorageClassName: "nvme", RetentionPolicy: "Retain", VolumeName: ptr.To(vol)},
			ExtraArgs: args}
	}
	return v1.EthereumRuntimeSpec{
		Network: "mainnet", Execution: comp("geth", "geth", "execution", "--cache=4096"),
		Consensus: comp("lighthouse", "lighthouse", "consensus", "--checkpoint-sync-url=https://checkpoint.example"),
		ELRPCPort: 8545, CLRPCPort: 5052, AuthRPCPort: 8551, FeeRecipient: "0x388C818CA8B9251b393131C08a736A67ccB19297", JWTSecret: "eth-jwt",
		Resources: &corev1.ResourceRequirements{}, ImagePullSecrets: []string{"hub"},
	}
}

// TestEthereumRuntimeNoFieldIgnored: every EthereumRuntime field acts or is refused; the
// engine API JWT is only ever a mounted Secret.
func TestEthereumRuntimeNoFieldIgnored(t *testing.T) {
	objs, err := buildEthereumSpec(productionEthereum())
	if err != nil {
		t.Fatal(err)
	}
	secretOnlyMounted(t, objs, "eth-jwt")
	type S = v1.EthereumRuntimeSpec
	cases := map[string]nodeCase[S]{
		"network":          {change: func(s *S) { s.Network = "hoodi" }},
		"elRpcPort":        {change: func(s *S) { s.ELRPCPort = 18545 }},
		"clRpcPort":        {change: func(s *S) { s.CLRPCPort = 15052 }},
		"authRpcPort":      {change: func(s *S) { s.AuthRPCPort = 18551 }},
		"feeRecipient":     {change: func(s *S) { s.FeeRecipient = "" }},
		"jwtSecret":        {change: func(s *S) { s.JWTSecret = "other" }},
		"resources":        {change: func(s *S) { s.Execution.Resources = nil }}, // the spec's applies where a component names none
		"imagePullSecrets": {change: func(s *S) { s.ImagePullSecrets = nil }},
	}
	for _, side := range []string{"execution", "consensus"} {
		get := func(s *S) *v1.NodeComponent {
			if side == "execution" {
				return s.Execution
			}
			return s.Consensus
		}
		cases[side+".client"] = nodeCase[S]{change: func(s *S) { get(s).Client = "other" }, halt: true}
		cases[side+".image.repository"] = nodeCase[S]{change: func(s *S) { get(s).Image.Repository = "other" }}
		cases[side+".image.tag"] = nodeCase[S]{change: func(s *S) { get(s).Image.Tag = "v2" }}
		cases[side+".image.pullPolicy"] = nodeCase[S]{change: func(s *S) { get(s).Image.PullPolicy = corev1.PullAlways }}
		cases[side+".resources"] = nodeCase[S]{change: func(s *S) { get(s).Resources = nil; s.Resources = nil }}
		cases[side+".storage.storageClassName"] = nodeCase[S]{change: func(s *S) { get(s).Storage.StorageClassName = "hdd" }}
		cases[side+".storage.size"] = nodeCase[S]{change: func(s *S) { get(s).Storage.Size = resource.MustParse("3Ti") }}
		cases[side+".storage.retentionPolicy"] = nodeCase[S]{change: func(s *S) { get(s).Storage.RetentionPolicy = "Delete" }}
		cases[side+".storage.volumeName"] = nodeCase[S]{change: func(s *S) { get(s).Storage.VolumeName = ptr.To(side + "-2") }}
		cases[side+".extraArgs"] = nodeCase[S]{change: func(s *S) { get(s).ExtraArgs = append(get(s).ExtraArgs, "--x") }}
	}
	noFieldIgnored(t, productionEthereum, buildEthereumSpec, cases)
}

func buildSolanaSpec(s v1.SolanaRuntimeSpec) ([]*unstructured.Unstructured, error) {
	return kinds.Builtin()[canonRef("SolanaRuntime")].Build(&v1.SolanaRuntime{ObjectMeta: objMeta("sol"), Spec: s}, hanzoCtx)
}

func productionSolana() v1.SolanaRuntimeSpec {
	st := func(vol string) *v1.StorageSpec {
		return &v1.StorageSpec{Size: resource.MustParse("1Ti"), StorageClassName: "nvme", RetentionPolicy: "Retain", VolumeName: ptr.To(vol)}
	}
	return v1.SolanaRuntimeSpec{
		Cluster: "mainnet-beta", NodeImage: &v1.ImageSpec{Repository: "anzaxyz/agave", Tag: "v2.1.14", PullPolicy: corev1.PullIfNotPresent},
		IdentityKeypair: "sol-id", VoteAccount: "3xKsVb7jnUTTVbtDaP7DVpUydvR4sWFDDAsQg6pGtGjE", EntryPoints: []string{"peer.example:8001"},
		RPCEnabled: true, RPCPort: 8899, GossipPort: 8001, Ledger: st("ledger"), Snapshot: &v1.SolanaSnapshot{Storage: st("snapshots")},
		ExtraArgs: []string{"--only-known-rpc"}, ImagePullSecrets: []string{"hub"},
		Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Gi")}},
	}
}

// TestSolanaRuntimeNoFieldIgnored: every SolanaRuntime field acts or is refused; the identity
// keypair is only ever a mounted Secret.
func TestSolanaRuntimeNoFieldIgnored(t *testing.T) {
	objs, err := buildSolanaSpec(productionSolana())
	if err != nil {
		t.Fatal(err)
	}
	secretOnlyMounted(t, objs, "sol-id")
	type S = v1.SolanaRuntimeSpec
	cases := map[string]nodeCase[S]{
		"cluster":              {change: func(s *S) { s.Cluster = "devnet" }},
		"nodeImage.repository": {change: func(s *S) { s.NodeImage.Repository = "other" }},
		"nodeImage.tag":        {change: func(s *S) { s.NodeImage.Tag = "v2.2.0" }},
		"nodeImage.pullPolicy": {change: func(s *S) { s.NodeImage.PullPolicy = corev1.PullAlways }},
		"identityKeypair":      {change: func(s *S) { s.IdentityKeypair = "other" }},
		"voteAccount":          {change: func(s *S) { s.VoteAccount = "" }},
		"entryPoints":          {change: func(s *S) { s.EntryPoints = nil }},
		"rpcEnabled":           {change: func(s *S) { s.RPCEnabled = false }},
		"rpcPort":              {change: func(s *S) { s.RPCPort = 18899 }},
		"gossipPort":           {change: func(s *S) { s.GossipPort = 9001 }},
		"snapshot.url":         {change: func(s *S) { s.Snapshot.URL = "https://snap.example/x.tar.zst" }, halt: true},
		"extraArgs":            {change: func(s *S) { s.ExtraArgs = nil }},
		"resources":            {change: func(s *S) { s.Resources = nil }},
		"imagePullSecrets":     {change: func(s *S) { s.ImagePullSecrets = nil }},
	}
	for _, f := range []string{"ledger", "snapshot.storage"} {
		get := func(s *S) *v1.StorageSpec {
			if f == "ledger" {
				return s.Ledger
			}
			return s.Snapshot.Storage
		}
		cases[f+".storageClassName"] = nodeCase[S]{change: func(s *S) { get(s).StorageClassName = "hdd" }}
		cases[f+".size"] = nodeCase[S]{change: func(s *S) { get(s).Size = resource.MustParse("3Ti") }}
		cases[f+".retentionPolicy"] = nodeCase[S]{change: func(s *S) { get(s).RetentionPolicy = "Delete" }}
		cases[f+".volumeName"] = nodeCase[S]{change: func(s *S) { get(s).VolumeName = ptr.To("v2") }}
	}
	noFieldIgnored(t, productionSolana, buildSolanaSpec, cases)
}
