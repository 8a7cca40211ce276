package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

const testGroup = "hanzo.ai"

// startManager runs the Kind controllers and tenant onboarding in-process, as operator run
// --controllers kinds,tenants does, and returns the drive's rollout watch on the manager
// cache's Deployment informer, as setupApps wires it.
func startManager(t *testing.T, cfg *rest.Config, tenants drive.TenantOptions) (client.Client, *drive.DeploymentWatch) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, testGroup); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := kinds.Bundle(testGroup)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ssautil.ReadObjects(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: "test"}).Apply(context.Background(), crds) {
		if r.Err != nil {
			t.Fatalf("install %s: %v", r.Object, r.Err)
		}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mc, err := client.New(cfg, client.Options{})
		if err != nil {
			return false, err
		}
		_, err = mc.RESTMapper().RESTMapping(schema.GroupKind{Group: testGroup, Kind: "Service"}, "v1")
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	log := testr.New(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client:     client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcile.SetupKinds(mgr, kindRegistry(kinds.Builtin(), []string{loopKinds, loopDrive, loopTenants}), testGroup, log); err != nil {
		t.Fatal(err)
	}
	if err := (&drive.Tenants{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Opts: tenants, Log: log}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	watch, err := rolloutWatch(mgr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, watch
}

type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Eventf(_, _ runtime.Object, _, reason, _, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, reason+": "+fmt.Sprintf(note, args...))
}

// TestDriveAndKindControllerNeverFight: drive writes the CR's tag, the Kind controller
// rolls the Deployment on kwok, and the Deployment's image changes exactly once — no
// writer reverts the other. Tenant onboarding's namespace-deletion GC runs on the same
// full control plane.
func TestDriveAndKindControllerNeverFight(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	tenants := drive.DefaultTenantOptions()
	tenants.LabelKey = "test.universe/tenant"
	tenants.SourceSecret = types.NamespacedName{Namespace: "drive-fight", Name: "ghcr-pull-source"}
	c, rollouts := startManager(t, cfg, tenants)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "drive-fight"
	// org hanzo, labelled as the platform does: drive acts only on a row's own org's CRs
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kinds.OrgLabel: "hanzo"}}},
		client.FieldOwner("cloud-api")); err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testGroup + "/v1", "kind": "Service",
		"metadata": map[string]any{"name": "cloud", "namespace": ns},
		"spec": map[string]any{
			"image":    map[string]any{"repository": "ghcr.io/hanzo/cloud", "tag": "v1.2.3"},
			"replicas": int64(1),
			"ports":    []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}},
		},
	}}
	if err := c.Create(ctx, cr, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}
	images := func() string {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cloud"}, &d); err != nil {
			return err.Error()
		}
		var out []string
		for _, ct := range d.Spec.Template.Spec.Containers {
			out = append(out, ct.Image)
		}
		return strings.Join(out, ",")
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return images() == "ghcr.io/hanzo/cloud:v1.2.3", nil
	}); err != nil {
		t.Fatalf("the Kind controller never built the Deployment: %s", images())
	}
	// every image the Deployment's template carries from here on, in order
	var mu sync.Mutex
	var seen []string
	var dl appsv1.DeploymentList
	w, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	wi, err := w.Watch(ctx, &dl, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	go func() {
		for ev := range wi.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || ev.Type == watch.Deleted || d.Name != "cloud" {
				continue
			}
			img := d.Spec.Template.Spec.Containers[0].Image
			mu.Lock()
			if len(seen) == 0 || seen[len(seen)-1] != img {
				seen = append(seen, img)
			}
			mu.Unlock()
		}
	}()

	var rowMu sync.Mutex
	running := "v1.2.3"
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fight-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rowMu.Lock()
		defer rowMu.Unlock()
		fmt.Fprintf(w, `{"apps":[{"id":"hanzo/cloud/prod","org":"hanzo","app":"cloud","env":"prod","registry":"ghcr.io/hanzo/cloud",
		  "declaredTag":"v1.3.0","runningTag":%q,"cluster":"fight","namespace":%q}]}`, running, ns)
	}))
	defer platform.Close()
	tokPath := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokPath, []byte("fight-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := drive.NewPlatform(platform.URL, "", tf)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	apps := &drive.Apps{Platform: p, Client: c, Cluster: "fight", Mode: drive.ModeOn, Allow: drive.AllowList{"hanzo/cloud/prod"},
		// the backstop poll an hour: only the Deployment watch can end the wait in time
		RolloutTimeout: 2 * time.Minute, RolloutPoll: time.Hour, Watch: rollouts, GitOpsManager: kinds.ManagerGitOps,
		Recorder: ev, Log: testr.New(t)}
	start := time.Now()
	out, err := apps.Tick(ctx)
	if err != nil || len(out) != 1 || out[0].Wrote != "cr" || out[0].Rollout != "done" || out[0].Err != nil {
		t.Fatalf("Tick = %+v, %v; events %v", out, err, ev.got)
	}
	t.Logf("tag written to the CR and rolled out on kwok in %s", time.Since(start).Round(time.Millisecond))
	if len(ev.got) != 1 || !strings.HasPrefix(ev.got[0], "Driven: driving hanzo/cloud/prod from v1.2.3 to ghcr.io/hanzo/cloud:v1.3.0") {
		t.Errorf("events = %v", ev.got)
	}
	// more ticks and Kind reconciles (an annotation on the CR requeues it) change nothing
	for i := 0; i < 3; i++ {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":"%d"}}}`, i)
		if err := c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			rowMu.Lock()
			running = "v1.3.0" // the platform observes the rollout
			rowMu.Unlock()
		}
		if _, err := apps.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	mu.Lock()
	got := strings.Join(seen, " -> ")
	mu.Unlock()
	if got != "ghcr.io/hanzo/cloud:v1.2.3 -> ghcr.io/hanzo/cloud:v1.3.0" && got != "ghcr.io/hanzo/cloud:v1.3.0" {
		t.Errorf("Deployment images over time: %s; want one change to v1.3.0 and no revert", got)
	}
	live := cr.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), live); err != nil {
		t.Fatal(err)
	}
	if tag, _, _ := unstructured.NestedString(live.Object, "spec", "image", "tag"); tag != "v1.3.0" {
		t.Errorf("CR tag = %s after further reconciles", tag)
	}
	if len(ev.got) != 1 {
		t.Errorf("steady state emitted more events: %v", ev.got)
	}

	t.Run("tenant objects are deleted with their namespace", func(t *testing.T) {
		tenant := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fight-tenant", Labels: map[string]string{tenants.LabelKey: tenants.LabelValue}}}
		if err := c.Create(ctx, tenant, client.FieldOwner("cloud-api")); err != nil { // the platform makes tenants
			t.Fatal(err)
		}
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ghcr-pull-source", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}
		if err := c.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKey{Namespace: tenant.Name, Name: tenants.RoleBinding}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			return c.Get(ctx, key, &rbacv1.RoleBinding{}) == nil &&
				c.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: tenants.PullSecret}, &corev1.Secret{}) == nil, nil
		}); err != nil {
			t.Fatal("the tenant never got its RoleBinding and pull Secret")
		}
		if err := c.Delete(ctx, tenant); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(tenant), &corev1.Namespace{})), nil
		}); err != nil {
			t.Fatal("the tenant namespace was never deleted")
		}
		if err := c.Get(ctx, key, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("RoleBinding after namespace deletion: %v", err)
		}
	})
}

