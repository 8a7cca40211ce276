package kinds_test

import (
	"os"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

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
	for _, group := range groups {
		if installed.groups[group] {
			continue
		}
		crds, err := kinds.CRDs(group)
		if err != nil {
			t.Fatalf("CRDs(%s): %v", group, err)
		}
		ptrs := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
		for i := range crds {
			ptrs[i] = &crds[i]
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: ptrs}); err != nil {
			t.Fatalf("install the %s CRDs: %v", group, err)
		}
		installed.groups[group] = true
	}
	return cfg
}

// TestBundlesInstall installs the CRDs of every committed universe on a real apiserver, which
// checks the schemas, the CEL rules and their cost estimates.
func TestBundlesInstall(t *testing.T) {
	apiServerWith(t, universes...)
}
