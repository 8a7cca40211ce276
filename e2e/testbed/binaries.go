package testbed

import (
	"fmt"
	"os"
	"path/filepath"
)

// Versions of the control plane the repo builds. hack/build-controlplane.sh keys its cache
// dir by the same values; keep them in step.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
)

// EnvBinDir names the variable that points at the control-plane binaries. The Makefile sets
// it from the last line hack/build-controlplane.sh prints.
const EnvBinDir = "CONTROLPLANE_BIN_DIR"

// BinDir returns the directory holding etcd, kube-apiserver, kubectl,
// kube-controller-manager, kube-scheduler and kwok: $CONTROLPLANE_BIN_DIR, else the
// default cache path of hack/build-controlplane.sh.
func BinDir() string {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d
	}
	root := os.Getenv("UNIVERSE_CACHE")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		root = filepath.Join(home, ".cache", "universe-operator")
	}
	return filepath.Join(root, "controlplane",
		fmt.Sprintf("k8s-%s-etcd-%s-kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion))
}

// checkBinaries reports the first missing binary with the command that builds it.
func checkBinaries(dir string, names ...string) error {
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("control-plane binary %s not found in %s: run hack/build-controlplane.sh (or make controlplane)", n, dir)
		}
	}
	return nil
}
