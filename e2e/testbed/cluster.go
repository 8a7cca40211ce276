package testbed

import (
	"context"
	"embed"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

//go:embed stages/*.yaml
var stages embed.FS

// CrashLoopLabel makes kwok report a pod's containers in CrashLoopBackOff with a rising
// restartCount, as a kubelet does for a container that exits at once.
const CrashLoopLabel = "testbed.openuniverse.dev/crashloop"

// CrashLoopImage is an image whose pods crash-loop on the fake node, whatever their labels
// (stages/pod-crashloop-image.yaml): an upgrade to it fails, a rollback from it recovers.
const CrashLoopImage = "testbed.invalid/crash-loop:v1"

// SlowBootImage is an image whose pods become Ready 10 s after they are scheduled
// (stages/pod-slowboot-image.yaml), where every other pod is Ready at once: a test can act while
// an upgrade to it is pre-flighting. testbed.invalid/slow-boot:v1 boots at once.
const SlowBootImage = "testbed.invalid/slow-boot:v2"

// nodePods is how many pods the fake node takes: the Kind benchmarks run two replicas for
// each of up to 5 000 Service CRs.
const nodePods = "12000"

// NodeName is the fake node kwok manages in a full cluster.
const NodeName = "kwok-node-0"

// Options shapes a control plane.
type Options struct {
	// Dir holds the PKI, etcd data, logs, PID files and the kubeconfig.
	Dir string
	// BinDir holds the binaries; empty means BinDir().
	BinDir string
	// Full adds kube-controller-manager, kube-scheduler and kwok with one fake node, so
	// Deployments roll out and pods become Ready. Without it only etcd and the apiserver run.
	Full bool
	// Detach leaves the processes running after the caller exits (hack/controlplane up).
	Detach bool
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	// EtcdURL is etcd's client URL (its JSON gateway: /v3/kv/...).
	EtcdURL string
	procs   []*process
}

// Start brings up a control plane on free loopback ports and waits until it serves. With
// Options.Full it also waits for the default ServiceAccount and a Ready fake node.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.BinDir == "" {
		o.BinDir = BinDir()
	}
	bins := []string{"etcd", "kube-apiserver"}
	if o.Full {
		bins = append(bins, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	if err := checkBinaries(o.BinDir, bins...); err != nil {
		return nil, err
	}
	pki, err := NewPKI(filepath.Join(o.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: o.Dir, Kubeconfig: filepath.Join(o.Dir, "kubeconfig")}
	if err := c.start(ctx, o, pki); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, o Options, pki *PKI) error {
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	etcdPort, apiPort, kcmPort, schedPort, kwokPort := ports[0], ports[2], ports[3], ports[4], ports[5]
	if err := c.startEtcd(ctx, o, etcdPort, ports[1]); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, o, pki, apiPort, etcdPort); err != nil {
		return err
	}
	if !o.Full {
		return nil
	}
	common := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--authentication-skip-lookup=true",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
	}
	if err := c.run(o, "kube-controller-manager", append(common,
		"--secure-port="+strconv.Itoa(kcmPort),
		"--service-account-private-key-file="+pki.SAKey,
		"--root-ca-file="+pki.CACert,
		"--use-service-account-credentials=false",
		"--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
		// as large clusters tune it: at the default 20 QPS the deployment and replicaset
		// controllers alone need minutes to roll out 1 000 Deployments
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--concurrent-deployment-syncs=20", "--concurrent-replicaset-syncs=20",
	)...); err != nil {
		return err
	}
	if err := c.run(o, "kube-scheduler", append(common, "--secure-port="+strconv.Itoa(schedPort), "--kube-api-qps=200", "--kube-api-burst=400")...); err != nil {
		return err
	}
	if err := c.startKwok(ctx, o, kwokPort); err != nil {
		return err
	}
	return c.waitSystem(ctx)
}

