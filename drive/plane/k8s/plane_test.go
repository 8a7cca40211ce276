package k8s_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/drive/plane/k8s/fleetlink"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
)

const (
	group      = kinds.DefaultAPIGroup
	operatorNS = "universe-system"
	acme       = "acme"
	whole      = "target-whole"
	bounded    = "target-bounded"
	boundNS    = "acme-apps"
)

var (
	alice = k8s.Caller{Subject: "alice-sub", Name: "alice@acme", Org: acme}
	eve   = k8s.Caller{Subject: "eve-sub", Name: "eve@other", Org: "other"}
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := testbed.Run(m)
	if env.proxy != nil {
		env.proxy.Close()
	}
	os.Exit(code)
}

// recorder is the apiserver grants each op used, seen by a TLS proxy in front of the
// registered cluster: the plane's requests leave with the registered ServiceAccount's token
// through it.
type recorder struct {
	mu   sync.Mutex
	op   string
	seen map[string]map[k8s.Grant]bool
}

func (r *recorder) set(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.op = op
}

// record notes the grant req needed; a server-side apply that created its object (201)
// needed create too, as the apiserver authorizes it.
// The op is the one running when the request arrived (the proxy may finish after the op
// returned).
func (r *recorder) record(op string, req *http.Request, status int) {
	g, ok := k8s.GrantOf(req.Method, req.URL.Path, req.URL.Query())
	if !ok || op == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[op] == nil {
		r.seen[op] = map[k8s.Grant]bool{}
	}
	r.seen[op][g] = true
	if g.Verb == "patch" && req.Header.Get("Content-Type") == "application/apply-patch+yaml" && status == http.StatusCreated {
		g.Verb = "create"
		r.seen[op][g] = true
	}
}

func (r *recorder) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.op
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// env is the one control plane pair of this binary: the home apiserver (envtest: the
// registry and the credentials) and the registered cluster (the full control plane with
// its kwok node), registered twice for org acme: whole and bounded to acme-apps.
var env struct {
	once   sync.Once
	err    error
	home   client.Client
	target *kubernetes.Clientset
	tc     client.Client
	link   *fleetlink.Link
	plane  *k8s.Plane
	rec    *recorder
	proxy  *httptest.Server
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kinds.AddToScheme(s, group)
	return s
}

func setup(t *testing.T) {
	t.Helper()
	homeCfg := testbed.APIServer(t)
	targetCfg, _ := testbed.FullCluster(t)
	env.once.Do(func() { env.err = build(homeCfg, targetCfg) })
	if env.err != nil {
		t.Fatalf("set up the plane: %v", env.err)
	}
}

