package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// EnvKubeconfig names the variable that points the e2e suite at an existing cluster (a kind
// cluster where Docker exists) instead of starting the local control plane.
const EnvKubeconfig = "E2E_KUBECONFIG"

var shared struct {
	mu      sync.Mutex
	env     *envtest.Environment
	envCfg  *rest.Config
	envErr  error
	cluster *Cluster
	dir     string
	clErr   error
}

// Run runs the tests of a package and stops whatever control plane they started.
func Run(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.env != nil {
		_ = shared.env.Stop()
	}
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// APIServer returns a config for a real kube-apiserver (envtest: etcd + kube-apiserver from
// BinDir, no download), started once per test binary. In -short mode the test is skipped;
// otherwise missing binaries fail it.
func APIServer(t testing.TB) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a kube-apiserver; skipped in -short mode")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.env == nil && shared.envErr == nil {
		shared.envErr = checkBinaries(BinDir(), "etcd", "kube-apiserver", "kubectl")
		if shared.envErr == nil {
			env := &envtest.Environment{BinaryAssetsDirectory: BinDir(), ErrorIfCRDPathMissing: true}
			shared.envCfg, shared.envErr = env.Start()
			if shared.envErr == nil {
				shared.env = env
				shared.envCfg.QPS, shared.envCfg.Burst = 500, 1000
			}
		}
	}
	if shared.envErr != nil {
		t.Fatalf("start envtest: %v", shared.envErr)
	}
	return rest.CopyConfig(shared.envCfg)
}

// FullCluster returns a cluster where workloads run: E2E_KUBECONFIG when set, else the
// local control plane with controller-manager, scheduler and a kwok node, started once per
// test binary. The second result is the kubeconfig path, for subprocesses.
func FullCluster(t testing.TB) (*rest.Config, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a full control plane; skipped in -short mode")
	}
	if kc := os.Getenv(EnvKubeconfig); kc != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatalf("load %s=%s: %v", EnvKubeconfig, kc, err)
		}
		return cfg, kc
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil && shared.clErr == nil {
		shared.dir, shared.clErr = os.MkdirTemp("", "testbed-")
		if shared.clErr == nil {
			shared.cluster, shared.clErr = Start(context.Background(), Options{Dir: shared.dir, Full: true})
		}
	}
	if shared.clErr != nil {
		t.Fatalf("start control plane: %v", shared.clErr)
	}
	return rest.CopyConfig(shared.cluster.Config), shared.cluster.Kubeconfig
}

// RestartAPIServer restarts the kube-apiserver of the local control plane FullCluster
// started (see Cluster.RestartAPIServer), keeping it down for down. It skips the test on
// a cluster it did not start (E2E_KUBECONFIG).
func RestartAPIServer(t testing.TB, down time.Duration) {
	t.Helper()
	if os.Getenv(EnvKubeconfig) != "" {
		t.Skip("restarts only the local control plane's apiserver")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil {
		t.Fatal("RestartAPIServer before FullCluster")
	}
	if err := shared.cluster.RestartAPIServer(context.Background(), down); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
}

// CompactEtcd compacts the etcd of the local control plane FullCluster started to its
// current revision, as a cluster's periodic compaction does: every earlier resourceVersion
// is expired (a watch from one answers 410 Gone). It skips the test on a cluster it did not
// start (E2E_KUBECONFIG).
func CompactEtcd(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvKubeconfig) != "" {
		t.Skip("compacts only the local control plane's etcd")
	}
	shared.mu.Lock()
	c := shared.cluster
	shared.mu.Unlock()
	if c == nil {
		t.Fatal("CompactEtcd before FullCluster")
	}
	post := func(path string, body any, out any) {
		data, _ := json.Marshal(body)
		res, err := http.Post(c.EtcdURL+path, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("etcd %s: %v", path, err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: %s", path, res.Status)
		}
		if out != nil {
			if err := json.NewDecoder(res.Body).Decode(out); err != nil {
				t.Fatalf("etcd %s: %v", path, err)
			}
		}
	}
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	post("/v3/kv/range", map[string]any{"key": "Lw=="}, &rng) // key "/": any range returns the revision
	if rng.Header.Revision == "" {
		t.Fatal("etcd: no revision in the range answer")
	}
	post("/v3/kv/compaction", map[string]any{"revision": rng.Header.Revision, "physical": true}, nil)
}
