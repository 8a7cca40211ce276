package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/apply"
)

var (
	gvkDeployment  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvkStatefulSet = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	gvkIngress     = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
)

func universeGVK(kind string) schema.GroupVersionKind {
	v := "v1"
	if strings.HasPrefix(kind, "Hanzo") {
		v = "v1alpha1"
	}
	return schema.GroupVersionKind{Group: "hanzo.ai", Version: v, Kind: kind}
}

func ready(u *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True", fmt.Sprint(m["message"])
		}
	}
	return false, "no Ready condition"
}

// TestPushToReady is the product in one story: a commit pushed to the universe repo, the
// push webhook, the CRs applied, their workloads materialized, pods Ready on the kwok node,
// and every CR's status Ready. It prints the measured latencies.
func TestPushToReady(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-loop"
	deleteNamespaceAfter(t, cl, ns)
	repo.push(t, "empty start", map[string][]byte{"README.md": []byte("universe\n")})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)

	sha, pushed := repo.push(t, "add the example universe", universeFiles(t, ns))
	op.reconcileNow(t)
	rep := op.sweptAt(t, sha, pushed)
	applied := time.Since(pushed)
	if rep.Summary.Errors != 0 || rep.Summary.Files != 6 {
		t.Fatalf("sweep of %s: %+v, want 6 files and no errors (results %+v)", sha, rep.Summary, rep.Results)
	}
	// A later sweep of the same revision (the resync, or a watch event) reports in-sync,
	// so the creations are counted in the log, one line per object.
	for _, obj := range []string{"Namespace/" + ns, "Service/" + ns + "/web", "App/" + ns + "/worker", "SQL/" + ns + "/sql",
		"Ingress/" + ns + "/edge", "HanzoService/" + ns + "/api"} {
		if !op.waitLine(`"Created object"`, `"object":"`+obj+`"`, sha) {
			t.Errorf("no CREATE line for %s at %s", obj, sha)
		}
	}

	ctx := context.Background()
	crs := map[string]string{"Service": "web", "App": "worker", "SQL": "sql", "Ingress": "edge", "HanzoService": "api"}
	waitFor(t, "every CR Ready", 2*time.Minute, func() (bool, string) {
		for kind, name := range crs {
			u, err := getObj(ctx, cl.c, universeGVK(kind), ns, name)
			if err != nil {
				return false, err.Error()
			}
			if ok, msg := ready(u); !ok {
				return false, kind + "/" + name + ": " + msg
			}
		}
		return true, ""
	})
	readyAfter := time.Since(pushed)

	for _, w := range []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{gvkDeployment, "web"}, {gvkDeployment, "worker"}, {gvkDeployment, "api"}, {gvkStatefulSet, "sql"}} {
		u, err := getObj(ctx, cl.c, w.gvk, ns, w.name)
		if err != nil {
			t.Fatalf("%s %s not materialized: %v", w.gvk.Kind, w.name, err)
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if r < want {
			t.Errorf("%s %s: %d/%d ready while its CR is Ready", w.gvk.Kind, w.name, r, want)
		}
	}
	if _, err := getObj(ctx, cl.c, gvkIngress, ns, "edge-0-web-"+ns+"-example"); err != nil {
		t.Errorf("Ingress of the Ingress CR not materialized: %v", err)
	}
	t.Logf("push→applied %s, push→all CRs Ready %s", applied.Round(time.Millisecond), readyAfter.Round(time.Millisecond))
	fmt.Printf("e2e latency: push→applied %s, push→Ready %s\n", applied.Round(time.Millisecond), readyAfter.Round(time.Millisecond))
}

// TestDriftIsRevertedAndAttributed: an out-of-band edit of a workload is put back by its
// Kind controller, and an edit of a CR by the git sweep, each with a log line naming the
// field manager that made the change.
func TestDriftIsRevertedAndAttributed(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-drift"
	deleteNamespaceAfter(t, cl, ns)
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op.sweptAt(t, sha, pushed)
	ctx := context.Background()

	var dep *unstructured.Unstructured
	waitFor(t, "Deployment web", time.Minute, func() (bool, string) {
		var err error
		dep, err = getObj(ctx, cl.c, gvkDeployment, ns, "web")
		return err == nil, fmt.Sprint(err)
	})
	// as `kubectl scale` does: through the /scale subresource
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":7}}`))
	scaleOpts := &client.SubResourcePatchOptions{PatchOptions: client.PatchOptions{FieldManager: "kubectl-scale"}}
	if err := cl.c.SubResource("scale").Patch(ctx, dep, patch, scaleOpts); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Deployment web back to 2 replicas", time.Minute, func() (bool, string) {
		d, err := getObj(ctx, cl.c, gvkDeployment, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return r == 2, fmt.Sprintf("replicas %d", r)
	})
	waitFor(t, "a drift line naming kubectl-scale", 10*time.Second, func() (bool, string) {
		return hasLine(op.logs(), "Reverted drift", "Deployment/"+ns+"/web", "kubectl-scale"), "not yet"
	})

	cr, err := getObj(ctx, cl.c, universeGVK("Service"), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":9}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Service CR web back to 2 replicas by the git sweep", time.Minute, func() (bool, string) {
		u, err := getObj(ctx, cl.c, universeGVK("Service"), ns, "web")
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		return r == 2, fmt.Sprintf("replicas %d", r)
	})
	waitFor(t, "a git-sweep drift line naming kubectl-edit", 10*time.Second, func() (bool, string) {
		return hasLine(op.logs(), "Reverted drift", "Service/"+ns+"/web", "kubectl-edit"), "not yet"
	})
	waitFor(t, "a DriftReverted event on the Service CR naming kubectl-edit", 10*time.Second, func() (bool, string) {
		evs := &corev1.EventList{}
		if err := cl.c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "DriftReverted" && e.InvolvedObject.Kind == "Service" && e.InvolvedObject.Name == "web" &&
				e.InvolvedObject.UID == cr.GetUID() && strings.Contains(e.Message, "kubectl-edit") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none matching", len(evs.Items))
	})
}