func TestKindRegistryLeavesAgentsToTheirLoop(t *testing.T) {
	ref := kinds.Ref{Placement: kinds.PlacementCanonical, Kind: "AgentDeployment"}
	if e := kinds.Builtin()[ref]; e.Loop != loopAgents {
		t.Fatalf("AgentDeployment's loop = %q", e.Loop)
	}
	if _, ok := kindRegistry(kinds.Builtin(), []string{loopKinds, loopAgents})[ref]; ok {
		t.Error("the Kind controller would run AgentDeployment next to the agents loop")
	}
	if _, ok := kindRegistry(kinds.Builtin(), []string{loopKinds})[ref]; !ok {
		t.Error("without the agents loop AgentDeployment lost its Kind controller (and its HandledByLoop (off) status)")
	}
	if err := checkLoops([]string{"kinds", "drive", "tenants", "agents", "gitops"}); err != nil {
		t.Error(err)
	}
	if err := checkLoops([]string{"drives"}); err == nil {
		t.Error("an unknown loop was accepted")
	}
}

func TestAwaitsStatusIsTheKindControllers(t *testing.T) {
	awaits := awaitsStatus(kindRegistry(kinds.Builtin(), []string{loopKinds, loopGitOps}), testGroup)
	for _, tc := range []struct {
		gk   schema.GroupKind
		want bool
	}{
		{schema.GroupKind{Group: testGroup, Kind: "Service"}, true},
		{schema.GroupKind{Group: testGroup, Kind: "App"}, true},
		{schema.GroupKind{Group: testGroup, Kind: "AgentDeployment"}, false}, // the agents loop's (Entry.Loop)
		{schema.GroupKind{Group: testGroup, Kind: "GitSync"}, false},         // the git sweep's own (External)
		{schema.GroupKind{Group: testGroup, Kind: "Cluster"}, false},         // the fleet's (External)
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, false},
	} {
		if got := awaits(tc.gk); got != tc.want {
			t.Errorf("awaitsStatus(%s) = %t, want %t", tc.gk, got, tc.want)
		}
	}
	// the group chosen at install, not another
	lux := awaitsStatus(kindRegistry(kinds.Builtin(), []string{loopKinds}), "lux.cloud")
	if !lux(schema.GroupKind{Group: "lux.cloud", Kind: "Service"}) || lux(schema.GroupKind{Group: "hanzo.ai", Kind: "Service"}) {
		t.Error("awaitsStatus ignores the install's API group")
	}
}
