package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions/check"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
)

const group = "hanzo.ai"

// syncBuffer collects the manager's JSON log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// installCRDs applies the hanzo.ai bundle and waits until the apiserver serves it.
func installCRDs(t *testing.T, cfg *rest.Config, c client.Client) {
	t.Helper()
	bundle, err := kinds.Bundle(group)
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
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		mc, err := client.New(cfg, client.Options{})
		if err != nil {
			return false, err
		}
		// every Kind of the bundle: one served later restarts the manager (servedWatch)
		for _, crd := range crds {
			g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			if _, err := mc.RESTMapper().RESTMapping(schema.GroupKind{Group: g, Kind: k}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("CRDs never served: %v", err)
	}
}

// startKinds runs the Kind controllers in-process against cfg and returns their log.
func startKinds(t *testing.T, cfg *rest.Config, opts ...reconcile.SetupOption) *syncBuffer {
	t.Helper()
	logs, _ := runKinds(t, cfg, opts...)
	return logs
}

// runKinds is startKinds that also returns stop, which ends the manager (as a restart
// does) and waits for it; the test's cleanup calls it again harmlessly.
func runKinds(t *testing.T, cfg *rest.Config, opts ...reconcile.SetupOption) (*syncBuffer, func()) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, group); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := zap.New(zap.WriteTo(logs), zap.JSONEncoder(), zap.Level(zapcore.DebugLevel))
	ctrl.SetLogger(log)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// as operator run: children read from the Owns caches
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}}, NewCache: reconcile.TypedChildren(kinds.Builtin(), group),
		// as operator run: Pods cached only when our builders labelled them
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: reconcile.PodCache()}},
		// SetupKinds runs more than once in this test binary; controller names repeat
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcile.SetupKinds(mgr, kinds.Builtin(), group, log, opts...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return logs, stop
}

func serviceCR(name string, autoscaling bool, labels map[string]string) *unstructured.Unstructured {
	spec := map[string]any{
		"image":    map[string]any{"repository": "ghcr.io/example/" + name, "tag": "v1.0.0"},
		"replicas": int64(2),
		"ports":    []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}},
	}
	if autoscaling {
		spec["autoscaling"] = map[string]any{"enabled": true, "minReplicas": int64(2), "maxReplicas": int64(4)}
	}
	if labels != nil {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		spec["labels"] = l
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": "ctrl-test"},
		"spec":     spec,
	}}
	return u
}

func get(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(ctx, client.ObjectKey{Namespace: "ctrl-test", Name: name}, u)
}

func readyCondition(u *unstructured.Unstructured) (metav1.Condition, bool) {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		c := metav1.Condition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil {
			conds = append(conds, c)
		}
	}
	c := meta.FindStatusCondition(conds, "Ready")
	if c == nil {
		return metav1.Condition{}, false
	}
	return *c, true
}

