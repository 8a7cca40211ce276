package fleet_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
)

const (
	group       = kinds.DefaultAPIGroup
	operatorNS  = "universe-system"
	acme, other = "acme", "other"
)

var second struct {
	once sync.Once
	c    *testbed.Cluster
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := testbed.Run(m)
	if second.c != nil {
		second.c.Stop()
		_ = os.RemoveAll(second.dir)
	}
	os.Exit(code)
}

// clusterB is a second control plane (etcd and kube-apiserver) beside the testbed's: the
// registered cluster the home one reaches.
func clusterB(t *testing.T) *rest.Config {
	t.Helper()
	testbed.APIServer(t) // skips in -short mode
	second.once.Do(func() {
		second.dir, second.err = os.MkdirTemp("", "fleet-b-")
		if second.err == nil {
			second.c, second.err = testbed.Start(context.Background(), testbed.Options{Dir: second.dir})
		}
	})
	if second.err != nil {
		t.Fatalf("start cluster B: %v", second.err)
	}
	cfg := rest.CopyConfig(second.c.Config)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func scheme(t *testing.T) *runtime.Scheme {
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

var crdOnce sync.Once

// home is the testbed's apiserver with the Cluster CRD and the operator's namespace.
func home(t *testing.T) client.Client {
	t.Helper()
	cfg := testbed.APIServer(t)
	crdOnce.Do(func() {
		crds, err := kinds.CRDs(group)
		if err != nil {
			t.Fatal(err)
		}
		var mine []*apiextensionsv1.CustomResourceDefinition
		for i := range crds {
			if crds[i].Spec.Names.Kind == fleetv1.Kind {
				mine = append(mine, &crds[i])
			}
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: mine}); err != nil {
			t.Fatal(err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ensureNS(t, c, operatorNS)
	return c
}

func ensureNS(t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// selfContained is cfg's credential as a kubeconfig holding its data, not file paths.
func selfContained(t *testing.T, cfg *rest.Config, token string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	ai := &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	if token != "" {
		ai = &clientcmdapi.AuthInfo{Token: token}
	}
	kc.AuthInfos["u"] = ai
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// register declares Cluster name of org at endpoint and stores kubeconfig at its derived ref.
func register(t *testing.T, c client.Client, name, org, endpoint string, namespaces []string, kubeconfig []byte) {
	t.Helper()
	ctx := t.Context()
	cr := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleetv1.ClusterSpec{Org: org, Endpoint: endpoint, Namespaces: namespaces, Provider: "testbed"}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cr) })
	if kubeconfig != nil {
		storeCredential(t, c, org, name, kubeconfig)
	}
}

func storeCredential(t *testing.T, c client.Client, org, name string, kubeconfig []byte) {
	t.Helper()
	ref, err := fleet.RefOf(org, name)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleet.SecretName(ref), Namespace: operatorNS},
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

func newFleet(t *testing.T, c client.Client) *fleet.Fleet {
	return &fleet.Fleet{Registry: fleet.Registry{Reader: c}, Store: fleet.SecretStore{Reader: c, Namespace: operatorNS},
		Scheme: scheme(t), AllowNonRoutable: true}
}

func as(t *testing.T, org string) context.Context {
	t.Helper()
	caller, err := fleet.PathCaller(org)
	if err != nil {
		t.Fatal(err)
	}
	return fleet.WithCaller(t.Context(), caller)
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
}

func unstructuredCM(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": name}, "data": map[string]any{"k": "v"}}}
	return u
}

// TestReachLandsOnTheRegisteredCluster: a write through the Bound of cluster B lands on B,
// not on the home cluster that holds the registry and the credential.
func TestReachLandsOnTheRegisteredCluster(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	register(t, h, "b-whole", acme, b.Host, nil, selfContained(t, b, ""))
	bound, err := newFleet(t, h).Reach(as(t, acme), "b-whole")
	if err != nil {
		t.Fatalf("Reach: %v", err)
	}
	if v, err := bound.Status(); err != nil || v == "" {
		t.Fatalf("Status() = %q, %v", v, err)
	}
	whole, err := bound.WholeCluster()
	if err != nil {
		t.Fatal(err)
	}
	ensureNS(t, whole.Client, "acme-apps")
	cm, err := bound.One("acme-apps")
	if err != nil {
		t.Fatal(err)
	}
	if err := cm.Create(t.Context(), configMap("acme-apps", "landed")); err != nil {
		t.Fatalf("create on B: %v", err)
	}
	bc, err := client.New(b, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bc.Get(t.Context(), client.ObjectKey{Namespace: "acme-apps", Name: "landed"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap is not on B: %v", err)
	}
	if err := h.Get(t.Context(), client.ObjectKey{Namespace: "acme-apps", Name: "landed"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap reached the home cluster too: %v", err)
	}
}

// TestBoundRefusesOutsideNamespaces: a registration bounded to acme-apps refuses, by name,
// every other namespace, cluster-scoped objects and all-namespace lists, and still reports
// its status (through /version, which needs no namespace).
func TestBoundRefusesOutsideNamespaces(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	bc, err := client.New(b, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ensureNS(t, bc, "acme-apps")
	ensureNS(t, bc, "lux-chain")
	register(t, h, "b-bounded", acme, b.Host, []string{"acme-apps"}, selfContained(t, b, ""))
	bound, err := newFleet(t, h).Reach(as(t, acme), "b-bounded")
	if err != nil {
		t.Fatalf("Reach: %v", err)
	}
	const bound1 = "[acme-apps]"
	if _, err := bound.One("lux-chain"); err == nil || !strings.Contains(err.Error(), `namespace "lux-chain"`) || !strings.Contains(err.Error(), bound1) {
		t.Errorf("One(lux-chain) = %v, want refused naming the namespace and the bound", err)
	}
	if _, err := bound.WholeCluster(); err == nil || !strings.Contains(err.Error(), bound1) {
		t.Errorf("WholeCluster() = %v, want refused", err)
	}
	gc := bound.Client()
	ctx := t.Context()
	var oob *fleet.OutOfBoundError
	for what, err := range map[string]error{
		"create in lux-chain": gc.Create(ctx, configMap("lux-chain", "x")),
		"get in lux-chain":    gc.Get(ctx, client.ObjectKey{Namespace: "lux-chain", Name: "x"}, &corev1.ConfigMap{}),
		"list every ns":       gc.List(ctx, &corev1.ConfigMapList{}),
		"list lux-chain":      gc.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("lux-chain")),
		"create a namespace":  gc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "acme-new"}}),
		"status of lux-chain": gc.Status().Update(ctx, configMap("lux-chain", "x")),
		"apply in lux-chain":  gc.Apply(ctx, client.ApplyConfigurationFromUnstructured(unstructuredCM("lux-chain", "x")), client.FieldOwner("test")),
	} {
		if !errors.As(err, &oob) || !strings.Contains(err.Error(), bound1) {
			t.Errorf("%s: %v, want an OutOfBoundError naming the bound", what, err)
		}
	}
	if err := bc.Get(ctx, client.ObjectKey{Namespace: "lux-chain", Name: "x"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap exists on B: %v", err)
	}
	if err := gc.Create(ctx, configMap("acme-apps", "inside")); err != nil {
		t.Errorf("create inside the bound: %v", err)
	}
	if err := gc.Apply(ctx, client.ApplyConfigurationFromUnstructured(unstructuredCM("acme-apps", "applied")), client.FieldOwner("test")); err != nil {
		t.Errorf("apply inside the bound: %v", err)
	}
	if err := gc.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("acme-apps")); err != nil {
		t.Errorf("list inside the bound: %v", err)
	}
	if _, err := bound.Status(); err != nil {
		t.Errorf("Status() of a bounded registration: %v", err)
	}
	// A client the caller builds itself from the Bound's config is gated by its transport.
	typed, err := kubernetes.NewForConfig(bound.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := typed.CoreV1().ConfigMaps("lux-chain").List(ctx, metav1.ListOptions{}); !errors.As(err, &oob) || !strings.Contains(err.Error(), bound1) {
		t.Errorf("own client, list lux-chain: %v, want an OutOfBoundError naming the bound", err)
	}
	if _, err := typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !errors.As(err, &oob) {
		t.Errorf("own client, list nodes: %v, want an OutOfBoundError", err)
	}
	if err := typed.CoreV1().Namespaces().Delete(ctx, "acme-apps", metav1.DeleteOptions{}); !errors.As(err, &oob) {
		t.Errorf("own client, delete the bound's namespace: %v, want an OutOfBoundError", err)
	}
	if _, err := typed.CoreV1().ConfigMaps("acme-apps").Get(ctx, "inside", metav1.GetOptions{}); err != nil {
		t.Errorf("own client, get inside the bound: %v", err)
	}
}

// TestOrgCannotReachAnothersCluster: org other reaches acme's cluster neither by name, nor
// by a registration of its own naming acme's cluster (the derived ref has no credential), nor
// by asking the store for acme's ref, nor by labelling a registration with acme's org.
func TestOrgCannotReachAnothersCluster(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	register(t, h, "b-acme", acme, b.Host, nil, selfContained(t, b, ""))
	f := newFleet(t, h)
	if _, err := f.Reach(as(t, other), "b-acme"); !errors.Is(err, fleet.ErrNoCluster) {
		t.Errorf("other Reach(b-acme) = %v, want ErrNoCluster", err)
	}
	register(t, h, "b-forged", other, b.Host, nil, nil)
	if _, err := f.Reach(as(t, other), "b-forged"); !errors.Is(err, fleet.ErrNoCredential) {
		t.Errorf("other Reach(b-forged) = %v, want ErrNoCredential", err)
	}
	acmeRef, _ := fleet.RefOf(acme, "b-acme")
	caller, _ := fleet.PathCaller(other)
	if _, err := f.Store.Credential(t.Context(), caller, acmeRef); err == nil || !strings.Contains(err.Error(), "refused to org \"other\"") {
		t.Errorf("other reading acme's ref: %v, want refused", err)
	}
	labelled := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "b-labelled", Labels: map[string]string{kinds.OrgLabel: acme}},
		Spec: fleetv1.ClusterSpec{Org: other, Endpoint: b.Host}}
	if err := h.Create(t.Context(), labelled); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Delete(context.Background(), labelled) })
	if _, err := f.Reach(as(t, acme), "b-labelled"); !errors.Is(err, fleet.ErrNoCluster) {
		t.Errorf("acme Reach(b-labelled, org other, label acme) = %v, want ErrNoCluster", err)
	}
	if _, err := f.Reach(t.Context(), "b-acme"); !errors.Is(err, fleet.ErrNoCaller) {
		t.Errorf("Reach without a caller = %v, want ErrNoCaller", err)
	}
	list, err := f.Registry.List(t.Context(), caller)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.Org != other {
			t.Errorf("other's list holds %s of org %s", c.Name, c.Org)
		}
	}
}

