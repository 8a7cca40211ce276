package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

func TestMain(m *testing.M) { testbed.Run(m) }

// counter counts the requests a client sends, watches apart.
type counter struct {
	mu   sync.Mutex
	reqs []string
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("watch") != "true" {
			c.mu.Lock()
			c.reqs = append(c.reqs, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

func (c *counter) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reqs
	c.reqs = nil
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func installCRDs(t *testing.T, c client.Client) {
	t.Helper()
	bundle, err := kinds.Bundle("hanzo.ai")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ssautil.ReadObjects(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "hanzo.ai", Version: "v1", Kind: "ServiceList"})
		return c.List(ctx, u) == nil, nil
	})
	if err != nil {
		t.Fatal("CRDs never served")
	}
}

// trimPod keeps of a pod what operator run's pod cache keeps of it (reconcile.TrimPod):
// identity, labels, owners, containers' names and images, the status.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
		ResourceVersion: p.ResourceVersion, Labels: p.Labels, OwnerReferences: p.OwnerReferences}, Status: p.Status}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	return out, nil
}

// planeOn starts a manager over cfg with the plane added, as operator run does, and returns
// the plane, an httptest server for it and the manager's client.
func planeOn(t *testing.T, cfg *rest.Config, auth *Authenticator, reg *prometheus.Registry, edit ...func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, "hanzo.ai"); err != nil {
		t.Fatal(err)
	}
	// Pods cached trimmed, as operator run caches them (reconcile.TrimPod, which drive may
	// not import): the plane must read a pod whole from the apiserver when asked for one.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Logger: logr.Discard(),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: trimPod}}}})
	if err != nil {
		t.Fatal(err)
	}
	mapper := mgr.GetRESTMapper()
	opts := DefaultOptions()
	opts.Keepalive = 150 * time.Millisecond
	c := Config{Options: opts, Auth: auth, Reader: mgr.GetCache(), Informers: mgr.GetCache(), Scheme: scheme,
		Registry: kinds.Builtin(), APIGroup: "hanzo.ai", Namespace: "universe-system",
		Served: func(gvk schema.GroupVersionKind) bool {
			_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			return err == nil
		}, Metrics: reg, Log: logr.Discard()}
	for _, e := range edit {
		e(&c)
	}
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// TestReadsComeFromTheCache: against a real apiserver, page views of the list, an
// application and its tree send the apiserver nothing; the application stream sends the
// ADDED burst, keepalives, and MODIFIED when the Deployment under a CR becomes available.
func TestReadsComeFromTheCache(t *testing.T) {
	base := testbed.APIServer(t)
	admin, err := client.New(base, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	installCRDs(t, admin)
	t.Logf("CRDs served after %s", time.Since(start))
	iss, err := testbed.NewOIDCIssuer("aud")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	ao := DefaultAuthOptions()
	ao.Issuer, ao.Audience, ao.AdminOrg = iss.URL, "aud", "platform"
	auth, err := NewAuthenticator(context.Background(), ao, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := &counter{}
	cfg := rest.CopyConfig(base)
	cfg.WrapTransport = reqs.wrap
	reg := prometheus.NewRegistry()
	s, srv := planeOn(t, cfg, auth, reg)
	token := iss.Token(map[string]any{"sub": "root", "aud": "aud", "org": "platform", "groups": []string{"admin"}})

	ctx := context.Background()
	const ns = "plane-cache"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"image": map[string]any{"repository": "ghcr.io/x/web", "tag": "v1"}, "replicas": int64(1),
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}}}}}
	if err := admin.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	// the child a Kind controller would build, created here: no controller runs in this test
	dep := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "ghcr.io/x/web:v1"}}}}}}}
	dep.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "hanzo.ai/v1", Kind: "Service", Name: "web", UID: cr.GetUID(), Controller: ptr.To(true)}})
	if err := admin.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}

	api := srv.URL + "/v1/deploy/api/v1"
	var tree ApplicationTree
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		tree = ApplicationTree{}
		return getJSON(t, api+"/applications/web/resource-tree?appNamespace="+ns, token, &tree) == 200 && len(tree.Nodes) == 1, nil
	})
	if err != nil {
		t.Fatalf("tree never showed the Deployment: %+v", tree)
	}
	t.Logf("tree served after %s", time.Since(start))

	// the stream, opened before the Deployment becomes available
	req, _ := http.NewRequest(http.MethodGet, api+"/stream/applications?appNamespace="+ns, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(sctx))
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	reqs.reset()
	for range 10 {
		var list ApplicationList
		if getJSON(t, api+"/applications", token, &list) != 200 || len(list.Items) != 1 {
			t.Fatalf("list: %+v", list)
		}
		getJSON(t, api+"/applications/web?appNamespace="+ns, token, &Application{})
		getJSON(t, api+"/applications/web/resource-tree?appNamespace="+ns, token, &ApplicationTree{})
	}
	if sent := reqs.reset(); len(sent) > 0 {
		t.Errorf("30 page views sent the apiserver %d requests: %v", len(sent), sent)
	}

	// the Deployment becomes available, as a controller-manager would report it
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(dep.GroupVersionKind())
	if err := admin.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedMap(live.Object, map[string]any{"observedGeneration": live.GetGeneration(), "replicas": int64(1),
		"updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}, "status")
	if err := admin.Status().Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	var seq []string
	keepalives := 0
	// a generous bound: a fresh-clone CI run, compiling beside it, took 48 s to serve the tree
	// above, and once 20 s went by here without the Deployment's watch event
	timeout := time.After(time.Minute)
	for done := false; !done; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("stream closed after %v", seq)
			}
			if line == ":" {
				keepalives++
				continue
			}
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var ev struct {
				Result ApplicationWatchEvent `json:"result"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("frame %q: %v", line, err)
			}
			var dh string
			for _, r := range ev.Result.Application.Status.Resources {
				if r.Kind == "Deployment" && r.Health != nil {
					dh = r.Health.Status
				}
			}
			seq = append(seq, ev.Result.Type+":"+dh)
			done = ev.Result.Type == EventModified && dh == HealthHealthy
		case <-timeout:
			t.Fatalf("no MODIFIED with a Healthy Deployment: %v", seq)
		}
	}
	if seq[0] != EventAdded+":"+HealthProgressing {
		t.Errorf("events %v: want ADDED (Deployment Progressing) first", seq)
	}
	if keepalives == 0 {
		t.Error("no keepalive comment on the stream")
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream content type %q", resp.Header.Get("Content-Type"))
	}

	t.Logf("stream MODIFIED after %s", time.Since(start))
	// a subscriber that does not read is dropped once its buffer is full
	slow := s.hub.subscribe(1, true)
	for i := range 3 {
		_ = unstructured.SetNestedField(live.Object, int64(1+i), "status", "observedGeneration")
		if err := admin.Get(ctx, client.ObjectKeyFromObject(dep), live); err != nil {
			t.Fatal(err)
		}
		live.SetAnnotations(map[string]string{"n": string(rune('a' + i))})
		if err := admin.Update(ctx, live); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * debounce)
	}
	select {
	case <-slow.gone:
	case <-time.After(10 * time.Second):
		t.Error("a subscriber that never reads was not dropped")
	}

	if n := testutil.ToFloat64(s.metrics.requests.WithLabelValues("GET /v1/deploy/api/v1/applications", "GET", "200")); n < 10 {
		t.Errorf("request metric for the list route: %v, want ≥ 10", n)
	}
}