func (c *Cluster) run(o Options, name string, args ...string) error {
	p, err := startProcess(c.Dir, name, filepath.Join(o.BinDir, name), o.Detach, args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context, o Options, client, peer int) error {
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	c.EtcdURL = clientURL
	if err := c.run(o, "etcd",
		"--name=testbed",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testbed="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	); err != nil {
		return err
	}
	return c.poll(ctx, "etcd", 30*time.Second, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (c *Cluster) startAPIServer(ctx context.Context, o Options, pki *PKI, port, etcdPort int) error {
	if err := c.run(o, "kube-apiserver",
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file="+pki.ServingCert, "--tls-private-key-file="+pki.ServingKey,
		"--client-ca-file="+pki.CACert,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+pki.SAPublicKey,
		"--service-account-signing-key-file="+pki.SAKey,
		// a /16 holds 65 534 Services: the Kind benchmarks create one per CR (5 000 and more)
		"--service-cluster-ip-range=10.0.0.0/16",
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		profiling(),
	); err != nil {
		return err
	}
	if err := c.writeKubeconfig(pki, port); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.poll(ctx, "kube-apiserver /readyz", 90*time.Second, func(ctx context.Context) (bool, error) {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
}

func (c *Cluster) writeKubeconfig(pki *PKI, port int) error {
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: pki.CACert}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: pki.AdminCert, ClientKey: pki.AdminKey}
	cfg.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: "admin"}
	cfg.CurrentContext = "testbed"
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 200, 400
	c.Config = rc
	return nil
}

func (c *Cluster) startKwok(ctx context.Context, o Options, port int) error {
	dir := filepath.Join(c.Dir, "kwok")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		// pod IPs: kwok's default 10.0.0.0/24 holds 254 pods and lies in the Service range
		"--cidr=10.244.0.0/16",
		// kwok renews the node's Lease; without it the controller-manager marks the node
		// NotReady after its grace period and every pod on it not Ready.
		"--node-lease-duration-seconds=40",
	}
	// kwok's own node stages, shipped beside the binary by hack/build-controlplane.sh
	for _, f := range []string{"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml"} {
		args = append(args, "--config="+filepath.Join(o.BinDir, "kwok-stages", f))
	}
	// ours: pod-ready without the crash-loop label, and the crash loop
	entries, err := stages.ReadDir("stages")
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, _ := stages.ReadFile("stages/" + e.Name())
		p := filepath.Join(dir, e.Name())
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		args = append(args, "--config="+p)
	}
	if err := c.run(o, "kwok", args...); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "type": "kwok"},
		},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse(nodePods),
		}, Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods: resource.MustParse(nodePods),
		}},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create fake node: %w", err)
	}
	return createStorage(ctx, cs)
}

// StorageClass is the default class of a full cluster (named like kind's): pre-made volumes,
// bound at once, so StatefulSets with volume claim templates schedule on the kwok node like anything else.
const StorageClass = "standard"

// createStorage makes the default StorageClass and a pool of 100Gi volumes for it.
func createStorage(ctx context.Context, cs kubernetes.Interface) error {
	immediate := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &immediate,
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create storage class: %w", err)
	}
	for i := range 32 {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("testbed-pv-%02d", i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              StorageClass,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/tmp/testbed-pv-%02d", i)}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create volume %s: %w", pv.Name, err)
		}
	}
	return nil
}

// waitSystem waits for what workloads need: a Ready, untainted fake node and the default
// ServiceAccount the controller-manager creates.
func (c *Cluster) waitSystem(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return c.poll(ctx, "fake node Ready and default ServiceAccount", 60*time.Second, func(ctx context.Context) (bool, error) {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, t := range n.Spec.Taints {
			if t.Effect == corev1.TaintEffectNoSchedule {
				return false, nil
			}
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// poll runs cond until it is true, a process dies, or the timeout passes.
func (c *Cluster) poll(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range c.procs {
			if err := p.exited(); err != nil {
				return false, err
			}
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Stop ends every process this Cluster started.
func (c *Cluster) Stop() {
	pids := make([]int, 0, len(c.procs))
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	terminate(pids...)
	for _, p := range c.procs {
		p.release()
	}
	c.procs = nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// RestartAPIServer stops the kube-apiserver, keeps it down for down, starts it again with
// the same flags (and so the same port and certificates) and waits until it serves and
// the fake node is Ready again: the fault of an apiserver restart.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	time.Sleep(down)
	return c.StartAPIServer(ctx)
}

// StopAPIServer stops the kube-apiserver (etcd keeps its data): the cluster is down until
// StartAPIServer.
func (c *Cluster) StopAPIServer() error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return fmt.Errorf("no kube-apiserver in this cluster")
	}
	c.procs[i].stop()
	return nil
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, with the same flags (the
// same port and certificates), and waits until it serves (and, in a full cluster, until
// the fake node is Ready again).
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return fmt.Errorf("no kube-apiserver in this cluster")
	}
	old := c.procs[i]
	detach := old.cmd.SysProcAttr.Pdeathsig == 0
	p, err := startProcess(c.Dir, old.name, old.cmd.Path, detach, old.cmd.Args[1:]...)
	if err != nil {
		return err
	}
	c.procs[i] = p
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if err := c.poll(ctx, "kube-apiserver /readyz after a restart", 90*time.Second, func(ctx context.Context) (bool, error) {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	}); err != nil {
		return err
	}
	if !slices.ContainsFunc(c.procs, func(p *process) bool { return p.name == "kwok" }) {
		return nil // etcd and the apiserver only
	}
	return c.waitSystem(ctx)
}

// APIServerProfiling reports whether the testbed's kube-apiserver serves /debug/pprof: off,
// as hardened clusters run it; TESTBED_APISERVER_PROFILING=true turns it on for a bench's
// CPU profile (KINDS_BENCH_CPU_PROFILE).
func APIServerProfiling() bool { return os.Getenv("TESTBED_APISERVER_PROFILING") == "true" }

// profiling is kube-apiserver's --profiling flag (a constant per case: gosec reads an env
// var formatted into a command's arguments as tainted).
func profiling() string {
	if APIServerProfiling() {
		return "--profiling=true"
	}
	return "--profiling=false"
}