// TestCredentialRotation: a rotated Secret is used by the next Reach, without a restart; the
// first credential (a token B does not know) fails, the rotated one (B's admin) works.
func TestCredentialRotation(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	register(t, h, "b-rotating", acme, b.Host, []string{"default"}, selfContained(t, b, "not-a-token-b-knows"))
	f := newFleet(t, h)
	get := func() error {
		bound, err := f.Reach(as(t, acme), "b-rotating")
		if err != nil {
			return err
		}
		c, err := bound.One("default")
		if err != nil {
			return err
		}
		return c.List(t.Context(), &corev1.ConfigMapList{}, client.InNamespace("default"))
	}
	if err := get(); !apierrors.IsUnauthorized(err) {
		t.Fatalf("with the first credential: %v, want Unauthorized", err)
	}
	storeCredential(t, h, acme, "b-rotating", selfContained(t, b, ""))
	if err := get(); err != nil {
		t.Errorf("after rotation: %v", err)
	}
}

// TestNonRoutableRefused: without the test-only allowance, an apiserver on loopback is not
// dialled.
func TestNonRoutableRefused(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	register(t, h, "b-loopback", acme, b.Host, nil, selfContained(t, b, ""))
	f := newFleet(t, h)
	f.AllowNonRoutable = false
	bound, err := f.Reach(as(t, acme), "b-loopback")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	whole, _ := bound.WholeCluster()
	if err := whole.Client.List(ctx, &corev1.NamespaceList{}); !errors.Is(err, fleet.ErrNonRoutable) {
		t.Errorf("list on a loopback apiserver = %v, want ErrNonRoutable", err)
	}
}

