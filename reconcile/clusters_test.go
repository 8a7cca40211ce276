package reconcile_test

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/fleet"
)

const fleetNS = "universe-system"

// startClusterB is a second control plane (etcd and kube-apiserver) beside the testbed's,
// with the universe CRDs: the registered cluster the home operator reaches.
func startClusterB(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	testbed.APIServer(t) // skips in -short mode
	dir, err := os.MkdirTemp("", "kinds-b-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := testbed.Start(context.Background(), testbed.Options{Dir: dir})
	if err != nil {
		t.Fatalf("start cluster B: %v", err)
	}
	t.Cleanup(func() { b.Stop(); _ = os.RemoveAll(dir) })
	cfg := rest.CopyConfig(b.Config)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: kindsScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	return cfg, c
}

func kindsScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(s, group); err != nil {
		t.Fatal(err)
	}
	return s
}

// kubeconfigOf is cfg's credential as a self-contained kubeconfig (data, not file paths),
// the shape the fleet's credential store accepts; token replaces the client certificate.
func kubeconfigOf(t *testing.T, cfg *rest.Config, token string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if token != "" {
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// storeKubeconfig writes the credential of cluster name of org at its derived ref.
func storeKubeconfig(t *testing.T, c client.Client, org, name string, kubeconfig []byte) {
	t.Helper()
	ref, err := fleet.RefOf(org, name)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleet.SecretName(ref), Namespace: fleetNS},
		Data: map[string][]byte{fleet.SecretKey: kubeconfig}}
	err = c.Create(t.Context(), sec)
	switch {
	case apierrors.IsAlreadyExists(err):
		err = c.Update(t.Context(), sec)
	case err == nil:
		t.Cleanup(func() { _ = c.Delete(context.Background(), sec) })
	}
	if err != nil {
		t.Fatal(err)
	}
}

func registerCluster(t *testing.T, c client.Client, name, org, endpoint string, namespaces []string) *fleetv1.Cluster {
	t.Helper()
	cr := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleetv1.ClusterSpec{Org: org, Endpoint: endpoint, Namespaces: namespaces, Provider: "testbed"}}
	if err := c.Create(t.Context(), cr); err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cr) })
	return cr
}

// kindControllers is the KindControllers condition of registration name on home.
func kindControllers(ctx context.Context, c client.Client, name string) (metav1.Condition, bool) {
	var cr fleetv1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &cr); err != nil {
		return metav1.Condition{}, false
	}
	cond := meta.FindStatusCondition(cr.Status.Conditions, reconcile.ConditionKindControllers)
	if cond == nil {
		return metav1.Condition{}, false
	}
	return *cond, true
}

// usage is what the operator costs cluster B: B's apiserver's request count and open watches
// (from its /metrics), and this process's heap and RSS.
type usage struct {
	requests, watches int64
	heap, rss         int64
	by                map[string]int64 // requests by verb and resource
}