func build(homeCfg, targetCfg *rest.Config) error {
	ctx := context.Background()
	crds, err := kinds.CRDs(group)
	if err != nil {
		return err
	}
	var registry, kms []*apiextensionsv1.CustomResourceDefinition
	for i := range crds {
		switch crds[i].Spec.Names.Kind {
		case fleetv1.Kind:
			registry = append(registry, &crds[i])
		case "KMSSecret":
			if crds[i].Spec.Group == "kms."+group {
				kms = append(kms, &crds[i])
			}
		}
	}
	if _, err := envtest.InstallCRDs(homeCfg, envtest.CRDInstallOptions{CRDs: registry}); err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(targetCfg, envtest.CRDInstallOptions{CRDs: kms}); err != nil {
		return err
	}
	s := scheme()
	env.home, err = client.New(homeCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	env.tc, err = client.New(targetCfg, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	env.target, err = kubernetes.NewForConfig(targetCfg)
	if err != nil {
		return err
	}
	for _, ns := range []string{operatorNS} {
		if err := env.home.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, ns := range []string{"universe-plane", boundNS, "lux-chain"} {
		if err := env.tc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	closed, err := k8s.ClosedKinds(group)
	if err != nil {
		return err
	}
	// the registered credential: a ServiceAccount bound to the generated ClusterRole only
	role := k8s.ClusterRole("universe-k8s-plane", closed)
	objs := []client.Object{role,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "universe-plane", Name: "plane"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "universe-k8s-plane"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "universe-plane", Name: "plane"}}}}
	for _, o := range objs {
		if err := env.tc.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	tok, err := env.target.CoreV1().ServiceAccounts("universe-plane").CreateToken(ctx, "plane",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7200)}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// the recording proxy in front of the registered cluster
	tlsCfg := rest.CopyConfig(targetCfg)
	if err := rest.LoadTLSFiles(tlsCfg); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(tlsCfg.CAData)
	upstream, err := url.Parse(targetCfg.Host)
	if err != nil {
		return err
	}
	env.rec = &recorder{seen: map[string]map[k8s.Grant]bool{}}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	rp.FlushInterval = -1
	env.proxy = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := env.rec.current()
		env.rec.record(op, r, 0) // on arrival: a watch ends after its op returned
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		env.rec.record(op, r, sw.status)
	}))
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: env.proxy.Certificate().Raw})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: env.proxy.URL, CertificateAuthorityData: caPEM}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	kubeconfig, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	f := &fleet.Fleet{Registry: fleet.Registry{Reader: env.home}, Store: fleet.SecretStore{Reader: env.home, Namespace: operatorNS},
		Scheme: s, AllowNonRoutable: true}
	env.link = &fleetlink.Link{Fleet: f, Home: env.home, Namespace: operatorNS}
	env.plane, err = newPlane(true)
	if err != nil {
		return err
	}
	// registration is an op of the plane, as the org's own caller
	for name, nss := range map[string][]string{whole: nil, bounded: {boundNS}} {
		raw, _ := json.Marshal(ops.ClustersRegisterRequest{Cluster: name, Endpoint: env.proxy.URL, Provider: "testbed", Namespaces: nss, Kubeconfig: string(kubeconfig)})
		env.rec.set("clusters.register")
		rep, err := env.plane.Call(ctx, alice, "clusters.register", raw)
		if err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
		if r := rep.(ops.ClustersRegisterReply); r.Version == "" {
			return fmt.Errorf("register %s: the probe failed: %s", name, r.Probe)
		}
	}
	return nil
}

func newPlane(allowNamespaceDelete bool) (*k8s.Plane, error) {
	return k8s.New(k8s.Config{Fleet: env.link, APIGroup: group,
		Options: k8s.Options{AllowNamespaceDelete: allowNamespaceDelete, Rate: 1000, Burst: 1000},
		Audit:   k8s.EventAuditor{Client: env.home, Namespace: "default", ClusterAPIVersion: group + "/v1", Log: logr.Discard()}})
}

// call runs op as c through Plane.Call (the path every face takes), decoding the reply
// into rep; the error is the op's *k8s.Error.
func call(t *testing.T, c k8s.Caller, op string, req, rep any) *k8s.Error {
	t.Helper()
	return callOn(t, env.plane, c, op, req, rep)
}

func callOn(t *testing.T, p *k8s.Plane, c k8s.Caller, op string, req, rep any) *k8s.Error {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	env.rec.set(op)
	defer env.rec.set("")
	got, err := p.Call(t.Context(), c, op, raw)
	if err != nil {
		var e *k8s.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v is not a *k8s.Error", op, err)
		}
		return e
	}
	if rep != nil {
		data, _ := json.Marshal(got)
		if err := json.Unmarshal(data, rep); err != nil {
			t.Fatal(err)
		}
	}
	return nil
}

func mustCall(t *testing.T, c k8s.Caller, op string, req, rep any) {
	t.Helper()
	if e := call(t, c, op, req, rep); e != nil {
		t.Fatalf("%s: %v", op, e)
	}
}

func wantCode(t *testing.T, what string, e *k8s.Error, code string) {
	t.Helper()
	if e == nil || e.Code != code {
		t.Errorf("%s: %v, want code %s", what, e, code)
	}
}

func ensureNS(t *testing.T, name string) {
	t.Helper()
	err := env.tc.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func poll(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}}}}}}
}

