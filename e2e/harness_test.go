package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/gitops"
)

// operatorBin is the operator binary the suite drives, built once by TestMain.
var operatorBin string

func TestMain(m *testing.M) {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // the suite's own clients: their logs are not the operator's
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		operatorBin = filepath.Join(dir, "operator")
		// the release build's tags (hack/image's BuildTags): no Go-plugin loader, so the
		// bench measures the memory a user's binary has
		build := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", operatorBin, "github.com/openuniverse/operator/cmd/operator")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build operator:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
	}
	code := testbed.Run(m)
	os.Exit(code)
}

// cluster is the shared e2e cluster, with our CRDs installed by the binary itself.
type cluster struct {
	cfg        *rest.Config
	kubeconfig string
	c          client.Client
}

var (
	clusterOnce sync.Once
	shared      *cluster
	sharedErr   error
)

func getCluster(t testing.TB) *cluster {
	t.Helper()
	cfg, kubeconfig := testbed.FullCluster(t)
	clusterOnce.Do(func() {
		c, err := client.New(cfg, client.Options{})
		if err != nil {
			sharedErr = err
			return
		}
		out, err := exec.Command(operatorBin, "install", "--crds-only", "--kubeconfig", kubeconfig).CombinedOutput()
		if err != nil {
			sharedErr = fmt.Errorf("operator install --crds-only: %v\n%s", err, out)
			return
		}
		shared = &cluster{cfg: cfg, kubeconfig: kubeconfig, c: c}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// gitRepo is a repository on a fresh local git server, with the password in a token file
// the operator reads.
type gitRepo struct {
	srv       *testbed.GitServer
	name      string
	tokenFile string
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	srv, err := testbed.NewGitServer("", "git", "pw-"+strings.ToLower(t.Name()[:min(len(t.Name()), 12)])+"-0001")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(); os.RemoveAll(srv.Root()) })
	noteSecret(srv.Password)
	r := &gitRepo{srv: srv, name: "universe.git", tokenFile: filepath.Join(t.TempDir(), "token")}
	if err := os.WriteFile(r.tokenFile, []byte(srv.Password), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// push commits files (nil content deletes) and returns the commit SHA and when it landed.
func (r *gitRepo) push(t testing.TB, msg string, files map[string][]byte) (string, time.Time) {
	t.Helper()
	sha, err := r.srv.Commit(r.name, "main", msg, files)
	if err != nil {
		t.Fatal(err)
	}
	return sha, time.Now()
}

// operator is one `operator run` subprocess.
type operator struct {
	cmd     *exec.Cmd
	probe   string // http://127.0.0.1:port of /healthz and /readyz
	hook    string // http://127.0.0.1:port of POST /reconcile and GET /gitops
	metrics string // 127.0.0.1:port of /metrics
	secret  string // the webhook secret reconcileNow signs with
	mu      sync.Mutex
	log     strings.Builder
	done    chan struct{}
}

// startOperator runs the built binary as a user would, with the given extra flags, against
// the shared cluster and repo. Its log is kept for assertions and printed when the test fails.
func startOperator(t testing.TB, cl *cluster, repo *gitRepo, namespace string, extra ...string) *operator {
	t.Helper()
	return startOperatorOn(t, cl, []string{"--git-url", repo.srv.HTTPURL(repo.name), "--git-username", repo.srv.Username,
		"--gitops-token-file", repo.tokenFile}, namespace, extra...)
}

// startOperatorOn is startOperator with the source flags given (a GitHub API, a proxy).
func startOperatorOn(t testing.TB, cl *cluster, source []string, namespace string, extra ...string) *operator {
	t.Helper()
	ports := freePorts(t, 3)
	probe, metrics, hook := ports[0], ports[1], ports[2]
	secret, secretFile := "e2e-hook-secret-3b9a", filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, a := range extra { // a test's own secret wins, as its flag comes last
		if a == "--gitops-webhook-secret-file" && i+1 < len(extra) {
			b, err := os.ReadFile(extra[i+1])
			if err != nil {
				t.Fatal(err)
			}
			secret = strings.TrimSpace(string(b))
		}
	}
	args := []string{"run",
		"--gitops-webhook-secret-file", secretFile,
		"--webhook-bind-address", fmt.Sprintf("127.0.0.1:%d", hook),
		"--kubeconfig", cl.kubeconfig,
		"--namespace", namespace,
		"--git-cache-dir", t.TempDir(),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
	}
	noteSecret(secret)
	args = append(args, source...)
	o := &operator{cmd: exec.Command(operatorBin, append(args, extra...)...), probe: fmt.Sprintf("http://127.0.0.1:%d", probe),
		hook: fmt.Sprintf("http://127.0.0.1:%d", hook), metrics: fmt.Sprintf("127.0.0.1:%d", metrics), secret: secret, done: make(chan struct{})}
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	o.cmd.Stdout, o.cmd.Stderr = pw, pw
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			o.mu.Lock()
			o.log.WriteString(sc.Text() + "\n")
			o.mu.Unlock()
		}
	}()
	go func() { _ = o.cmd.Wait(); pw.Close(); close(o.done) }()
	t.Cleanup(func() {
		report := o.reportBody()
		o.stop(syscall.SIGTERM)
		checkNoSecrets(t, "the operator log", o.logs())
		checkNoSecrets(t, "GET /gitops", report)
		checkClusterNoSecrets(t, cl)
		if t.Failed() {
			t.Logf("operator log:\n%s", o.logs())
		}
	})
	waitFor(t, "operator /healthz", 30*time.Second, func() (bool, string) {
		resp, err := http.Get(o.probe + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return o
}

func (o *operator) logs() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.log.String()
}

// stop signals the process and waits for it to exit.
func (o *operator) stop(sig syscall.Signal) {
	select {
	case <-o.done:
		return
	default:
	}
	_ = o.cmd.Process.Signal(sig)
	select {
	case <-o.done:
	case <-time.After(20 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}

// reconcileNow is the push webhook: a signed POST /reconcile.
func (o *operator) reconcileNow(t testing.TB) {
	t.Helper()
	const body = `{"ref":"refs/heads/main"}`
	var resp *http.Response
	// /healthz answers a moment before the webhook listener accepts: a refused connection is
	// retried (the fresh-clone run failed TestDeployPlaneUI on it), any other error is fatal
	waitFor(t, "the webhook listener", 30*time.Second, func() (bool, string) {
		req, err := http.NewRequest(http.MethodPost, o.hook+"/reconcile", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", sign(o.secret, body))
		r, err := http.DefaultClient.Do(req)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return false, err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		resp = r
		return true, ""
	})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /reconcile: %s", resp.Status)
	}
}

// reportBody is GET /gitops as served, "" when it cannot be read.
func (o *operator) reportBody() string {
	resp, err := http.Get(o.hook + "/gitops")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// report returns the last sweep's report from GET /gitops.
func (o *operator) report() (*gitops.Report, error) {
	resp, err := http.Get(o.hook + "/gitops")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /gitops: %s", resp.Status)
	}
	r := &gitops.Report{}
	return r, json.NewDecoder(resp.Body).Decode(r)
}

// sweptAt waits for a sweep of revision that started after since, and returns it.
func (o *operator) sweptAt(t testing.TB, revision string, since time.Time) *gitops.Report {
	t.Helper()
	var rep *gitops.Report
	waitFor(t, "a sweep of "+revision, time.Minute, func() (bool, string) {
		r, err := o.report()
		if err != nil {
			return false, err.Error()
		}
		rep = r
		return r.Revision == revision && !r.Started.Before(since.Add(-time.Second)), fmt.Sprintf("revision %s started %s error %q", r.Revision, r.Started, r.Error)
	})
	return rep
}

func waitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %s)", what, err, last)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	return freePorts(t, 1)[0]
}

// freePorts returns n distinct free ports: every listener stays open until all are picked
// (closed one by one, the kernel may hand the same port out twice, and the operator's probe
// and webhook servers then collide on it).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func getObj(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// universeFiles reads the example universe repository, with its namespace renamed to ns.
func universeFiles(t *testing.T, ns string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	root := filepath.Join("testdata", "universe")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data = []byte(strings.ReplaceAll(string(data), "namespace: demo", "namespace: "+ns))
		data = []byte(strings.ReplaceAll(string(data), "name: demo\n", "name: "+ns+"\n"))
		data = []byte(strings.ReplaceAll(string(data), "web.demo.example", "web."+ns+".example"))
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// deleteNamespaceAfter deletes ns when the test ends, after its operator stopped (cleanups
// run last-registered first, so call it before startOperator), so that later operators in
// the shared cluster do not reconcile this test's leftovers.
func deleteNamespaceAfter(t *testing.T, cl *cluster, ns string) {
	t.Helper()
	t.Cleanup(func() {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		_ = client.IgnoreNotFound(cl.c.Delete(context.Background(), u))
	})
}