// busiest is the requests of u since b by verb and resource, the most first.
func (u usage) busiest(b usage) string {
	type row struct {
		k string
		n int64
	}
	var rows []row
	for k, n := range u.by {
		if d := n - b.by[k]; d > 0 {
			rows = append(rows, row{k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	var out []string
	for i, r := range rows {
		if i == 8 {
			break
		}
		out = append(out, fmt.Sprintf("%s %d", r.k, r.n))
	}
	return strings.Join(out, ", ")
}

func usageOf(ctx context.Context, t *testing.T, b *rest.Config) usage {
	t.Helper()
	cs, err := kubernetes.NewForConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := usage{by: map[string]int64{}}
	label := func(rest, key string) string {
		_, v, _ := strings.Cut(rest, key+`="`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, _ := strings.Cut(line, "{")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case name == "apiserver_request_total":
			u.requests += int64(v)
			u.by[label(rest, "verb")+" "+label(rest, "resource")+"/"+label(rest, "subresource")] += int64(v)
		case name == "apiserver_longrunning_requests" && strings.Contains(rest, `verb="WATCH"`):
			u.watches += int64(v)
		}
	}
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	u.heap = int64(ms.HeapInuse)
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				u.rss = kb << 10
			}
		}
	}
	return u
}

func serviceIn(ns, name string) *unstructured.Unstructured {
	u := serviceCR(name, false, nil)
	u.SetNamespace(ns)
	return u
}

func getIn2(ctx context.Context, c client.Client, ns, name string, u *unstructured.Unstructured) error {
	return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

func deploymentOf(ctx context.Context, c client.Client, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvkDeployment)
	return u, getIn2(ctx, c, ns, name, u)
}

// TestKindsOnRegisteredCluster runs the home operator's Clusters runnable against a second
// control plane registered as cluster B: a Service CR created on B is materialized on B (its
// Deployment there, none on the home cluster) with its status written on B, and a deleted
// child is put back; a rotated credential B refuses disengages it, the good one engages it
// again; deregistering B stops its controllers (a deleted child stays deleted, a new CR is
// not materialized); a registration bounded to one namespace reconciles there, never reads
// or writes a CR of another, and its KindControllers condition names the bound.
func TestKindsOnRegisteredCluster(t *testing.T) {
	homeCfg := testbed.APIServer(t)
	logs := &syncBuffer{}
	log := zap.New(zap.WriteTo(logs), zap.JSONEncoder(), zap.Level(zapcore.DebugLevel))
	ctrl.SetLogger(log)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	start := time.Now()
	scheme := kindsScheme(t)
	home, err := client.New(homeCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, homeCfg, home)
	ensureNamespace(t, home, fleetNS)
	bCfg, b := startClusterB(t)
	t.Logf("cluster B up after %s", time.Since(start).Round(time.Second))
	ctx, stop := context.WithTimeout(t.Context(), 8*time.Minute)
	defer stop()
	waitFor := func(what string, cond func() (bool, string)) {
		t.Helper()
		poll(ctx, t, what, cond)
		t.Logf("%s after %s", what, time.Since(start).Round(100*time.Millisecond))
	}

	mgr, err := ctrl.NewManager(homeCfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	// FLEETKINDS_MEASURE=1 logs what B costs (figures for README, not asserted), with the
	// default resync: every registration is reached again, and its missing Kinds looked
	// for, once a minute.
	measure := os.Getenv("FLEETKINDS_MEASURE") != ""
	resync := time.Second
	if measure {
		resync = reconcile.DefaultClustersResync
	}
	clusters := &reconcile.Clusters{Home: mgr, Registry: kinds.Builtin(), Group: group, Resync: resync,
		Fleet: &fleet.Fleet{Registry: fleet.Registry{Reader: mgr.GetClient()},
			Store: fleet.SecretStore{Reader: mgr.GetAPIReader(), Namespace: fleetNS}, Scheme: scheme, AllowNonRoutable: true},
		Log: log.WithName("fleet-kinds")}
	if err := mgr.Add(clusters); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	const apps = "fk-apps"
	ensureNamespace(t, b, apps)
	ensureNamespace(t, home, apps)
	var before, quiet usage
	if measure {
		quiet = usageOf(ctx, t, bCfg)
		time.Sleep(60 * time.Second)
		before = usageOf(ctx, t, bCfg)
		t.Logf("B alone, idle 60 s: %d requests (its own), %d watches open", before.requests-quiet.requests, before.watches)
	}
	storeKubeconfig(t, home, "acme", "b", kubeconfigOf(t, bCfg, ""))
	reg := registerCluster(t, home, "b", "acme", bCfg.Host, nil)
	waitFor("B engaged", func() (bool, string) {
		c, ok := kindControllers(ctx, home, "b")
		return ok && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "every namespace"), c.Message
	})

	if err := b.Create(ctx, serviceIn(apps, "web")); err != nil {
		t.Fatal(err)
	}
	waitFor("web's Deployment on B and its status on B", func() (bool, string) {
		if _, err := deploymentOf(ctx, b, apps, "web"); err != nil {
			return false, err.Error()
		}
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(gvkService)
		if err := getIn2(ctx, b, apps, "web", cr); err != nil {
			return false, err.Error()
		}
		c, ok := readyCondition(cr)
		return ok, c.Message
	})
	if _, err := deploymentOf(ctx, home, apps, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("web's Deployment on the home cluster: %v, want NotFound", err)
	}
	if measure {
		engaged := usageOf(ctx, t, bCfg)
		time.Sleep(60 * time.Second)
		idle := usageOf(ctx, t, bCfg)
		t.Logf("engaging B and reconciling one CR: %d requests to B, %d more watches open on B, heap %+d MiB, RSS %+d MiB; then idle 60 s: %d requests to B",
			engaged.requests-before.requests, engaged.watches-before.watches, (engaged.heap-before.heap)>>20, (engaged.rss-before.rss)>>20, idle.requests-engaged.requests)
		t.Logf("B alone, idle: %s; engaged, idle: %s", before.busiest(quiet), idle.busiest(engaged))
	}
	// B's controllers watch B's children: a deleted one is put back.
	dep, _ := deploymentOf(ctx, b, apps, "web")
	if err := b.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	waitFor("web's Deployment recreated on B", func() (bool, string) {
		d, err := deploymentOf(ctx, b, apps, "web")
		return err == nil && d.GetUID() != dep.GetUID(), "not yet"
	})

	// A rotated credential B refuses: the next resync disengages B and says why; the good
	// one engages it again, without a restart.
	storeKubeconfig(t, home, "acme", "b", kubeconfigOf(t, bCfg, "not-a-token-b-knows"))
	waitFor("B disengaged by a refused credential", func() (bool, string) {
		c, _ := kindControllers(ctx, home, "b")
		return c.Status == metav1.ConditionFalse && c.Reason == reconcile.ReasonUnreachable && len(clusters.Engaged()) == 0, c.Message
	})
	storeKubeconfig(t, home, "acme", "b", kubeconfigOf(t, bCfg, ""))
	waitFor("B engaged again after rotation", func() (bool, string) {
		c, _ := kindControllers(ctx, home, "b")
		return c.Status == metav1.ConditionTrue && len(clusters.Engaged()) == 1, c.Message
	})

	// Deregistered: B's controllers stop, nothing is written on B any more.
	if err := home.Delete(ctx, reg); err != nil {
		t.Fatal(err)
	}
	waitFor("B disengaged", func() (bool, string) { return len(clusters.Engaged()) == 0, strings.Join(clusters.Engaged(), ",") })
	dep, _ = deploymentOf(ctx, b, apps, "web")
	if err := b.Delete(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, serviceIn(apps, "late")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // 3 resyncs
	if d, err := deploymentOf(ctx, b, apps, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("after deregistration web's Deployment came back (uid %s): %v", d.GetUID(), err)
	}
	if _, err := deploymentOf(ctx, b, apps, "late"); !apierrors.IsNotFound(err) {
		t.Errorf("after deregistration a new CR was materialized: %v", err)
	}

	// Bounded to fk-in: its CR is materialized, fk-out's is never read nor written, and the
	// condition names the bound.
	const in, out = "fk-in", "fk-out"
	ensureNamespace(t, b, in)
	ensureNamespace(t, b, out)
	if err := b.Create(ctx, serviceIn(out, "outside")); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, serviceIn(in, "inside")); err != nil {
		t.Fatal(err)
	}
	storeKubeconfig(t, home, "acme", "b-bounded", kubeconfigOf(t, bCfg, ""))
	registerCluster(t, home, "b-bounded", "acme", bCfg.Host, []string{in})
	waitFor("b-bounded engaged, naming its bound", func() (bool, string) {
		c, ok := kindControllers(ctx, home, "b-bounded")
		return ok && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "["+in+"]") && strings.Contains(c.Message, "refused"), c.Message
	})
	waitFor("inside's Deployment on B", func() (bool, string) {
		_, err := deploymentOf(ctx, b, in, "inside")
		return err == nil, "not yet"
	})
	time.Sleep(2 * time.Second)
	if _, err := deploymentOf(ctx, b, out, "outside"); !apierrors.IsNotFound(err) {
		t.Errorf("a CR outside the bound was materialized: %v", err)
	}
	outside := &unstructured.Unstructured{}
	outside.SetGroupVersionKind(gvkService)
	if err := getIn2(ctx, b, out, "outside", outside); err != nil {
		t.Fatal(err)
	}
	if _, ok := outside.Object["status"]; ok {
		t.Errorf("a CR outside the bound got a status: %v", outside.Object["status"])
	}
	// the old whole-cluster registration is gone: "late" stays unmaterialized
	if _, err := deploymentOf(ctx, b, apps, "late"); !apierrors.IsNotFound(err) {
		t.Errorf("the bounded registration materialized a CR of %s: %v", apps, err)
	}
}
