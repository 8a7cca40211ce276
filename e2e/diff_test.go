package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDiffDriftLogs runs `operator diff` against the e2e cluster as CI does, and keeps its
// output as drift logs (issue 5 "`operator diff` exits 0 on a converged cluster and 1 after
// an out-of-band edit", issue 7 item 5): once the operator has converged the example
// universe, diff exits 0 and reports no drift; after an out-of-band edit of a Deployment
// (with the operator stopped, so nobody reverts it) and of a CR, it exits 1 and its
// unified diffs show both edits. Both runs are written to $DRIFT_LOG_DIR, else
// <repo>/.cache/drift-logs/, as diff-converged.txt and diff-drift.txt.
func TestDiffDriftLogs(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-diff"
	deleteNamespaceAfter(t, cl, ns)
	files := universeFiles(t, ns)
	sha, pushed := repo.push(t, "universe", files)
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op.sweptAt(t, sha, pushed)
	waitUniverseReady(t, cl.c, ns)

	dir := writeTree(t, files)
	logs := driftLogDir(t)
	code, out := operatorDiff(t, cl, dir, filepath.Join(logs, "diff-converged.txt"))
	if code != 0 {
		t.Fatalf("operator diff on a converged cluster exited %d, want 0:\n%s", code, out)
	}
	if strings.Contains(out, "\n+") || strings.Contains(out, "\n-") || !strings.Contains(out, " 0 drifted") {
		t.Errorf("operator diff exited 0 but printed drift:\n%s", out)
	}

	// Out-of-band edits, with the operator stopped so that they stay.
	op.stop(syscall.SIGTERM)
	scaleOutOfBand(t, cl.c, ns, "web", 5, "kubectl-scale")
	patchCR(t, cl, ns, "Service", "web", `{"spec":{"replicas":9}}`, "kubectl-edit")
	code, out = operatorDiff(t, cl, dir, filepath.Join(logs, "diff-drift.txt"))
	if code != 1 {
		t.Fatalf("operator diff after out-of-band edits exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"Deployment", ns + "/web", "-  replicas: 5", "+  replicas: 2", "-  replicas: 9"} {
		if !strings.Contains(out, want) {
			t.Errorf("the drift log lacks %q:\n%s", want, out)
		}
	}
}

// operatorDiff runs `operator diff` on dir against the cluster, writes the command, its
// exit status, stdout and stderr to logFile, and returns the status and stdout.
func operatorDiff(t *testing.T, cl *cluster, dir, logFile string) (int, string) {
	t.Helper()
	args := []string{"diff", "--kubeconfig", cl.kubeconfig, dir}
	cmd := exec.Command(operatorBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# operator %s\n# %s, exit status %d, %s\n", strings.Join(args, " "), start.UTC().Format(time.RFC3339), code, time.Since(start).Round(time.Millisecond))
	b.WriteString(stdout.String())
	if stderr.Len() > 0 {
		b.WriteString("# stderr\n" + stderr.String())
	}
	if err := os.WriteFile(logFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("drift log (exit %d): %s", code, logFile)
	return code, stdout.String()
}

// driftLogDir is where drift logs are kept: $DRIFT_LOG_DIR, else <repo>/.cache/drift-logs.
func driftLogDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DRIFT_LOG_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "drift-logs")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeTree writes files (slash-separated paths) under a new temporary directory.
func writeTree(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// patchCR merge-patches a universe CR under another field manager.
func patchCR(t *testing.T, cl *cluster, ns, kind, name, patch, manager string) {
	t.Helper()
	cr, err := getObj(context.Background(), cl.c, universeGVK(kind), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Patch(context.Background(), cr, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}
