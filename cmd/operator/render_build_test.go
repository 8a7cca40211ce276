package main

import (
	"strings"
	"testing"

	"github.com/openuniverse/operator/kinds"
)

// buildManifests are a Static serving a ConfigMap (its static server image comes from the
// build settings) and a LuxNetwork whose seed restore names no hash (its restore script
// allows an unverified archive or not from the build settings), as the luxfi mainnet CR does.
const buildManifests = `apiVersion: hanzo.ai/v1
kind: Static
metadata: {name: docs, namespace: apps}
spec: {configMap: docs-site}
---
apiVersion: lux.network/v1alpha1
kind: LuxNetwork
metadata: {name: luxd, namespace: lux-mainnet}
spec:
  networkId: 1
  validators: 3
  genesisConfigMap: luxd-genesis
  seedRestore: {enabled: true, sourceType: ObjectStore, objectStoreUrl: "https://s3.lux.network/lux-snapshots/mainnet/node0.tar.gz"}
`

// TestRenderTakesRunsBuildSettings: `operator render` builds with the settings `operator run`
// gives its controllers (--allow-unverified-seed, --static-server-image), so a review of a
// Static or of a hashless seed restore shows what run applies; an unpinned server image is
// refused as run refuses it.
func TestRenderTakesRunsBuildSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "run's defaults", want: []string{"image: " + kinds.DefaultStaticServerImage, "allow_unverified=0"}},
		{name: "run's flags", args: []string{"--allow-unverified-seed", "--static-server-image=docker.io/example/static:2.0"},
			want: []string{"image: docker.io/example/static:2.0", "allow_unverified=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := execute(t, buildManifests, append([]string{"render", "-"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("render prints no %q", w)
				}
			}
		})
	}
	for _, cmd := range [][]string{{"render", "-"}, {"diff", "-"}} {
		_, stderr, code := execute(t, buildManifests, append(cmd, "--static-server-image=docker.io/example/static:latest")...)
		if code != 2 || !strings.Contains(stderr, "--static-server-image") {
			t.Errorf("%s with an unpinned static server image: exit %d, stderr %q; want 2 naming the flag", cmd[0], code, stderr)
		}
	}
}

// TestBuildFlagsAgree: run, render, diff and deploy-plane bind the build settings under the
// same names and defaults, so review and apply read the same values unless told otherwise.
func TestBuildFlagsAgree(t *testing.T) {
	root := newRootCommand()
	for _, name := range []string{"allow-unverified-seed", "static-server-image"} {
		var seen []string
		defaults := map[string]bool{}
		for _, sub := range []string{"run", "render", "diff", "deploy-plane"} {
			c, _, err := root.Find([]string{sub})
			if err != nil || c.Name() != sub {
				t.Fatalf("no command %s: %v", sub, err)
			}
			f := c.Flags().Lookup(name)
			if f == nil {
				t.Errorf("operator %s has no --%s", sub, name)
				continue
			}
			seen = append(seen, sub)
			defaults[f.DefValue] = true
		}
		if len(defaults) != 1 {
			t.Errorf("--%s defaults differ across %v: %v", name, seen, defaults)
		}
	}
}
