package reconcile_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
)

// acceptLog records the Accept header of every list and watch of Deployments and of
// Service CRs a cache sends.
type acceptLog struct {
	mu     sync.Mutex
	next   http.RoundTripper
	accept map[string]string // "deployments" / "services.<group>" -> the last Accept header
}

func (l *acceptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		p := req.URL.Path
		l.mu.Lock()
		switch {
		case strings.HasPrefix(p, "/apis/apps/v1/") && strings.HasSuffix(p, "/deployments"):
			l.accept["deployments"] = req.Header.Get("Accept")
		case strings.HasPrefix(p, "/apis/"+group+"/") && strings.HasSuffix(p, "/services"):
			l.accept["services."+group] = req.Header.Get("Accept")
		}
		l.mu.Unlock()
	}
	return l.next.RoundTrip(req)
}

// TestTypedChildren: a cache of TypedChildren keeps the children of built-in kinds in typed
// informers — listed and watched in protobuf, handlers and indexes given typed objects, one
// informer whatever type the caller names — and still answers an unstructured Get or List
// with the object the apiserver's JSON gives, field for field; a CR stays unstructured and
// JSON.
func TestTypedChildren(t *testing.T) {
	cfg := rest.CopyConfig(testbed.APIServer(t))
	installCRDs(t, cfg, mustClient(t, cfg))
	direct := mustClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "typed-children"
	objs := read(t, `
apiVersion: v1
kind: Namespace
metadata: {name: typed-children}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: typed-children, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0.0
        resources: {limits: {cpu: 250m, memory: 64Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: typed-children, labels: {app: other}}
spec:
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec: {containers: [{name: other, image: registry.example/other:1.0.0}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: typed-children}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: typed-children}
spec:
  serviceName: web
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1.0.0}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], storageClassName: standard, resources: {requests: {storage: 1Gi}}}
`)
	objs = append(objs, serviceCR("web", false, nil))
	objs[len(objs)-1].SetNamespace(ns)
	a := &apply.Applier{Client: direct, Manager: kinds.ManagerKinds}
	if bad := failures(a.Apply(ctx, objs)); len(bad) > 0 {
		t.Fatal(bad)
	}

	accepts := &acceptLog{accept: map[string]string{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { accepts.next = rt; return accepts })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, group); err != nil {
		t.Fatal(err)
	}
	c, err := reconcile.TypedChildren(kinds.Builtin(), group)(cfg, cache.Options{Scheme: scheme, Mapper: direct.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	unstructuredOf := func(gvk schema.GroupVersionKind) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	depGVK := appsv1.SchemeGroupVersion.WithKind("Deployment")
	crGVK := objs[len(objs)-1].GroupVersionKind()
	// an index on the unstructured kind is the typed informer's, and sees typed objects
	if err := c.IndexField(ctx, unstructuredOf(depGVK), "test.app", func(o client.Object) []string {
		if _, typed := o.(*appsv1.Deployment); !typed {
			t.Errorf("index function given %T, want *appsv1.Deployment", o)
		}
		return []string{o.GetLabels()["app"]}
	}); err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, unstructuredOf(depGVK))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var handed []string
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		mu.Lock()
		defer mu.Unlock()
		switch o := o.(type) {
		case *appsv1.Deployment:
			if o.Namespace == ns { // the test binary's other tests share the apiserver
				handed = append(handed, o.Name)
			}
		default:
			t.Errorf("handler given %T, want *appsv1.Deployment", o)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if typedInf, err := c.GetInformer(ctx, &appsv1.Deployment{}); err != nil || typedInf != inf {
		t.Errorf("the typed Deployment informer is not the one an unstructured caller got (err %v): two informers, two copies", err)
	}
	if _, err := c.GetInformer(ctx, unstructuredOf(crGVK)); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	for _, gvk := range []schema.GroupVersionKind{depGVK, {Version: "v1", Kind: "Service"}, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), crGVK} {
		got, want := unstructuredOf(gvk), unstructuredOf(gvk)
		key := client.ObjectKey{Namespace: ns, Name: "web"}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatalf("cache get %s: %v", gvk.Kind, err)
		}
		if err := direct.Get(ctx, key, want); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s from the cache differs from the apiserver's JSON:\ncache: %v\napiserver: %v", gvk.Kind, got.Object, want.Object)
		}
	}
	missing := unstructuredOf(depGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "absent"}, missing); !apierrors.IsNotFound(err) {
		t.Errorf("get of an absent Deployment: %v, want NotFound", err)
	}

	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{"test.app": "other"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != "other" || list.Items[0].GroupVersionKind() != depGVK {
		t.Fatalf("list by the index: %d items %v, want Deployment other", len(list.Items), list.Items)
	}
	want := unstructuredOf(depGVK)
	if err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, want); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(list.Items[0].Object, want.Object) {
		t.Errorf("listed Deployment differs from the apiserver's JSON:\ncache: %v\napiserver: %v", list.Items[0].Object, want.Object)
	}
	// MetadataOnly: the same item, its metadata only (what prune reads on every reconcile)
	metaList := &unstructured.UnstructuredList{}
	metaList.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := c.List(ctx, metaList, client.InNamespace(ns), client.MatchingFields{"test.app": "other"}, reconcile.MetadataOnly{}); err != nil {
		t.Fatal(err)
	}
	if len(metaList.Items) != 1 {
		t.Fatalf("metadata-only list: %d items, want 1", len(metaList.Items))
	}
	wantMeta := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": want.Object["metadata"]}
	if !equality.Semantic.DeepEqual(metaList.Items[0].Object, wantMeta) {
		t.Errorf("metadata-only Deployment differs from the apiserver's metadata:\ncache: %v\napiserver: %v", metaList.Items[0].Object, wantMeta)
	}
	mu.Lock()
	if len(handed) != 2 {
		t.Errorf("handler saw %v, want both Deployments", handed)
	}
	mu.Unlock()

	accepts.mu.Lock()
	defer accepts.mu.Unlock()
	if a := accepts.accept["deployments"]; !strings.HasPrefix(a, "application/vnd.kubernetes.protobuf") {
		t.Errorf("Deployments listed and watched with Accept %q, want protobuf", a)
	}
	if a := accepts.accept["services."+group]; !strings.HasPrefix(a, "application/json") {
		t.Errorf("Service CRs listed and watched with Accept %q, want JSON (a CR has no protobuf)", a)
	}
}

func mustClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
