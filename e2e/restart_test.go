package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// universeCRs are the CRs of the example universe, by Kind.
var universeCRs = map[string]string{"Service": "web", "App": "worker", "SQL": "sql", "Ingress": "edge", "HanzoService": "api"}

// childKinds are the kinds the example universe's CRs build.
var childKinds = []schema.GroupVersionKind{
	gvkDeployment, gvkStatefulSet, gvkIngress,
	{Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "ServiceAccount"}, {Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
}

// TestRestartConvergesWithoutChurn: an operator restarted on a converged cluster changes
// nothing (issue 7 "restarting the operator converges with no churn"). The first sweep of
// the new process reports every object in-sync; every Kind controller reconciles every CR
// again and logs no "Applied child", "Updated child" or "Reverted drift" about them; no
// CR's resourceVersion moves (so no status write either); and no child's generation or
// universe-operator managedFields time moves.
//
// The Namespace of the universe declares only its name, so the gitops manager owns no
// field of it; the apiserver answers the first re-apply of such an object by recording its
// fields under "before-first-apply", which moves its resourceVersion once. No value
// changes, and the sweep rightly reports it in-sync (reconcile.Classify); it is the one
// object whose resourceVersion this test does not pin.
func TestRestartConvergesWithoutChurn(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-restart"
	deleteNamespaceAfter(t, cl, ns)
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	first := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	rep := first.sweptAt(t, sha, pushed)
	if rep.Summary.Created != 6 || rep.Summary.Errors != 0 {
		t.Fatalf("first sweep: %+v, want 6 created and no errors", rep.Summary)
	}
	waitUniverseReady(t, cl.c, ns)
	before := snapshotWrites(t, cl.c, ns)
	first.stop(syscall.SIGTERM)

	restarted := time.Now()
	second := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--log-level", "debug")
	rep = second.sweptAt(t, sha, restarted)
	if len(rep.Results) != 6 {
		t.Errorf("the restarted sweep has %d results, want 6", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Action != apply.InSync {
			t.Errorf("after the restart %s was %s (%s), want in-sync", r.Object, r.Action, r.Message)
		}
	}
	// Every CR reconciled by the new process (debug logs a line per reconcile).
	waitFor(t, "every CR reconciled by the restarted operator", time.Minute, func() (bool, string) {
		for kind, name := range universeCRs {
			if !hasLine(second.logs(), `"Reconciled"`, `"name":"`+name+`"`, `"namespace":"`+ns+`"`, `"controllerKind":"`+kind+`"`) {
				return false, kind + "/" + name + " not reconciled yet"
			}
		}
		return true, ""
	})
	// Kind controllers watch every namespace: only lines about this test's objects count.
	for _, churn := range []string{"Applied child", "Updated child", "Reverted drift", "Created object", "Updated object"} {
		if hasLine(second.logs(), churn, ns) {
			t.Errorf("the restarted operator logged %q:\n%s", churn, grepLines(second.logs(), churn))
		}
	}
	after := snapshotWrites(t, cl.c, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s moved across the restart: %s → %s", k, v, after[k])
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d objects before the restart, %d after", len(before), len(after))
	}
	t.Logf("restart: %d objects unchanged; first sweep after the restart %+v", len(before), rep.Summary)
}

// waitUniverseReady waits for every CR of the example universe in ns to be Ready.
func waitUniverseReady(t *testing.T, c client.Client, ns string) {
	t.Helper()
	waitFor(t, "every CR Ready", 2*time.Minute, func() (bool, string) {
		for kind, name := range universeCRs {
			u, err := getObj(context.Background(), c, universeGVK(kind), ns, name)
			if err != nil {
				return false, err.Error()
			}
			if ok, msg := ready(u); !ok {
				return false, kind + "/" + name + ": " + msg
			}
		}
		return true, ""
	})
}

// snapshotWrites records what a write by the operator would move: each CR's
// resourceVersion (spec, metadata or status), and for each child the operator applied its
// generation and the time of the universe-operator managedFields entry (an apply that
// changes anything, metadata included, moves it).
func snapshotWrites(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for kind, name := range universeCRs {
		u, err := getObj(ctx, c, universeGVK(kind), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		out[kind+"/"+name] = "resourceVersion " + u.GetResourceVersion()
	}
	for _, gvk := range childKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Items {
			for _, mf := range u.GetManagedFields() {
				if mf.Manager == kinds.ManagerKinds && mf.Subresource == "" {
					out[gvk.Kind+"/"+u.GetName()] = fmt.Sprintf("generation %d applied %s", u.GetGeneration(), mf.Time)
				}
			}
		}
	}
	if len(out) <= len(universeCRs) {
		t.Fatalf("no children applied by %s in %s", kinds.ManagerKinds, ns)
	}
	return out
}

// grepLines returns the lines of logs that contain s.
func grepLines(logs, s string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(slices.Clip(out), "\n")
}
