package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestDeployPlaneStandaloneRollback runs `operator deploy-plane` alone, as its own
// Deployment runs it (`install --deploy-plane-separate`), beside `operator run` with the git
// sweep: given the sweep's repository and token file, a rollback of a CR from git commits to
// the repository (one commit on the head, the file's tag rewritten, the requester named)
// and the leader's sweep, asked through the webhook relay, applies it; a CR made in the
// cluster rolls back through its spec. Before the plane had the write path it answered 501.
func TestDeployPlaneStandaloneRollback(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-plane-alone"
	deleteNamespaceAfter(t, cl, ns)
	ensureNamespace(t, cl.c, ns)
	orgNamespace(t, cl, ns, "acme")
	files := universeFiles(t, ns)
	files["apps/web.yaml"] = labelled(string(files["apps/web.yaml"]), "web", "acme")
	sha, _ := repo.push(t, "the example universe, web in org acme", files)

	iss, err := testbed.NewOIDCIssuer(planeAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	// the sweep leads through a Lease, so it watches the relay the plane stamps
	op := startOperator(t, cl, repo, ns, "--leader-elect=true", "--gitops-namespaces", ns)
	op.reconcileNow(t)
	op.sweptAt(t, sha, time.Now().Add(-time.Minute))

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startDeployPlane(t, "--kubeconfig", cl.kubeconfig, "--namespace", ns, "--metrics-bind-address", "0",
		"--deploy-plane-bind-address", addr, "--deploy-plane-oidc-issuer", iss.URL, "--deploy-plane-oidc-audience", planeAudience,
		"--deploy-plane-admin-org", "platform", "--git-url", repo.srv.HTTPURL(repo.name), "--git-username", repo.srv.Username, "--gitops-token-file", repo.tokenFile,
		"--git-cache-dir", t.TempDir())
	api := planeAPI{base: "http://" + addr + "/v1/deploy", bodies: &bytes.Buffer{}}
	admin := iss.Token(map[string]any{"sub": "root", "email": "root@example.test", "aud": planeAudience, "org": "platform", "groups": []string{"admin"}})
	noteSecret(admin)
	waitFor(t, "the standalone plane", 30*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/v1/deploy/api/version")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusOK, resp.Status
	})
	planeRollback(t, api, cl, repo, admin, ns)
}

// startDeployPlane runs `operator deploy-plane` with args until the test ends.
func startDeployPlane(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(operatorBin, append([]string{"deploy-plane"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		if t.Failed() {
			// a failed test gets the plane's goroutines in its log (the Go runtime prints
			// them on SIGQUIT and exits)
			_ = cmd.Process.Signal(syscall.SIGQUIT)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		mu.Lock()
		defer mu.Unlock()
		checkNoSecrets(t, "the deploy plane's log", log.String())
		if t.Failed() {
			t.Logf("deploy-plane log:\n%s", log.String())
		}
	})
}
