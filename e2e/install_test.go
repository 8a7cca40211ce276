package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestInstalledDeploymentRuns installs with this repository's git server as the source
// (`operator install --print`), then runs the built binary exactly as the Deployment's
// container would: its arguments and environment, the Secrets written as files at the
// paths its volumes mount them. A process on this machine differs from the pod only in
// what the pod gets from the cluster, and the test changes only that: the files live under
// a temp root instead of /, the listen addresses are loopback ports, the kubeconfig stands
// for the in-cluster config and a temp dir for the emptyDir /tmp. The operator must sweep
// the repository — the e2e's own `operator run` (startOperator) needs --git-url,
// --git-username and --gitops-token-file, and the Deployment must carry all three — and
// /readyz must be 503 while the first sweep is held, 200 once it has reported.
func TestInstalledDeploymentRuns(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-install"
	deleteNamespaceAfter(t, cl, ns)
	if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sha, _ := repo.push(t, "a config map", map[string][]byte{
		"crs/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: installed, namespace: " + ns + "}\ndata: {from: git}\n"),
	})

	// The git server behind a gate: the first sweep is held until the test opens it.
	gate := make(chan struct{})
	target, _ := url.Parse(strings.TrimSuffix(repo.srv.HTTPURL(repo.name), "/"+repo.name))
	proxy := httputil.NewSingleHostReverseProxy(target)
	gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gated.Close)

	out, err := exec.Command(operatorBin, "install", "--print", "--namespace", ns, "--image", "registry.example/operator:v0.0.0-e2e",
		"--git-url", gated.URL+"/"+repo.name, "--git-username", repo.srv.Username, "--git-path", "crs",
		"--gitops-namespaces", ns, "--gitops-resync", "10m",
		"--gitops-token-secret", "git-creds", "--gitops-token-secret-key", "password",
		"--gitops-webhook-secret", "hook").Output()
	if err != nil {
		t.Fatalf("operator install --print: %v", err)
	}
	secrets := map[string]map[string]string{ // the Secrets the user created
		"git-creds": {"password": repo.srv.Password},
		"hook":      {"secret": "hook-hmac-secret"},
	}
	// the harness reads GET /gitops without a cluster token; the installed default puts it
	// behind TokenReview/SubjectAccessReview (cmd/operator TestGitOpsReportAuthz attacks that)
	o, ctrArgs := startInstalled(t, cl, ns, out, secrets, "--gitops-report-authz=false")
	for _, need := range []string{"git-url", "git-username", "gitops-token-file", "gitops-webhook-secret-file"} {
		if !slices.ContainsFunc(ctrArgs, func(a string) bool { return strings.HasPrefix(a, "--"+need+"=") }) {
			t.Errorf("the Deployment does not pass --%s; args %q", need, ctrArgs)
		}
	}
	for range 10 {
		if code := probeStatus(t, o.probe+"/readyz"); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz %d while the first sweep is held, want 503", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Held on the sweep, not on the caches.
	waitFor(t, "/readyz naming the held sweep", 30*time.Second, func() (bool, string) {
		resp, err := http.Get(o.probe + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusServiceUnavailable && string(body) == "[+]caches ok\n[-]gitops not ready\n", resp.Status + " " + string(body)
	})
	close(gate)
	waitFor(t, "/readyz 200 after the first sweep", time.Minute, func() (bool, string) {
		code := probeStatus(t, o.probe+"/readyz")
		return code == http.StatusOK, fmt.Sprint(code)
	})
	rep, err := o.report()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Revision != sha || rep.Error != "" || rep.Summary.Errors != 0 {
		t.Errorf("first sweep: revision %s error %q summary %+v; want %s applied", rep.Revision, rep.Error, rep.Summary, sha)
	}
	cm, err := getObj(context.Background(), cl.c, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ns, "installed")
	if err != nil {
		t.Fatalf("the installed operator did not apply the repository: %v", err)
	}
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "from"); v != "git" {
		t.Errorf("ConfigMap data %v", cm.Object["data"])
	}
}