// TestReadingSharesClients: Fleets made by Reading, each over its own readers, reach a
// registered cluster through one set of clients (built by whichever reached it first) and
// the scheme and AllowNonRoutable of the Fleet they read; a Forget through one drops them
// for all; a Fleet of its own builds its own.
func TestReadingSharesClients(t *testing.T) {
	h := home(t)
	b := clusterB(t)
	register(t, h, "b-shared", acme, b.Host, nil, selfContained(t, b, ""))
	root := &fleet.Fleet{Scheme: scheme(t), AllowNonRoutable: true}
	one := root.Reading(fleet.Registry{Reader: h}, fleet.SecretStore{Reader: h, Namespace: operatorNS})
	two := root.Reading(fleet.Registry{Reader: h}, fleet.SecretStore{Reader: h, Namespace: operatorNS})
	if !two.AllowNonRoutable || two.Scheme != root.Scheme {
		t.Fatalf("Reading: AllowNonRoutable %t, scheme %p: want the root's (true, %p)", two.AllowNonRoutable, two.Scheme, root.Scheme)
	}
	typed := func(f *fleet.Fleet) any {
		t.Helper()
		bound, err := f.Reach(as(t, acme), "b-shared")
		if err != nil {
			t.Fatalf("Reach: %v", err)
		}
		whole, err := bound.WholeCluster()
		if err != nil {
			t.Fatal(err)
		}
		return whole.Typed
	}
	first := typed(one)
	if typed(two) != first {
		t.Error("two Fleets of one Reading root built two sets of clients for one cluster")
	}
	if typed(newFleet(t, h)) == first {
		t.Error("a Fleet of its own shares the root's clients")
	}
	two.Forget(acme, "b-shared")
	if typed(one) == first {
		t.Error("a Forget through one Fleet left the clients for the other")
	}
}
