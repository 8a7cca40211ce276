package image

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
)

// TestRewriteNodeRuntimeImages: an ImageUpdate of a node runtime's image moves the node's
// StatefulSet as one of a Service's moves its Deployment. Each CR (the mainnet inputs of
// kinds/testdata, inline) is rewritten by the ImageUpdate's rewriter for one repository, built
// by the registry, and the StatefulSet's containers must run the new tag for exactly that
// repository, every other container unchanged.
func TestRewriteNodeRuntimeImages(t *testing.T) {
	cases := []struct {
		name, cr, repository, newTag string
		want                         []string // the StatefulSet's container images after the rewrite
	}{
		{name: "BitcoinRuntime nodeImage", cr: `apiVersion: bootno.de/v1
kind: BitcoinRuntime
metadata: {name: btc, namespace: chains}
spec:
  network: mainnet
  nodeImage: {repository: docker.io/bitcoin/bitcoin, tag: "28.1"}
  rpcAuth: {name: btc-rpcauth}
  storage: {size: 1500Gi}
`, repository: "docker.io/bitcoin/bitcoin", newTag: "29.0", want: []string{"docker.io/bitcoin/bitcoin:29.0"}},
		{name: "EthereumRuntime execution image only", cr: ethereumCR, repository: "docker.io/ethereum/client-go", newTag: "v1.15.0",
			want: []string{"docker.io/ethereum/client-go:v1.15.0", "docker.io/sigp/lighthouse:v6.0.1"}},
		{name: "EthereumRuntime consensus image only", cr: ethereumCR, repository: "docker.io/sigp/lighthouse", newTag: "v7.0.0",
			want: []string{"docker.io/ethereum/client-go:v1.14.12", "docker.io/sigp/lighthouse:v7.0.0"}},
		{name: "SolanaRuntime nodeImage", cr: `apiVersion: bootno.de/v1
kind: SolanaRuntime
metadata: {name: sol, namespace: chains}
spec:
  cluster: mainnet-beta
  nodeImage:
    repository: docker.io/anzaxyz/agave
    tag: v2.1.14
  identityKeypair: sol-identity
  rpcEnabled: true
  ledger: {size: 2Ti}
`, repository: "docker.io/anzaxyz/agave", newTag: "v2.2.0", want: []string{"docker.io/anzaxyz/agave:v2.2.0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Rewrite("chains/node.yaml", []byte(c.cr), Target{Repository: c.repository, Namespace: "chains"}, c.newTag, nil)
			if err != nil {
				t.Fatalf("rewrite: %v", err)
			}
			if strings.Count(string(out), c.newTag) != 1 {
				t.Errorf("the rewrite wrote %s %d times, want once:\n%s", c.newTag, strings.Count(string(out), c.newTag), out)
			}
			if got := statefulSetImages(t, out); !slices.Equal(got, c.want) {
				t.Errorf("the node's StatefulSet runs %v, want %v", got, c.want)
			}
		})
	}
}

const ethereumCR = `apiVersion: bootno.de/v1
kind: EthereumRuntime
metadata: {name: eth, namespace: chains}
spec:
  network: mainnet
  execution:
    image: {repository: docker.io/ethereum/client-go, tag: v1.14.12}
    storage: {size: 2500Gi}
  consensus:
    image: {repository: docker.io/sigp/lighthouse, tag: v6.0.1}
    storage: {size: 300Gi}
    extraArgs: ["--checkpoint-sync-url=https://mainnet.checkpoint.sigp.io"]
  jwtSecret: eth-jwt
`

// statefulSetImages builds the CR and returns the images of its StatefulSet's containers.
func statefulSetImages(t *testing.T, cr []byte) []string {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(cr, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetUID("00000000-0000-0000-0000-000000000001")
	objs, err := kinds.Builtin().Build(u, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	for _, o := range objs {
		if o.GetKind() != "StatefulSet" {
			continue
		}
		sts := &appsv1.StatefulSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, sts); err != nil {
			t.Fatal(err)
		}
		var images []string
		for _, c := range sts.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
		return images
	}
	t.Fatal("no StatefulSet built")
	return nil
}
