package deploy

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

const webCR = `{apiVersion: hanzo.ai/v1, kind: Service, metadata: {name: web, namespace: demo, uid: u-web, generation: 2, resourceVersion: "100",
  labels: {hanzo.ai/org: acme}, annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}},
  spec: {image: {repository: ghcr.io/x/web, tag: v2}},
  status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: Available, message: "2/2 replicas ready", lastTransitionTime: "2026-11-30T12:00:00Z"}],
    upgradeHistory: [{image: "ghcr.io/x/web:v1", result: Succeeded, at: "2026-11-29T12:00:00Z"}, {image: "ghcr.io/x/web:v2-rc", result: RolledBack}]}}`

func child(t *testing.T, y string) *unstructured.Unstructured { return obj(t, y) }

func TestProjectHealthSyncHistory(t *testing.T) {
	dep := child(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: demo, uid: u-dep, generation: 1, resourceVersion: "140"},
		spec: {replicas: 2, template: {spec: {containers: [{name: web, image: "ghcr.io/x/web:v2"}]}}},
		status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2}}`)
	svc := child(t, `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: demo, uid: u-svc, resourceVersion: "101"}, spec: {type: ClusterIP}}`)
	stale := child(t, `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: web, namespace: demo, uid: u-hpa}}`)
	desired := []*unstructured.Unstructured{dep, svc}
	o := Observed{Name: "web", CR: obj(t, webCR), Desired: desired, Children: []*unstructured.Unstructured{dep, svc}, Org: "acme"}
	opts := ProjectOptions{ControllerNamespace: "universe-system"}

	app := Project(o, opts)
	if app.Status.Health.Status != HealthHealthy || app.Status.Sync.Status != SyncSynced || app.Spec.Project != "acme" {
		t.Fatalf("healthy app: %+v %+v project %s", app.Status.Health, app.Status.Sync, app.Spec.Project)
	}
	if app.ResourceVersion != "140" {
		t.Errorf("resourceVersion %s, want the largest in the tree (140)", app.ResourceVersion)
	}
	if _, ok := app.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("last-applied-configuration served")
	}
	if len(app.Status.History) != 2 || app.Status.History[0].Revision != "ghcr.io/x/web:v1" || app.Status.History[0].ID != 0 ||
		app.Status.History[1].Revision != "ghcr.io/x/web:v2" || app.Status.History[1].ID != 1 {
		t.Errorf("history %+v: want the Succeeded upgrade then the current image", app.Status.History)
	}
	if strings.Join(app.Status.Summary.Images, ",") != "ghcr.io/x/web:v2" {
		t.Errorf("images %v", app.Status.Summary.Images)
	}

	// a desired child missing: OutOfSync, and Missing on the resource
	o.Children = []*unstructured.Unstructured{dep}
	app = Project(o, opts)
	if app.Status.Sync.Status != SyncOutOfSync || app.Status.Resources[1].Health.Status != HealthMissing {
		t.Errorf("missing Service: sync %s resources %+v", app.Status.Sync.Status, app.Status.Resources)
	}
	// nothing live at all: the app is Missing
	o.Children = nil
	if app = Project(o, opts); app.Status.Health.Status != HealthMissing {
		t.Errorf("nothing live: %+v", app.Status.Health)
	}
	// a controlled child no longer built requires pruning
	o.Children = []*unstructured.Unstructured{dep, svc, stale}
	app = Project(o, opts)
	last := app.Status.Resources[len(app.Status.Resources)-1]
	if last.Kind != "HorizontalPodAutoscaler" || !last.RequiresPruning || last.Status != SyncOutOfSync {
		t.Errorf("stale HPA: %+v", last)
	}
	// the controller has not observed the new generation: OutOfSync
	o.Children = []*unstructured.Unstructured{dep, svc}
	o.CR = obj(t, strings.Replace(webCR, "generation: 2", "generation: 3", 1))
	if app = Project(o, opts); app.Status.Sync.Status != SyncOutOfSync {
		t.Errorf("generation ahead: %s", app.Status.Sync.Status)
	}
	// a degraded Deployment makes the app Degraded
	bad := dep.DeepCopy()
	_ = unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}}, "status", "conditions")
	o.CR, o.Children = obj(t, webCR), []*unstructured.Unstructured{bad, svc}
	if app = Project(o, opts); app.Status.Health.Status != HealthDegraded {
		t.Errorf("deadline exceeded: %+v", app.Status.Health)
	}
	// a delegated CR that builds nothing is Suspended, not Healthy
	delegated := obj(t, `{apiVersion: hanzo.ai/v1, kind: App, metadata: {name: d, namespace: demo, generation: 1},
		status: {observedGeneration: 1, conditions: [{type: Ready, status: "False", reason: Delegated, message: "materialized elsewhere"}]}}`)
	if app = Project(Observed{Name: "d", CR: delegated, Halted: true}, opts); app.Status.Health.Status != HealthSuspended {
		t.Errorf("delegated: %+v", app.Status.Health)
	}
	// a git sweep failure is a SyncError
	o.Git = &GitRecord{RepoURL: "https://git.example/u.git", File: "apps/web.yaml", Revision: "abc", Action: "Failed", Message: "denied"}
	app = Project(o, opts)
	if app.Status.Sync.Status != SyncOutOfSync || app.Status.Sync.Revision != "abc" || app.Spec.Source.Path != "apps/web.yaml" ||
		len(app.Status.Conditions) == 0 || app.Status.Conditions[0].Type != "SyncError" {
		t.Errorf("git failure: %+v %+v %+v", app.Status.Sync, app.Spec.Source, app.Status.Conditions)
	}
}

func TestOperationState(t *testing.T) {
	base := `{apiVersion: hanzo.ai/v1, kind: Service, metadata: {name: web, namespace: demo, generation: 2,
		annotations: {deploy.openuniverse.dev/sync-requested-at: "2026-12-01T10:00:00.5Z", deploy.openuniverse.dev/sync-initiated-by: root}},
		status: {observedGeneration: OBS, conditions: [CONDS]}}`
	cases := []struct{ obs, conds, want string }{
		{"2", `{type: Ready, status: "True", reason: Available}`, PhaseSucceeded},
		{"1", `{type: Ready, status: "True", reason: Available}`, PhaseRunning},
		{"2", `{type: Ready, status: "False", reason: NotReady}, {type: Reconciling, status: "True", reason: NotReady}`, PhaseRunning},
		{"2", `{type: Ready, status: "False", reason: Rejected}, {type: Stalled, status: "True", reason: Rejected, message: bad}`, PhaseFailed},
	}
	for _, c := range cases {
		cr := obj(t, strings.NewReplacer("OBS", c.obs, "CONDS", c.conds).Replace(base))
		os := operationState(cr, crConditions(cr))
		if os == nil || os.Phase != c.want || os.Operation.InitiatedBy.Username != "root" || os.StartedAt.IsZero() {
			t.Errorf("obs %s conds %s: %+v, want %s", c.obs, c.conds, os, c.want)
		}
	}
	if operationState(obj(t, webCR), nil) != nil {
		t.Error("operation state without a sync request")
	}
}

func TestTreeNeverHoldsSecrets(t *testing.T) {
	dep := child(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: demo, uid: u-dep}, spec: {replicas: 1}}`)
	rs := child(t, `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-1, namespace: demo, uid: u-rs, ownerReferences: [{uid: u-dep, kind: Deployment, name: web, apiVersion: apps/v1, controller: true}]}}`)
	pod := child(t, `{apiVersion: v1, kind: Pod, metadata: {name: web-1-a, namespace: demo, uid: u-pod, ownerReferences: [{uid: u-rs, kind: ReplicaSet, name: web-1, apiVersion: apps/v1, controller: true}]},
		spec: {containers: [{name: web, image: "x:1", env: [{name: P, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}, status: {phase: Running}}`)
	sec := child(t, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: demo, uid: u-sec}, data: {k: c2VjcmV0}}`)
	tree := Tree(Observed{Children: []*unstructured.Unstructured{dep, sec}, Descendants: []*unstructured.Unstructured{rs, pod}})
	b, _ := json.Marshal(tree)
	if strings.Contains(string(b), "Secret") || strings.Contains(string(b), "c2VjcmV0") {
		t.Fatalf("a Secret in the tree: %s", b)
	}
	if len(tree.Nodes) != 3 {
		t.Fatalf("nodes %d, want Deployment, ReplicaSet, Pod", len(tree.Nodes))
	}
	for _, n := range tree.Nodes {
		if n.Kind == "Pod" && (len(n.ParentRefs) != 1 || n.ParentRefs[0].UID != "u-rs") {
			t.Errorf("pod parents %+v", n.ParentRefs)
		}
	}
	if stateJSON(nil) != "null" {
		t.Errorf("absent state %q, want the string null", stateJSON(nil))
	}
}

func TestAppNames(t *testing.T) {
	a := obj(t, `{apiVersion: hanzo.ai/v1, kind: Service, metadata: {name: web, namespace: demo}}`)
	b := obj(t, `{apiVersion: hanzo.ai/v1, kind: App, metadata: {name: web, namespace: demo}}`)
	c := obj(t, `{apiVersion: hanzo.ai/v1, kind: App, metadata: {name: web, namespace: other}}`)
	names := appNames([]*unstructured.Unstructured{a, b, c})
	if names[a] != "web.service" || names[b] != "web.app" || names[c] != "web" {
		t.Errorf("names %v %v %v", names[a], names[b], names[c])
	}
}

func TestImageSplit(t *testing.T) {
	for img, want := range map[string][2]string{
		"ghcr.io/x/web:v1":         {"ghcr.io/x/web", "v1"},
		"localhost:5000/web":       {"localhost:5000/web", ""},
		"localhost:5000/web:1.2.3": {"localhost:5000/web", "1.2.3"},
		// a digest is neither repository nor tag (was repository ghcr.io/x/web@sha256, tag <hex>)
		"ghcr.io/x/web@sha256:" + strings.Repeat("ab", 32):    {"ghcr.io/x/web", ""},
		"ghcr.io/x/web:v1@sha256:" + strings.Repeat("ab", 32): {"ghcr.io/x/web", "v1"},
	} {
		if r, g := imageRepo(img), imageTag(img); r != want[0] || g != want[1] {
			t.Errorf("%s: %s %s", img, r, g)
		}
	}
}
