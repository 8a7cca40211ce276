package kinds_test

import (
	"bytes"
	"os"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// luxNetworkKey marks the luxfi CRDs installed (lux.network and secrets.lux.network, the same
// in every universe).
const luxNetworkKey = "lux.network CRDs"

var installed struct {
	sync.Mutex
	groups map[string]bool
}

// apiServerWith returns the test binary's kube-apiserver with the CRDs of every group
// installed and established.
func apiServerWith(t *testing.T, groups ...string) *rest.Config {
	t.Helper()
	cfg := testbed.APIServer(t)
	installed.Lock()
	defer installed.Unlock()
	if installed.groups == nil {
		installed.groups = map[string]bool{}
	}
	if !installed.groups[luxNetworkKey] {
		crds, err := kinds.LuxNetworkCRDs()
		if err != nil {
			t.Fatal(err)
		}
		var ptrs []*apiextensionsv1.CustomResourceDefinition
		for i := range crds {
			ptrs = append(ptrs, &crds[i])
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: ptrs}); err != nil {
			t.Fatalf("install the lux.network CRDs: %v", err)
		}
		installed.groups[luxNetworkKey] = true
	}
	for _, group := range groups {
		if installed.groups[group] {
			continue
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: bundleCRDs(t, group)}); err != nil {
			t.Fatalf("install the %s CRDs: %v", group, err)
		}
		installed.groups[group] = true
	}
	return cfg
}

// bundleCRDs parses the bytes `operator crds --api-group group` prints.
func bundleCRDs(t *testing.T, group string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := kinds.Bundle(group)
	if err != nil {
		t.Fatalf("Bundle(%s): %v", group, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range bytes.Split(data, []byte("---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			t.Fatalf("bundle %s: %v", group, err)
		}
		out = append(out, crd)
	}
	return out
}

// TestBundlesInstall installs the bundle of every committed universe on a real apiserver, which
// checks the schemas, the CEL rules and their cost estimates.
func TestBundlesInstall(t *testing.T) {
	apiServerWith(t, universes...)
}