// startInstalled runs the Deployment of manifests (`operator install --print`) exactly as its
// container would: its arguments and environment, the Secrets (name → key → value) written
// as files at the paths its volumes mount them. A process on this machine differs from the
// pod only in what the pod gets from the cluster: the files live under a temp root instead
// of /, the listen addresses are loopback ports, the kubeconfig stands for the in-cluster
// config and a temp dir for the emptyDir /tmp. extra flags come last (they win). It returns
// the operator and the container's arguments as installed.
func startInstalled(t *testing.T, cl *cluster, ns string, manifests []byte, secrets map[string]map[string]string, extra ...string) (*operator, []string) {
	t.Helper()
	dep := installedDeployment(t, manifests)
	pod := dep.Spec.Template.Spec
	ctr := pod.Containers[0]

	// The volumes, as the kubelet would lay them out under root.
	root := t.TempDir()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	var mounted []string
	for _, m := range ctr.VolumeMounts {
		s := volumes[m.Name].Secret
		if s == nil {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("Secret %s mounted writable", s.SecretName)
		}
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, item := range s.Items {
			data, ok := secrets[s.SecretName][item.Key]
			if !ok {
				t.Fatalf("the Deployment mounts key %s of Secret %s, which install was not told", item.Key, s.SecretName)
			}
			if err := os.WriteFile(filepath.Join(dir, item.Path), []byte(data), 0o400); err != nil {
				t.Fatal(err)
			}
		}
		mounted = append(mounted, m.MountPath+"/")
	}

	// The container's arguments, with mounted paths under root.
	var args []string
	for _, a := range ctr.Args {
		if name, value, ok := strings.Cut(a, "="); ok {
			for _, m := range mounted {
				if strings.HasPrefix(value, m) {
					a = name + "=" + filepath.Join(root, value)
				}
			}
		}
		args = append(args, a)
	}
	ports := freePorts(t, 3)
	probe, metrics, hook := ports[0], ports[1], ports[2]
	args = append(args, "--kubeconfig", cl.kubeconfig, "--git-cache-dir", t.TempDir(),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probe), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metrics),
		fmt.Sprintf("--webhook-bind-address=127.0.0.1:%d", hook))
	args = append(args, extra...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OPERATOR_") || strings.HasPrefix(kv, "GITOPS_") })
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+ns)
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		default:
			t.Fatalf("env %s from %+v: not laid out by this test", e.Name, e.ValueFrom)
		}
	}

	o := runContainer(t, args, env, fmt.Sprintf("http://127.0.0.1:%d", probe))
	o.hook, o.metrics = fmt.Sprintf("http://127.0.0.1:%d", hook), fmt.Sprintf("127.0.0.1:%d", metrics)
	return o, ctr.Args
}

// installedDeployment picks the Deployment out of `install --print`.
func installedDeployment(t *testing.T, manifests []byte) *appsv1.Deployment {
	t.Helper()
	objs, err := ssautil.ReadObjects(strings.NewReader(string(manifests)))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("install --print has no Deployment")
	return nil
}

// runContainer starts the built binary with a container's args (args[0] is the
// subcommand) and environment, and waits for /healthz.
func runContainer(t *testing.T, args, env []string, probe string) *operator {
	t.Helper()
	o := &operator{cmd: exec.Command(operatorBin, args...), probe: probe, done: make(chan struct{})}
	o.cmd.Env = env
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
		o.stop(syscall.SIGTERM)
		checkNoSecrets(t, "the operator log", o.logs())
		if t.Failed() {
			t.Logf("operator log:\n%s", o.logs())
		}
	})
	waitFor(t, "operator /healthz", 30*time.Second, func() (bool, string) {
		code := probeStatus(t, probe+"/healthz")
		return code == http.StatusOK, fmt.Sprint(code)
	})
	return o
}