func readyPods(t *testing.T, ns, selector string, n int) {
	t.Helper()
	poll(t, fmt.Sprintf("%d ready pods %s in %s", n, selector, ns), 90*time.Second, func(ctx context.Context) (bool, error) {
		list, err := env.target.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
}

// uncordon marks the kwok node schedulable again, directly.
func uncordon(t *testing.T) {
	_, _ = env.target.CoreV1().Nodes().Patch(context.Background(), testbed.NodeName, "application/merge-patch+json",
		[]byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{})
}

// TestCordonEvictsAndReportsBudgetRefusal: nodes.cordon marks the node unschedulable,
// evicts a pod no budget guards through the Eviction API, and reports the pod a
// PodDisruptionBudget guards as refused (DisruptionBudget), leaving it running; a bounded
// registration refuses the op; the op writes an audit Event naming who, org, cluster, what.
func TestCordonEvictsAndReportsBudgetRefusal(t *testing.T) {
	setup(t)
	ctx := t.Context()
	const ns = "cordon-a"
	ensureNS(t, ns)
	t.Cleanup(func() { uncordon(t) })
	if err := env.tc.Create(ctx, deployment(ns, "guarded", 1)); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if err := env.tc.Create(ctx, pdb); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	loose := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "loose", Labels: map[string]string{"app": "loose"}},
		Spec: corev1.PodSpec{NodeName: testbed.NodeName, Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	if err := env.tc.Create(ctx, loose); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	readyPods(t, ns, "app=guarded", 1)
	readyPods(t, ns, "app=loose", 1)
	poll(t, "the budget observed", 60*time.Second, func(ctx context.Context) (bool, error) {
		var p policyv1.PodDisruptionBudget
		if err := env.tc.Get(ctx, client.ObjectKeyFromObject(pdb), &p); err != nil {
			return false, nil
		}
		return p.Status.ObservedGeneration >= p.Generation && p.Status.CurrentHealthy == 1, nil
	})

	wantCode(t, "cordon through the bounded registration", call(t, alice, "nodes.cordon", ops.NodesCordonRequest{Cluster: bounded, Node: testbed.NodeName}, nil), k8s.CodeOutOfBound)
	wantCode(t, "cordon of another org's cluster", call(t, eve, "nodes.cordon", ops.NodesCordonRequest{Cluster: whole, Node: testbed.NodeName}, nil), k8s.CodeNotFound)

	var rep ops.NodesCordonReply
	mustCall(t, alice, "nodes.cordon", ops.NodesCordonRequest{Cluster: whole, Node: testbed.NodeName}, &rep)
	if !rep.Unschedulable {
		t.Errorf("reply: unschedulable false")
	}
	n, err := env.target.CoreV1().Nodes().Get(ctx, testbed.NodeName, metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("the node is not unschedulable: %v", err)
	}
	if !slices.Contains(rep.Evicted, ops.PodRef{Namespace: ns, Name: "loose"}) {
		t.Errorf("evicted %v, want %s/loose among them", rep.Evicted, ns)
	}
	var refused *ops.EvictionRefusal
	for i := range rep.Refused {
		if rep.Refused[i].Pod.Namespace == ns {
			refused = &rep.Refused[i]
		}
	}
	if refused == nil || refused.Reason != "DisruptionBudget" {
		t.Fatalf("refused %+v, want the guarded pod refused by its DisruptionBudget", rep.Refused)
	}
	pod, err := env.target.CoreV1().Pods(ns).Get(ctx, refused.Pod.Name, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil {
		t.Errorf("the guarded pod was forced out: %v", err)
	}
	// the audit Event on the home cluster
	poll(t, "the audit Event", 10*time.Second, func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := env.home.List(ctx, &evs, client.InNamespace("default"), client.MatchingLabels{"k8s-plane.openuniverse.dev/op": "nodes.cordon"}); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == whole && e.Reason == "Operation" && e.Action == "nodes.cordon" &&
				e.Message == fmt.Sprintf("nodes.cordon by alice@acme (alice-sub) of org acme on cluster %s: %s: ok", whole, testbed.NodeName) {
				return true, nil
			}
		}
		return false, nil
	})
	rep = ops.NodesCordonReply{}
	mustCall(t, alice, "nodes.cordon", ops.NodesCordonRequest{Cluster: whole, Node: testbed.NodeName, Uncordon: true}, &rep)
	if rep.Unschedulable || len(rep.Evicted) > 0 {
		t.Errorf("uncordon: %+v", rep)
	}
}

// TestExpandClaimOnlyGrows: volumes.expandClaim grows a bound claim to a size in GiB on
// the cluster, and refuses the same size, a smaller one and zero; nothing deletes a claim
// (PersistentVolumeClaim is not in resources.*'s closed set).
func TestExpandClaimOnlyGrows(t *testing.T) {
	setup(t)
	ctx := t.Context()
	const ns = "vol-a"
	ensureNS(t, ns)
	sc := `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"expandable"},"provisioner":"kubernetes.io/no-provisioner","allowVolumeExpansion":true,"volumeBindingMode":"Immediate"}`
	if _, err := env.target.StorageV1().RESTClient().Post().AbsPath("/apis/storage.k8s.io/v1/storageclasses").Body([]byte(sc)).DoRaw(ctx); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "expand-pv"}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: "expandable", Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/expand-pv"}}}}
	if err := env.tc.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To("expandable"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := env.tc.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	poll(t, "the claim bound", 60*time.Second, func(ctx context.Context) (bool, error) {
		var c corev1.PersistentVolumeClaim
		err := env.tc.Get(ctx, client.ObjectKeyFromObject(pvc), &c)
		return err == nil && c.Status.Phase == corev1.ClaimBound, nil
	})
	req := ops.VolumesExpandClaimRequest{Cluster: whole, Namespace: ns, Claim: "data"}
	for _, size := range []int64{1, 0, -3} {
		req.SizeGiB = size
		wantCode(t, fmt.Sprintf("expand to %d GiB", size), call(t, alice, "volumes.expandClaim", req, nil), k8s.CodeBadRequest)
	}
	req.SizeGiB = 3
	var rep ops.VolumesExpandClaimReply
	mustCall(t, alice, "volumes.expandClaim", req, &rep)
	if rep.Previous != "1Gi" || rep.Claim.Request != "3Gi" {
		t.Errorf("reply %+v, want 1Gi -> 3Gi", rep)
	}
	var live corev1.PersistentVolumeClaim
	if err := env.tc.Get(ctx, client.ObjectKeyFromObject(pvc), &live); err != nil {
		t.Fatal(err)
	}
	if got := live.Spec.Resources.Requests.Storage().String(); got != "3Gi" {
		t.Errorf("the claim requests %s on the cluster, want 3Gi", got)
	}
	req.SizeGiB = 2
	wantCode(t, "shrink to 2 GiB", call(t, alice, "volumes.expandClaim", req, nil), k8s.CodeBadRequest)
	req.Cluster, req.SizeGiB = bounded, 4
	wantCode(t, "expand outside the bound", call(t, alice, "volumes.expandClaim", req, nil), k8s.CodeOutOfBound)
	wantCode(t, "delete a claim through resources.delete", call(t, alice, "resources.delete", ops.ResourcesDeleteRequest{
		ResourceRef: ops.ResourceRef{Cluster: whole, Namespace: ns, APIVersion: "v1", Kind: "PersistentVolumeClaim"}, Name: "data"}, nil), k8s.CodeForbidden)
	if err := env.tc.Get(ctx, client.ObjectKeyFromObject(pvc), &live); err != nil || live.DeletionTimestamp != nil {
		t.Errorf("the claim is gone or going: %v", err)
	}

	// nodes.volumeStats: the claim is measured, or listed unmeasured — never absent
	var vs ops.NodesVolumeStatsReply
	mustCall(t, alice, "nodes.volumeStats", ops.NodesVolumeStatsRequest{Cluster: whole, Namespace: ns}, &vs)
	ref := ops.PodRef{Namespace: ns, Name: "data"}
	measured := slices.ContainsFunc(vs.Claims, func(c ops.ClaimUsage) bool { return c.Claim == ref })
	if vs.NodesTotal < 1 || vs.NodesRead+len(vs.NodeErrors) != vs.NodesTotal {
		t.Errorf("nodesRead %d + node errors %v != nodesTotal %d", vs.NodesRead, vs.NodeErrors, vs.NodesTotal)
	}
	if measured == slices.Contains(vs.Unmeasured, ref) {
		t.Errorf("claim %v: measured %t and unmeasured %v: want exactly one", ref, measured, vs.Unmeasured)
	}
	if vs.NodesRead == 0 && (len(vs.Claims) > 0 || !slices.Contains(vs.Unmeasured, ref)) {
		t.Errorf("no node read, yet claims %v / unmeasured %v", vs.Claims, vs.Unmeasured)
	}
	t.Logf("volumeStats: nodesRead %d of %d, unmeasured %v, node errors %v", vs.NodesRead, vs.NodesTotal, vs.Unmeasured, vs.NodeErrors)
	wantCode(t, "volumeStats of the bounded registration", call(t, alice, "nodes.volumeStats", ops.NodesVolumeStatsRequest{Cluster: bounded, Namespace: boundNS}, nil), k8s.CodeOutOfBound)
}

// TestNamespaceDeleteGated: namespaces.delete answers Forbidden on a plane that does not
// allow it, Forbidden for a bounded registration on one that does (even for the bound's own
// namespace), BadRequest without the name repeated, and deletes otherwise.
func TestNamespaceDeleteGated(t *testing.T) {
	setup(t)
	const ns = "doomed"
	ensureNS(t, ns)
	off, err := newPlane(false)
	if err != nil {
		t.Fatal(err)
	}
	req := ops.NamespacesDeleteRequest{Cluster: whole, Namespace: ns, Confirm: ns}
	wantCode(t, "delete on a plane without the gate", callOn(t, off, alice, "namespaces.delete", req, nil), k8s.CodeForbidden)
	wantCode(t, "delete of the bound's namespace", call(t, alice, "namespaces.delete", ops.NamespacesDeleteRequest{Cluster: bounded, Namespace: boundNS, Confirm: boundNS}, nil), k8s.CodeForbidden)
	wantCode(t, "delete without confirm", call(t, alice, "namespaces.delete", ops.NamespacesDeleteRequest{Cluster: whole, Namespace: ns}, nil), k8s.CodeBadRequest)
	var live corev1.Namespace
	if err := env.tc.Get(t.Context(), client.ObjectKey{Name: boundNS}, &live); err != nil || live.DeletionTimestamp != nil {
		t.Fatalf("the bound's namespace is going: %v", err)
	}
	var rep ops.NamespacesDeleteReply
	mustCall(t, alice, "namespaces.delete", req, &rep)
	if err := env.tc.Get(t.Context(), client.ObjectKey{Name: ns}, &live); err == nil && live.DeletionTimestamp == nil {
		t.Errorf("namespace %s is not terminating", ns)
	}
}

// TestMetricsPodsAvailable: without a metrics API the reply says available: false and
// holds no usage (not zeros).
func TestMetricsPodsAvailable(t *testing.T) {
	setup(t)
	var rep ops.MetricsPodsReply
	mustCall(t, alice, "metrics.pods", ops.MetricsPodsRequest{Cluster: bounded, Namespace: boundNS}, &rep)
	if rep.Available || rep.Pods != nil || rep.Reason == "" {
		t.Errorf("reply %+v, want available false with a reason and no usage", rep)
	}
	wantCode(t, "metrics outside the bound", call(t, alice, "metrics.pods", ops.MetricsPodsRequest{Cluster: bounded, Namespace: "lux-chain"}, nil), k8s.CodeOutOfBound)
}

// TestWatchBoundedWithCursor: resources.watch without a cursor returns the cursor to start
// from; from it, the change an apply made within waitSeconds, and a cursor past it; a
// cursor too old answers expired with a fresh cursor, not an empty page; outside the bound
// it is refused.
func TestWatchBoundedWithCursor(t *testing.T) {
	setup(t)
	ref := ops.ResourceRef{Cluster: bounded, Namespace: boundNS, APIVersion: "v1", Kind: "ConfigMap"}
	var start ops.ResourcesWatchReply
	mustCall(t, alice, "resources.watch", ops.ResourcesWatchRequest{ResourceRef: ref}, &start)
	if start.Cursor == "" || len(start.Events) != 0 || start.Expired {
		t.Fatalf("start: %+v", start)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "watched"}, "data": map[string]any{"k": "v"}}
	mustCall(t, alice, "resources.apply", ops.ResourcesApplyRequest{ResourceRef: ref, Object: cm}, nil)
	began := time.Now()
	var rep ops.ResourcesWatchReply
	mustCall(t, alice, "resources.watch", ops.ResourcesWatchRequest{ResourceRef: ref, Cursor: start.Cursor, WaitSeconds: 2}, &rep)
	if took := time.Since(began); took > 8*time.Second {
		t.Errorf("a 2 s watch took %s", took)
	}
	found := slices.ContainsFunc(rep.Events, func(e ops.WatchEvent) bool {
		md, _ := e.Object["metadata"].(map[string]any)
		return e.Type == "ADDED" && md["name"] == "watched"
	})
	if !found || rep.Cursor == start.Cursor || rep.Expired {
		t.Errorf("watch from the cursor: %d events, cursor %s (start %s), expired %t; want the ADDED ConfigMap", len(rep.Events), rep.Cursor, start.Cursor, rep.Expired)
	}
	// expire the start cursor as a long-running cluster does: etcd compacted past it, and
	// an apiserver whose watch cache holds nothing older (restarted: it relists at now)
	testbed.CompactEtcd(t)
	testbed.RestartAPIServer(t, 0)
	var old ops.ResourcesWatchReply
	mustCall(t, alice, "resources.watch", ops.ResourcesWatchRequest{ResourceRef: ref, Cursor: start.Cursor, WaitSeconds: 2}, &old)
	if !old.Expired || old.Cursor == "" || old.Cursor == start.Cursor || len(old.Events) != 0 {
		t.Errorf("watch from an expired cursor: %+v, want expired with a fresh cursor", old)
	}
	outside := ref
	outside.Namespace = "lux-chain"
	wantCode(t, "watch outside the bound", call(t, alice, "resources.watch", ops.ResourcesWatchRequest{ResourceRef: outside}, nil), k8s.CodeOutOfBound)
}

