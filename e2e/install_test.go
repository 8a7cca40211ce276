package e2e

import (
	"bufio"
	"context"
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
	dep := installedDeployment(t, out)
	pod := dep.Spec.Template.Spec
	ctr := pod.Containers[0]
	secrets := map[string]map[string]string{ // the Secrets the user created
		"git-creds": {"password": repo.srv.Password},
		"hook":      {"secret": "hook-hmac-secret"},
	}

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
	flags := map[string]bool{}
	var args []string
	for _, a := range ctr.Args {
		if name, value, ok := strings.Cut(a, "="); ok {
			flags[strings.TrimPrefix(name, "--")] = true
			for _, m := range mounted {
				if strings.HasPrefix(value, m) {
					a = name + "=" + filepath.Join(root, value)
				}
			}
		}
		args = append(args, a)
	}
	for _, need := range []string{"git-url", "git-username", "gitops-token-file", "gitops-webhook-secret-file"} {
		if !flags[need] {
			t.Errorf("the Deployment does not pass --%s; args %q", need, ctr.Args)
		}
	}
	probe, metrics, hook := freePort(t), freePort(t), freePort(t)
	args = append(args, "--kubeconfig", cl.kubeconfig, "--git-cache-dir", t.TempDir(),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probe), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metrics),
		fmt.Sprintf("--webhook-bind-address=127.0.0.1:%d", hook),
		// the harness reads GET /gitops without a cluster token; the installed default puts it
		// behind TokenReview/SubjectAccessReview (cmd/operator TestGitOpsReportAuthz attacks that)
		"--gitops-report-authz=false")
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
	o.hook = fmt.Sprintf("http://127.0.0.1:%d", hook)
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
