package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
)

func healthDeployment(name, ns string) []byte {
	return fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  replicas: 1
  progressDeadlineSeconds: 60
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: c, image: "registry.example/app:1"}]
`, name, ns, name, name)
}

// gitopsReport is GET /gitops as a client sees it.
func gitopsReport(t *testing.T, sw *Sweeper) Report {
	t.Helper()
	rec := httptest.NewRecorder()
	sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/gitops", nil))
	var r Report
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("GET /gitops: %v\n%s", err, rec.Body.String())
	}
	return r
}

// waitHealth reads GET /gitops until name's health is want (no sweep runs meanwhile).
func waitHealth(t *testing.T, sw *Sweeper, name, want string) Report {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := gitopsReport(t, sw)
		for _, res := range r.Results {
			if res.Object.Name == name && res.Health == want {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /gitops never showed %s %s: %+v", name, want, r.Results)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pathHealth(r Report, p string) PathHealth {
	for _, ph := range r.Paths {
		if ph.Path == p {
			return ph
		}
	}
	return PathHealth{}
}

// setDeploymentStatus writes the Deployment's status as its controller would (the
// testbed runs no kube-controller-manager).
func setDeploymentStatus(t *testing.T, c client.Client, ns, name string, st appsv1.DeploymentStatus) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	st.ObservedGeneration = d.Generation
	d.Status = st
	if err := c.Status().Update(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
}

var rolledOut = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
	Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
	}}

// TestSweepHealth, on the apiserver: a Deployment the sweep applies is InProgress, holds
// the path that depends on it (DependencyNotReady naming it and its health), turns
// Current in GET /gitops from the watch alone (no sweep), which fires the sweep that
// applies the dependent; then Failed (progress deadline) shows in GET /gitops per object
// and per path, again without a sweep. Idle sweeps stay 0 requests.
func TestSweepHealth(t *testing.T) {
	const ns = "health-test"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	src := newMemSource(map[string][]byte{
		"infra/db/.universe.yaml": []byte("{}\n"),
		"infra/db/db.yaml":        healthDeployment("db", ns),
		"apps/web/.universe.yaml": []byte("dependsOn: [infra/db]\n"),
		"apps/web/web.yaml":       []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: " + ns + "}\ndata: {a: b}\n"),
	})
	reqs := &requests{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	scope, err := NewScope([]string{ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSweeper(counted, src, scope, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)

	// 1. Applied, not yet rolled out: InProgress, and its dependent is held on it.
	r := sw.Sweep(ctx)
	if res := resultOf(t, r, "db"); res.Action != apply.Created || res.Health != "InProgress" {
		t.Fatalf("db: %+v, want CREATE InProgress", res)
	}
	web := resultOf(t, r, "web")
	if web.Action != Held || web.Reason != string(ReasonDependencyNotReady) ||
		!strings.Contains(web.Message, "path infra/db is not healthy (apps/v1, Kind=Deployment") && !strings.Contains(web.Message, "Deployment/health-test/db InProgress") {
		t.Fatalf("web: %+v, want HELD DependencyNotReady naming db InProgress", web)
	}
	t.Logf("held: %s", web.Message)
	if ph := pathHealth(r, "infra/db"); ph.Health != "InProgress" || ph.Worst == nil || ph.Worst.Name != "db" {
		t.Errorf("path infra/db: %+v, want InProgress, worst db", ph)
	}
	if r.Summary.Health.InProgress != 1 {
		t.Errorf("summary health %+v", r.Summary.Health)
	}
	reqs.take()
	if r := sw.Sweep(ctx); !r.Idle || total(reqs.take()) != 0 {
		t.Errorf("idle sweep while db rolls out: idle %t", r.Idle)
	}

	// 2. Rolled out: Current in GET /gitops with no sweep, and the trigger fires for web.
	setDeploymentStatus(t, admin, ns, "db", rolledOut)
	got := waitHealth(t, sw, "db", "Current")
	if ph := pathHealth(got, "infra/db"); ph.Health != "Current" {
		t.Errorf("path infra/db after rollout: %+v", ph)
	}
	waitFired(t, sw, "db turning Current")
	r = sw.Sweep(ctx)
	if res := resultOf(t, r, "web"); res.Action != apply.Created || res.Health != "Current" {
		t.Errorf("web after db is Current: %+v, want CREATE Current", res)
	}
	if !r.Healthy() {
		t.Errorf("paths %+v, want all Current", r.Paths)
	}
	reqs.take()
	if r := sw.Sweep(ctx); !r.Idle || total(reqs.take()) != 0 {
		t.Errorf("idle sweep after the chain: idle %t", r.Idle)
	}

	// 3. Past its progress deadline: Failed, per object and per path, with no sweep.
	setDeploymentStatus(t, admin, ns, "db", appsv1.DeploymentStatus{Replicas: 1, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"},
	}})
	got = waitHealth(t, sw, "db", "Failed")
	ph := pathHealth(got, "infra/db")
	if ph.Health != "Failed" || ph.Counts.Failed != 1 || ph.Message == "" {
		t.Errorf("path infra/db: %+v, want Failed with its message", ph)
	}
	if got.Summary.Health.Failed != 1 || got.Summary.Health.Current != 1 {
		t.Errorf("summary health %+v, want 1 failed, 1 current", got.Summary.Health)
	}
	t.Logf("failed: %+v", ph)
	reqs.take()
	if r := sw.Sweep(ctx); !r.Idle || total(reqs.take()) != 0 {
		t.Errorf("idle sweep with db Failed: idle %t", r.Idle)
	}
}