var (
	gvkService     = schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Service"}
	gvkDeployment  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvkHPA         = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	gvkCoreService = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

// TestKindController drives the Service Kind controller on the full control plane (pods
// become Ready on kwok): readiness follows the Deployment, a crash loop is reported, an
// out-of-band edit is reverted with the editor named, and turning autoscaling off deletes
// that CR's HPA and nothing else.
func TestKindController(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	logs := startKinds(t, cfg)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ctrl-test"}}}
	crs := []*unstructured.Unstructured{ns, serviceCR("web", true, nil), serviceCR("other", true, nil),
		serviceCR("crashy", false, map[string]string{testbed.CrashLoopLabel: "true"})}
	for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, crs) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}

	t.Run("Ready follows the Deployment", func(t *testing.T) {
		poll(ctx, t, "web Ready", func() (bool, string) {
			cr, err := get(ctx, c, gvkService, "web")
			if err != nil {
				return false, err.Error()
			}
			cond, ok := readyCondition(cr)
			if !ok || cond.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("Ready=%+v", cond)
			}
			d, err := get(ctx, c, gvkDeployment, "web")
			if err != nil {
				t.Fatalf("CR Ready but its Deployment is missing: %v", err)
			}
			ready, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
			desired, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			if ready < desired || desired == 0 {
				t.Fatalf("CR Ready while its Deployment has %d/%d ready replicas", ready, desired)
			}
			if phase, _, _ := unstructured.NestedString(cr.Object, "status", "phase"); phase != "Running" {
				t.Errorf("phase = %q, want Running", phase)
			}
			return true, ""
		})
	})

	t.Run("crash loop keeps the CR not Ready with a clear message", func(t *testing.T) {
		var first metav1.Condition
		var restarts int64
		poll(ctx, t, "crashy reports CrashLoopBackOff", func() (bool, string) {
			cr, err := get(ctx, c, gvkService, "crashy")
			if err != nil {
				return false, err.Error()
			}
			cond, _ := readyCondition(cr)
			crashing := strings.Contains(cond.Message, "CrashLoopBackOff, last exit code 1")
			restarts, _, _ = unstructured.NestedInt64(cr.Object, "status", "restarts")
			first = cond
			return cond.Status == metav1.ConditionFalse && crashing && restarts > 0, fmt.Sprintf("%s (restarts %d)", cond.Message, restarts)
		})
		checkConditions(ctx, t, c, gvkService, "crashy")
		// the count rises in status.restarts; the condition stays as it was
		poll(ctx, t, "crashy's restart count rises", func() (bool, string) {
			cr, err := get(ctx, c, gvkService, "crashy")
			if err != nil {
				return false, err.Error()
			}
			now, _, _ := unstructured.NestedInt64(cr.Object, "status", "restarts")
			cond, _ := readyCondition(cr)
			if now > restarts && (cond.Message != first.Message || !cond.LastTransitionTime.Equal(&first.LastTransitionTime)) {
				t.Fatalf("the Ready condition changed with the restart count (%d -> %d): %+v, was %+v", restarts, now, cond, first)
			}
			return now > restarts, fmt.Sprintf("restarts %d", now)
		})
	})

	t.Run("status is the status manager's, conditions pass the kstatus checker", func(t *testing.T) {
		checkConditions(ctx, t, c, gvkService, "web")
		cr, err := get(ctx, c, gvkService, "web")
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, mf := range cr.GetManagedFields() {
			if mf.Manager == kinds.ManagerStatus {
				found = true
				if mf.Subresource != "status" || mf.Operation != metav1.ManagedFieldsOperationApply {
					t.Errorf("%s writes %q by %s, want the status subresource by Apply", mf.Manager, mf.Subresource, mf.Operation)
				}
			}
		}
		if !found {
			t.Errorf("no managedFields entry for %s: %+v", kinds.ManagerStatus, cr.GetManagedFields())
		}
	})

	t.Run("out-of-band edit is reverted and attributed", func(t *testing.T) {
		d, err := get(ctx, c, gvkDeployment, "web")
		if err != nil {
			t.Fatal(err)
		}
		want, _, _ := unstructured.NestedInt64(d.Object, "spec", "minReadySeconds")
		if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"minReadySeconds":99}}`)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "minReadySeconds reverted", func() (bool, string) {
			d, err := get(ctx, c, gvkDeployment, "web")
			if err != nil {
				return false, err.Error()
			}
			got, _, _ := unstructured.NestedInt64(d.Object, "spec", "minReadySeconds")
			return got == want, fmt.Sprintf("minReadySeconds=%d", got)
		})
		poll(ctx, t, "drift log line", func() (bool, string) {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, `"Reverted drift"`) && strings.Contains(line, "Deployment/ctrl-test/web") && strings.Contains(line, "kubectl-edit") {
					return true, ""
				}
			}
			return false, "no drift line naming kubectl-edit"
		})
	})

	t.Run("a deleted child is restored", func(t *testing.T) {
		svc, err := get(ctx, c, gvkCoreService, "web")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, svc); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "Service web recreated", func() (bool, string) {
			again, err := get(ctx, c, gvkCoreService, "web")
			if err != nil {
				return false, err.Error()
			}
			return again.GetUID() != svc.GetUID(), "same uid"
		})
	})

	t.Run("autoscaling off deletes that HPA only", func(t *testing.T) {
		for _, name := range []string{"web", "other"} {
			if _, err := get(ctx, c, gvkHPA, name); err != nil {
				t.Fatalf("HPA %s missing before the change: %v", name, err)
			}
		}
		cr, err := get(ctx, c, gvkService, "web")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"autoscaling":{"enabled":false}}}`))); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "HPA web deleted", func() (bool, string) {
			_, err := get(ctx, c, gvkHPA, "web")
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if _, err := get(ctx, c, gvkHPA, "other"); err != nil {
			t.Errorf("another CR's HPA was touched: %v", err)
		}
		if _, err := get(ctx, c, gvkDeployment, "web"); err != nil {
			t.Errorf("the CR's Deployment was deleted: %v", err)
		}
	})
}

// withConditions lets Flux's kstatus checker read the conditions of an unstructured CR.
type withConditions struct{ *unstructured.Unstructured }

func (w withConditions) GetConditions() []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (w withConditions) SetConditions([]metav1.Condition) { panic("read only") }

// checkConditions runs fluxcd/pkg/runtime/conditions/check on the CR as it is now: Ready
// always present, Reconciling and Stalled abnormal-true and never both, Ready False while
// either is True, observed generations consistent.
func checkConditions(ctx context.Context, t *testing.T, c client.Client, gvk schema.GroupVersionKind, name string) {
	t.Helper()
	cr, err := get(ctx, c, gvk, name)
	if err != nil {
		t.Fatal(err)
	}
	checker := check.NewChecker(c, &check.Conditions{NegativePolarity: []string{drive.ConditionReconciling, drive.ConditionStalled}})
	checker.DisableFetch = true
	fail, warn := checker.Check(ctx, withConditions{cr})
	if fail != nil {
		t.Errorf("%s %s: kstatus check failed: %v", gvk.Kind, name, fail)
	}
	if warn != nil {
		t.Errorf("%s %s: kstatus check warns: %v", gvk.Kind, name, warn)
	}
}

func poll(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}