// probeStatus is the status of GET url, 0 when it cannot connect.
func probeStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestInstalledEveryCapability is issue 24's "one command": `install` with a git source, the
// upgrade machine, the deploy plane in the main Deployment with an OIDC issuer, and the
// installed secure metrics, run exactly as the Deployment's container would. Each capability
// must be on in the running process, and each listener must answer as installed: the plane
// refuses an unauthenticated caller and serves one with a token of the issuer, /metrics is
// HTTPS and refuses a caller without a cluster token.
func TestInstalledEveryCapability(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-install-all"
	deleteNamespaceAfter(t, cl, ns)
	if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sha, _ := repo.push(t, "a config map", map[string][]byte{
		"crs/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: everything, namespace: " + ns + "}\ndata: {from: git}\n"),
	})
	iss, err := testbed.NewOIDCIssuer(planeAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	out, err := exec.Command(operatorBin, "install", "--print", "--namespace", ns, "--image", "registry.example/operator:v0.0.0-e2e",
		"--git-url", repo.srv.HTTPURL(repo.name), "--git-username", repo.srv.Username, "--git-path", "crs",
		"--gitops-namespaces", ns, "--gitops-resync", "10m",
		"--gitops-token-secret", "git-creds", "--gitops-token-secret-key", "password", "--gitops-webhook-secret", "hook",
		"--upgrade-fsm",
		"--deploy-plane-bind-address", ":8090", "--deploy-plane-oidc-issuer", iss.URL, "--deploy-plane-oidc-audience", planeAudience,
		"--deploy-plane-admin-org", "platform").Output()
	if err != nil {
		t.Fatalf("operator install --print: %v", err)
	}
	secrets := map[string]map[string]string{"git-creds": {"password": repo.srv.Password}, "hook": {"secret": "hook-hmac-secret"}}
	planeAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	o, ctrArgs := startInstalled(t, cl, ns, out, secrets, "--deploy-plane-bind-address="+planeAddr, "--gitops-report-authz=false")
	for _, want := range []string{"--upgrade-fsm=true", "--metrics-secure=true", "--deploy-plane-oidc-issuer=" + iss.URL} {
		if !slices.Contains(ctrArgs, want) {
			t.Errorf("the installed Deployment does not pass %s; args %q", want, ctrArgs)
		}
	}
	waitFor(t, "/readyz 200 after the first sweep", 2*time.Minute, func() (bool, string) {
		code := probeStatus(t, o.probe+"/readyz")
		return code == http.StatusOK, fmt.Sprint(code)
	})
	if rep, err := o.report(); err != nil || rep.Revision != sha || rep.Summary.Errors != 0 {
		t.Errorf("first sweep: %+v, %v; want %s applied", rep, err, sha)
	}
	for _, loop := range []string{"upgrade-fsm", "deploy-plane", "gitops", "kinds"} {
		if !strings.Contains(o.logs(), `"loop `+loop+` on"`) {
			t.Errorf("the installed operator does not log loop %s on", loop)
		}
	}

	api := planeAPI{base: "http://" + planeAddr + "/v1/deploy", bodies: &bytes.Buffer{}}
	if code, b := api.do(t, http.MethodGet, "/api/v1/applications", "", nil); code != http.StatusUnauthorized {
		t.Errorf("the plane without a token: %d %s, want 401", code, b)
	}
	member := iss.Token(map[string]any{"sub": "ann", "aud": planeAudience, "org": "acme", "groups": []string{"dev"}})
	noteSecret(member)
	api.get(t, "/api/v1/applications", member, nil)

	// secure metrics: TLS (self-signed by controller-runtime), and a caller with no cluster token refused
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, "/metrics over HTTPS refusing an anonymous caller", 30*time.Second, func() (bool, string) {
		resp, err := insecure.Get("https://" + o.metrics + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
	if resp, err := http.Get("http://" + o.metrics + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "# HELP") {
			t.Errorf("/metrics served over plain HTTP: %s", resp.Status)
		}
	}
}
