package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestUpAppliesManifests: `operator up --manifests DIR` installs, then applies DIR through
// the git sweep's apply path (issue 7 item 2). The first run creates every object of the
// example universe under the gitops field manager, one CREATE line each; a second run is
// all in-sync; after an out-of-band edit of a CR the next run says UPDATE for it alone and
// puts it back; a malformed file is reported by name with exit status 1 while every other
// object is still applied.
func TestUpAppliesManifests(t *testing.T) {
	cl := getCluster(t)
	const ns = "e2e-up"
	deleteNamespaceAfter(t, cl, ns) // later operators reconcile every namespace
	dir := writeTree(t, universeFiles(t, ns))
	objects := []string{"Namespace/" + ns, "Service/" + ns + "/web", "App/" + ns + "/worker", "SQL/" + ns + "/sql", "Ingress/" + ns + "/edge", "HanzoService/" + ns + "/api"}

	code, out := operatorUp(t, cl, dir, ns)
	if code != 0 {
		t.Fatalf("first operator up exited %d:\n%s", code, out)
	}
	for _, o := range objects {
		if !hasLine(out, o+" "+string(apply.Created)) {
			t.Errorf("first run: no %q line:\n%s", o+" CREATE", out)
		}
	}
	if !hasLine(out, "install CustomResourceDefinition/services.hanzo.ai") || !hasLine(out, "6 created, 0 updated, 0 in-sync, 0 failed") {
		t.Errorf("first run: no install lines or wrong summary:\n%s", out)
	}
	cr, err := getObj(context.Background(), cl.c, universeGVK("Service"), ns, "web")
	if err != nil {
		t.Fatalf("Service CR web not applied: %v", err)
	}
	if !managedBy(cr, kinds.ManagerGitOps) {
		t.Errorf("Service CR web not applied under %s: %v", kinds.ManagerGitOps, cr.GetManagedFields())
	}

	code, out = operatorUp(t, cl, dir, ns)
	if code != 0 || !hasLine(out, "0 created, 0 updated, 6 in-sync") {
		t.Fatalf("second operator up: exit %d, want 0 and all in-sync:\n%s", code, out)
	}

	patchCR(t, cl, ns, "Service", "web", `{"spec":{"replicas":9}}`, "kubectl-edit")
	code, out = operatorUp(t, cl, dir, ns)
	if code != 0 || !hasLine(out, "Service/"+ns+"/web UPDATE") || !hasLine(out, "0 created, 1 updated, 5 in-sync") {
		t.Fatalf("operator up after an edit: exit %d, want 0 and one UPDATE:\n%s", code, out)
	}
	cr, _ = getObj(context.Background(), cl.c, universeGVK("Service"), ns, "web")
	if r, _, _ := unstructured.NestedInt64(cr.Object, "spec", "replicas"); r != 2 {
		t.Errorf("Service CR web has %d replicas after operator up, want 2", r)
	}

	broken := filepath.Join(dir, "apps", "broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: broken\nspec: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = operatorUp(t, cl, dir, ns)
	if code != 1 || !hasLine(out, "SKIPPED apps/broken.yaml") || !hasLine(out, "6 in-sync") {
		t.Fatalf("operator up with a malformed file: exit %d, want 1 naming apps/broken.yaml with the rest in-sync:\n%s", code, out)
	}
}

// operatorUp runs `operator up --crds-only` on dir, owning ns, and returns its exit status
// and combined output.
func operatorUp(t *testing.T, cl *cluster, dir, ns string) (int, string) {
	t.Helper()
	cmd := exec.Command(operatorBin, "up", "--kubeconfig", cl.kubeconfig, "--manifests", dir, "--crds-only", "--gitops-namespaces", ns)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("operator up: %s in %s\n%s", cmd.ProcessState, time.Since(start).Round(time.Millisecond), out.String())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String()
}

// managedBy reports whether manager owns fields of u.
func managedBy(u *unstructured.Unstructured, manager string) bool {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == manager {
			return true
		}
	}
	return false
}
