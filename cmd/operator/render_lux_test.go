package main

import (
	"strings"
	"testing"
)

// luxManifests is a LuxRuntime written like a production network, a LuxNetwork, and the
// Secrets they reference (staking keys, snapshot credentials) with real-looking values.
const luxManifests = `apiVersion: bootno.de/v1
kind: LuxRuntime
metadata: {name: luxd, namespace: lux}
spec:
  networkID: 1
  validators: 5
  image: {repository: ghcr.io/luxfi/node, tag: v1.23.23}
  storage: {size: 500Gi}
  genesisConfigMap: luxd-genesis
  upgradeConfigMap: luxd-upgrade
  chains:
  - {chainID: C, genesisConfigMap: luxd-chain-c}
  - {chainID: zoo-id, alias: zoo, genesisConfigMap: luxd-chain-zoo}
  staking:
    secretName: luxd-staking
    kms: {projectSlug: lux-infra, envSlug: mainnet, secretsPath: /staking}
  seedRestore:
    enabled: true
    sources: [{type: https, url: "https://seeds/luxd.tar.zst", expectedHash: "` + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" + `"}]
  replication: {enabled: true, s3Endpoint: "https://s3.lux.network", s3Bucket: snaps, credentialsSecret: snap-creds, snapshotIntervalSeconds: 3600}
  exportSchedules:
  - {name: nightly, chainAlias: C, schedule: "0 3 * * *", destination: {pvc: {claimName: exports}}}
---
apiVersion: v1
kind: Secret
metadata: {name: luxd-staking, namespace: lux}
stringData:
  staker-0.key: "-----BEGIN PRIVATE KEY-----stakerkeymaterial"
  signer-0.key: "blssignerkeymaterial"
---
apiVersion: v1
kind: Secret
metadata: {name: snap-creds, namespace: lux}
data: {AWS_SECRET_ACCESS_KEY: c25hcHNlY3JldA==}
---
apiVersion: lux.network/v1alpha1
kind: LuxNetwork
metadata: {name: testnet, namespace: lux-testnet}
spec: {networkId: 2, validators: 3, genesisConfigMap: testnet-genesis}
`

// TestRenderLuxRuntime: `operator render` prints a LuxRuntime's whole working set and a
// LuxNetwork's under the luxfi names, and masks every Secret value.
func TestRenderLuxRuntime(t *testing.T) {
	out, stderr, code := execute(t, luxManifests, "render", "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	docs := strings.Split(out, "\n---\n")
	count := func(kind, name string) int {
		n := 0
		for _, d := range docs {
			if strings.Contains(d, "\nkind: "+kind+"\n") && strings.Contains(d, "\n  name: "+name+"\n") {
				n++
			}
		}
		return n
	}
	for _, want := range []struct{ kind, name string }{
		{"KMSSecret", "luxd-staking"}, {"StatefulSet", "luxd"}, {"Service", "luxd"}, {"Service", "luxd-headless"},
		{"PodDisruptionBudget", "luxd"}, {"CronJob", "luxd-snapshot"}, {"CronJob", "luxd-export-nightly"},
		{"Secret", "luxd-staking"}, {"Secret", "snap-creds"},
		{"StatefulSet", "testnet"}, {"Service", "testnet-headless"}, {"PodDisruptionBudget", "testnet-pdb"},
	} {
		if got := count(want.kind, want.name); got != 1 {
			t.Errorf("%d %s %s in the output, want 1", got, want.kind, want.name)
		}
	}
	for _, want := range []string{
		"name: seed-restore", "name: staking-keys", "name: startup-gate", "--genesis-file=/genesis/genesis.json",
		"--upgrade-file=/etc/luxd/upgrade/upgrade.json", "--chain-config-dir=/etc/luxd/chains", "lux.network/config-hash:",
		"maxUnavailable: 1", "name: luxd", // the luxfi container name of the LuxNetwork
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, secret := range []string{"stakerkeymaterial", "blssignerkeymaterial", "c25hcHNlY3JldA==", "snapsecret"} {
		if strings.Contains(out+stderr, secret) {
			t.Errorf("a Secret value is printed: %s", secret)
		}
	}
	if strings.Count(out, "'***'") < 3 {
		t.Errorf("Secret values are not masked:\n%s", out)
	}
}

// TestRenderLuxFleet: `operator render` gives a LuxNetwork the LuxChains beside it in the
// input (as the controller reads them from its cache), and prints the luxfi apps' objects
// under that operator's names.
func TestRenderLuxFleet(t *testing.T) {
	const fleet = `apiVersion: lux.network/v1alpha1
kind: LuxNetwork
metadata: {name: luxd, namespace: lux-mainnet}
spec: {networkId: 1, validators: 3, genesisConfigMap: luxd-genesis, ports: {http: 9630, staking: 9631}}
---
apiVersion: lux.network/v1alpha1
kind: LuxChain
metadata: {name: zoo, namespace: lux-mainnet}
spec: {networkRef: luxd, alias: zoo, blockchainId: zooBlockchainID, vm: {vmType: evm, chainConfig: {pruning-enabled: true}}}
---
apiVersion: lux.network/v1alpha1
kind: LuxIndexer
metadata: {name: indexer-zoo, namespace: lux-mainnet}
spec: {networkRef: luxd, chainAlias: zoo, chainId: 200200, blockchainId: zooBlockchainID}
`
	out, stderr, code := execute(t, fleet, "render", "-")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"name: luxd-chain-zoo", "--track-chains=zooBlockchainID", // the LuxChain, through its network
		"name: indexer-zoo-indexer", "name: indexer-zoo-pg",
		"http://luxd-0.luxd-headless.lux-mainnet.svc:9630/ext/bc/zooBlockchainID/rpc", // the network's port
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render prints no %q", want)
		}
	}
}
