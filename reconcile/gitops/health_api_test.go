package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/gitsync"
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
	const ns, stateNS, group = "health-test", "health-state", "hanzo.ai"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{ns, stateNS} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	installGitSyncCRD(t, cfg, group)
	kubeconfig := writeKubeconfig(t, cfg)
	gs := func() gitsync.GitSyncStatus {
		t.Helper()
		var o gitsync.GitSync
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gitsync.GroupVersion(group).WithKind(gitsync.Kind))
		if err := admin.Get(ctx, client.ObjectKey{Namespace: stateNS, Name: "gitops"}, u); err != nil {
			t.Fatalf("GitSync: %v", err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
			t.Fatal(err)
		}
		return o.Status
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
	opts := DefaultOptions()
	opts.State = State{Namespace: stateNS, Inventory: "inv", Suspend: "suspend", Status: "gitops", APIGroup: group}
	sw, err := NewSweeper(counted, src, scope, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)

	idle := func(step string) {
		t.Helper()
		reqs.take()
		r := sw.Sweep(ctx)
		if got := reqs.take(); !r.Idle || total(got) != 0 {
			t.Errorf("%s: idle %t, %d requests %v, want 0", step, r.Idle, total(got), got)
		}
	}

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
	st := gs()
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Held" {
		t.Errorf("GitSync Ready %+v, want False Held", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, ConditionHealthy); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "InProgress" || !strings.Contains(c.Message, "db") {
		t.Errorf("GitSync Healthy %+v, want False InProgress naming db", c)
	}
	if st.ObservedGeneration == 0 || st.Health.InProgress != 1 || len(st.UnhealthyPaths) == 0 {
		t.Errorf("GitSync status %+v", st)
	}
	idle("idle sweep while db rolls out")

	// 2. Rolled out: Current in GET /gitops with no sweep, and the trigger fires for web;
	// kubectl wait, started before, returns once the sweep it fired makes GitSync Ready.
	wait := exec.CommandContext(t.Context(), filepath.Join(testbed.BinDir(), "kubectl"), "--kubeconfig", kubeconfig,
		"-n", stateNS, "wait", "gitsyncs."+group+"/gitops", "--for=condition="+ConditionReady, "--timeout=60s")
	wait.Env = append(os.Environ(), "HOME="+filepath.Dir(kubeconfig))
	var waitOut strings.Builder
	wait.Stdout, wait.Stderr = &waitOut, &waitOut
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
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
	if err := wait.Wait(); err != nil {
		t.Fatalf("kubectl wait --for=condition=Ready: %v\n%s", err, waitOut.String())
	}
	t.Logf("kubectl wait: %s", strings.TrimSpace(waitOut.String()))
	if c := meta.FindStatusCondition(gs().Conditions, ConditionHealthy); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("GitSync Healthy %+v after the chain, want True", c)
	}
	idle("idle sweep after the chain")

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
	// the status object follows without a sweep: Stalled
	deadline := time.Now().Add(15 * time.Second)
	for c := meta.FindStatusCondition(gs().Conditions, ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Failed"; c = meta.FindStatusCondition(gs().Conditions, ConditionStalled) {
		if time.Now().After(deadline) {
			t.Fatalf("GitSync Stalled %+v, want True Failed", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// the next sweep holds web again (applied, in sync, but what it depends on is Failed),
	// and the sweep after it is idle
	r = sw.Sweep(ctx)
	if res := resultOf(t, r, "web"); res.Action != Held || !strings.Contains(res.Message, "Deployment/health-test/db Failed") {
		t.Errorf("web with db Failed: %+v, want HELD naming db Failed", res)
	}
	if c := meta.FindStatusCondition(gs().Conditions, ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("GitSync Ready %+v with db Failed, want False", c)
	}
	idle("idle sweep with db Failed")
}

// installGitSyncCRD installs the GitSync CRD of group from the operator's own CRDs.
func installGitSyncCRD(t *testing.T, cfg *rest.Config, group string) {
	t.Helper()
	installKindCRD(t, cfg, group, gitsync.Kind)
}

// installKindCRD installs the CRD of kind in group from the operator's own CRDs.
func installKindCRD(t *testing.T, cfg *rest.Config, group, kind string) {
	t.Helper()
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	var want []*apiextensionsv1.CustomResourceDefinition
	for i := range crds {
		if crds[i].Spec.Names.Kind == kind && crds[i].Spec.Group == group {
			want = append(want, &crds[i])
		}
	}
	if len(want) != 1 {
		t.Fatalf("no %s CRD in group %s", kind, group)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: want}); err != nil {
		t.Fatal(err)
	}
}

// TestSweepAwaitsOurStatus, on the apiserver: a CR of a Kind the operator's own controllers
// materialize (Options.AwaitsStatus) has no status right after the sweep applies it.
// kstatus alone reads that as Current; the sweep reports it InProgress, saying why, and
// holds the path that depends on it, until the CR's first status (observedGeneration,
// Ready) arrives through the watch, which makes it Current and fires the sweep that
// applies the dependent.
func TestSweepAwaitsOurStatus(t *testing.T) {
	const ns = "awaits-test"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	installKindCRD(t, cfg, "hanzo.ai", "Service")
	src := newMemSource(map[string][]byte{
		"db/.universe.yaml":   []byte("{}\n"),
		"db/svc.yaml":         serviceFile(ns, 1, 1),
		"apps/.universe.yaml": []byte("dependsOn: [db]\n"),
		"apps/web.yaml":       []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: " + ns + "}\ndata: {a: b}\n"),
	})
	scope, err := NewScope([]string{ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	ours := schema.GroupKind{Group: "hanzo.ai", Kind: "Service"}
	opts.AwaitsStatus = func(gk schema.GroupKind) bool { return gk == ours }
	sw, err := NewSweeper(cfg, src, scope, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sw.Close)

	r := sw.Sweep(ctx)
	res := resultOf(t, r, "svc-0001")
	if res.Action != apply.Created || res.Health != "InProgress" || !strings.Contains(res.HealthMessage, "first status") {
		t.Fatalf("svc-0001 without status: %+v, want CREATE InProgress waiting for its first status", res)
	}
	if web := resultOf(t, r, "web"); web.Action != Held || web.Reason != string(ReasonDependencyNotReady) {
		t.Fatalf("web: %+v, want HELD DependencyNotReady on the CR", web)
	}

	// the Kind controller's first status, as it writes it
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ours.WithVersion("v1"))
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "svc-0001"}, u); err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Ready", "message": "2/2 replicas ready",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": u.GetGeneration()}}}
	if err := admin.Status().Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, sw, "svc-0001", "Current")
	waitFired(t, sw, "the CR's first status")
	r = sw.Sweep(ctx)
	if web := resultOf(t, r, "web"); web.Action != apply.Created {
		t.Errorf("web after the CR's first status: %+v, want CREATE", web)
	}
}