// TestRemovingAFileDeletesNothing: git removal never deletes; the sweep says so.
func TestRemovingAFileDeletesNothing(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-noprune"
	deleteNamespaceAfter(t, cl, ns)
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op.sweptAt(t, sha, pushed)
	ctx := context.Background()
	waitFor(t, "Deployment web", time.Minute, func() (bool, string) {
		_, err := getObj(ctx, cl.c, gvkDeployment, ns, "web")
		return err == nil, fmt.Sprint(err)
	})

	sha, pushed = repo.push(t, "remove the web service", map[string][]byte{"apps/web.yaml": nil})
	op.reconcileNow(t)
	rep := op.sweptAt(t, sha, pushed)
	if rep.Summary.Files != 5 {
		t.Errorf("files after the removal = %d, want 5", rep.Summary.Files)
	}
	time.Sleep(2 * time.Second) // a deletion, if any, would have happened by now
	for _, o := range []struct {
		gvk  schema.GroupVersionKind
		name string
	}{{universeGVK("Service"), "web"}, {gvkDeployment, "web"}} {
		if _, err := getObj(ctx, cl.c, o.gvk, ns, o.name); err != nil {
			t.Errorf("%s %s after its file left git: %v (want it kept)", o.gvk.Kind, o.name, err)
		}
	}
}

// TestBadInputCostsNothingElse: a malformed file is reported by name, a CR in a namespace
// the operator does not own is reported out of scope, and every other CR is applied.
func TestBadInputCostsNothingElse(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-badinput"
	deleteNamespaceAfter(t, cl, ns)
	files := universeFiles(t, ns)
	files["apps/broken.yaml"] = []byte("apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: broken, namespace: " + ns + "\nspec: [\n")
	files["elsewhere/intruder.yaml"] = []byte("apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: intruder, namespace: kube-system}\nspec: {image: {repository: evil}}\n")
	sha, pushed := repo.push(t, "universe with bad input", files)
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	rep := op.sweptAt(t, sha, pushed)

	if rep.Summary.Created != 6 {
		t.Errorf("created %d, want the 6 valid objects", rep.Summary.Created)
	}
	var malformed, outOfScope bool
	for _, s := range rep.Skips {
		if s.File == "apps/broken.yaml" {
			malformed = true
		}
		if s.File == "elsewhere/intruder.yaml" && s.Reason.OutOfScope() && s.Namespace == "kube-system" {
			outOfScope = true
		}
	}
	if !malformed || rep.Summary.Skipped == 0 {
		t.Errorf("malformed apps/broken.yaml not reported by name: skips %+v", rep.Skips)
	}
	if !outOfScope || rep.Summary.OutOfScope != 1 {
		t.Errorf("kube-system/intruder not reported out of scope: summary %+v skips %+v", rep.Summary, rep.Skips)
	}
	if !op.waitLine("apps/broken.yaml") {
		t.Errorf("the log never names apps/broken.yaml")
	}
	if _, err := getObj(context.Background(), cl.c, universeGVK("Service"), "kube-system", "intruder"); !apierrors.IsNotFound(err) {
		t.Errorf("out-of-scope CR was applied (err %v)", err)
	}
	for _, r := range rep.Results {
		if r.Action != apply.Created {
			t.Errorf("%s: %s %s", r.Object, r.Action, r.Message)
		}
	}
}

// hasLine reports whether one log line contains every part.
// waitLine reports whether a line of the operator's log holds every part within 10 s: the
// log reaches the test through a pipe, and may lag the report that says the sweep is done.
func (o *operator) waitLine(parts ...string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if hasLine(o.logs(), parts...) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func hasLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