// TestApplyClosedSet: resources.apply takes a kind of the closed set only — a Secret, a
// Namespace and a ClusterRole are refused before any request — and applies a KMSSecret (a
// universe Kind at kms.<group>) returning no secret material.
func TestApplyClosedSet(t *testing.T) {
	setup(t)
	for _, k := range []struct{ apiVersion, kind string }{{"v1", "Secret"}, {"v1", "Namespace"}, {"rbac.authorization.k8s.io/v1", "ClusterRole"}} {
		obj := map[string]any{"apiVersion": k.apiVersion, "kind": k.kind, "metadata": map[string]any{"name": "x"}}
		wantCode(t, "apply "+k.kind, call(t, alice, "resources.apply", ops.ResourcesApplyRequest{
			ResourceRef: ops.ResourceRef{Cluster: whole, Namespace: boundNS, APIVersion: k.apiVersion, Kind: k.kind}, Object: obj}, nil), k8s.CodeForbidden)
	}
	mismatch := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "x"}}
	wantCode(t, "apply a Secret named a ConfigMap", call(t, alice, "resources.apply", ops.ResourcesApplyRequest{
		ResourceRef: ops.ResourceRef{Cluster: whole, Namespace: boundNS, APIVersion: "v1", Kind: "ConfigMap"}, Object: mismatch}, nil), k8s.CodeBadRequest)
	if err := env.tc.Get(t.Context(), client.ObjectKey{Namespace: boundNS, Name: "x"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Secret x exists: %v", err)
	}
	kms := map[string]any{"apiVersion": "kms." + group + "/v1", "kind": "KMSSecret", "metadata": map[string]any{"name": "db"},
		"spec": map[string]any{}}
	var rep ops.ResourcesApplyReply
	if e := call(t, alice, "resources.apply", ops.ResourcesApplyRequest{ResourceRef: ops.ResourceRef{Cluster: bounded, Namespace: boundNS,
		APIVersion: "kms." + group + "/v1", Kind: "KMSSecret"}, Object: kms}, &rep); e != nil && e.Code == k8s.CodeForbidden {
		t.Errorf("KMSSecret refused: %v", e)
	} else if e != nil {
		t.Logf("KMSSecret apply (validation of an empty spec): %v", e)
	}
	for _, op := range ops.All {
		if op.Name == "secrets.get" || op.Group == "secrets" {
			t.Errorf("a secrets op: %s", op.Name)
		}
	}
}

// TestOrgsAndBounds: another org reaches neither registration (NotFound, the same answer
// as a name nobody registered); the bounded registration lists only its namespaces and
// refuses every other one, by name.
func TestOrgsAndBounds(t *testing.T) {
	setup(t)
	var list ops.ClustersListReply
	mustCall(t, eve, "clusters.list", ops.ClustersListRequest{}, &list)
	if len(list.Clusters) != 0 {
		t.Errorf("org other lists %v", list.Clusters)
	}
	wantCode(t, "other gets acme's cluster", call(t, eve, "clusters.get", ops.ClustersGetRequest{Cluster: whole}, nil), k8s.CodeNotFound)
	wantCode(t, "acme gets a name nobody registered", call(t, alice, "clusters.get", ops.ClustersGetRequest{Cluster: "nobody"}, nil), k8s.CodeNotFound)
	wantCode(t, "a token with no org", call(t, k8s.Caller{Subject: "x"}, "clusters.list", ops.ClustersListRequest{}, nil), k8s.CodeForbidden)
	mustCall(t, alice, "clusters.list", ops.ClustersListRequest{}, &list)
	var names []string
	for _, c := range list.Clusters {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{bounded, whole}) {
		t.Errorf("acme lists %v", names)
	}
	var nss ops.NamespacesListReply
	mustCall(t, alice, "namespaces.list", ops.NamespacesListRequest{Cluster: bounded}, &nss)
	if len(nss.Namespaces) != 1 || nss.Namespaces[0].Name != boundNS {
		t.Errorf("bounded namespaces.list: %+v", nss.Namespaces)
	}
	e := call(t, alice, "pods.list", ops.PodsListRequest{Cluster: bounded, Namespace: "lux-chain"}, nil)
	wantCode(t, "pods outside the bound", e, k8s.CodeOutOfBound)
	if e != nil && !contains(e.Msg, `"lux-chain"`, "[acme-apps]") {
		t.Errorf("the refusal names neither the namespace nor the bound: %s", e.Msg)
	}
	wantCode(t, "nodes.list of the bounded registration", call(t, alice, "nodes.list", ops.NodesListRequest{Cluster: bounded}, nil), k8s.CodeOutOfBound)
	var st ops.ClustersStatusReply
	mustCall(t, alice, "clusters.status", ops.ClustersStatusRequest{Cluster: bounded}, &st)
	if !st.Reachable || st.Version == "" {
		t.Errorf("status of the bounded registration: %+v", st)
	}
	wantCode(t, "unknown field", func() *k8s.Error {
		_, err := env.plane.Call(t.Context(), alice, "clusters.get", []byte(`{"cluster":"x","org":"acme"}`))
		var ke *k8s.Error
		errors.As(err, &ke)
		return ke
	}(), k8s.CodeBadRequest)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestRBACTable: every op's apiserver requests, seen by the proxy, are grants its row of
// the kind table holds (an op using a verb or resource the table lacks fails here, and
// against the generated ClusterRole the registered credential is bound to), and every
// grant of every row was used by its op (a grant no op uses fails here). resources.*
// rows are checked per verb: each used verb is the row's, on a kind of the closed set.
// It runs last: the other tests of this binary exercise the ops.
func TestRBACTable(t *testing.T) {
	setup(t)
	exerciseEveryOp(t)
	grants := k8s.Grants(env.plane.Kinds())
	env.rec.mu.Lock()
	defer env.rec.mu.Unlock()
	for _, op := range ops.All {
		if op.Scope == ops.Home {
			if len(grants[op.Name]) > 0 {
				t.Errorf("%s works on the home registry but grants %v on registered clusters", op.Name, grants[op.Name])
			}
			continue
		}
		seen := env.rec.seen[op.Name]
		for g := range seen {
			if !slices.Contains(grants[op.Name], g) {
				t.Errorf("%s used %s, which its row of the kind table lacks", op.Name, g)
			}
		}
		if verbs, ok := ops.ResourceVerbs[op.Name]; ok {
			for _, v := range verbs {
				if !slices.ContainsFunc(mapKeys(seen), func(g k8s.Grant) bool { return g.Verb == v }) {
					t.Errorf("%s: the table grants %s on the closed set, no call used it", op.Name, v)
				}
			}
			continue
		}
		for _, g := range grants[op.Name] {
			if !seen[g] {
				t.Errorf("%s: the table grants %s, no call of the op used it", op.Name, g)
			}
		}
	}
	// the ClusterRole is exactly the union of the rows
	role := k8s.ClusterRole("r", env.plane.Kinds())
	union := map[k8s.Grant]bool{}
	for _, gs := range grants {
		for _, g := range gs {
			union[g] = true
		}
	}
	n := 0
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				n++
				if !union[k8s.Grant{APIGroup: r.APIGroups[0], Resource: res, Verb: v}] {
					t.Errorf("the ClusterRole grants %s %s.%s, no row does", v, res, r.APIGroups[0])
				}
			}
		}
	}
	if n != len(union) {
		t.Errorf("the ClusterRole holds %d grants, the rows %d", n, len(union))
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("the ClusterRole grants secrets: %v", r)
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}
