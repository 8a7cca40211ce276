package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

// alertSink is the generic webhook's receiver: it verifies each delivery's HMAC and that its
// timestamp header matches the signed body, and keeps the verified payloads.
type alertSink struct {
	key []byte

	mu       sync.Mutex
	verified []alert.Payload
	refused  []string
}

func (s *alertSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p alert.Payload
	err := json.Unmarshal(body, &p)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		s.refused = append(s.refused, r.Method+" "+r.Header.Get("Content-Type"))
	case !alert.Verify(s.key, body, r.Header.Get(alert.HeaderSignature)):
		s.refused = append(s.refused, "bad signature")
	case err != nil || r.Header.Get(alert.HeaderTimestamp) != fmt.Sprint(p.Timestamp) || r.Header.Get(alert.HeaderEvent) != string(p.Kind) ||
		r.Header.Get(alert.HeaderDelivery) != p.ID:
		s.refused = append(s.refused, fmt.Sprintf("headers %v do not match the body %s", r.Header, body))
	default:
		s.verified = append(s.verified, p)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *alertSink) payloads() ([]alert.Payload, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]alert.Payload(nil), s.verified...), append([]string(nil), s.refused...)
}

func feedbackDeployment(ns, image string, deadline int) []byte {
	return fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: 1
  minReadySeconds: 1
  progressDeadlineSeconds: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: %q}]
`, ns, deadline, image)
}

// TestCommitStatusAndAlertsOfMergedCommits is issue 31's "done when" for merged commits, on
// the full control plane (kube-controller-manager, kwok) with the binary run as `operator
// install --print --commit-status github --commit-status-token-secret --alerts-secret --fleet`
// lays it out: a GitHub-shaped status server (statustest: method, path, Bearer token, JSON
// fields) and a webhook receiver verifying each HMAC. The home apiserver is also registered
// as fleet cluster acme/e2e-feedback-edge, bounded to one namespace, so one commit carries
// the home context and the cluster's.
//   - a good commit: home is pending while its Deployment rolls out, success once it is
//     Current (and the Deployment is Available then); the cluster's context gets success;
//   - a broken commit (the Deployment's new image crash-loops past its progress deadline):
//     failure on home, success on the cluster's context, one SweepFailed naming cluster home;
//   - the fix: success and one SweepRecovered; two alerts in all, every one verified.
func TestCommitStatusAndAlertsOfMergedCommits(t *testing.T) {
	cl := getCluster(t)
	ctx := context.Background()
	const (
		opNS   = "e2e-feedback-op"
		appNS  = "e2e-feedback"
		edgeNS = "e2e-feedback-edge"
		edge   = "e2e-feedback-edge"
		token  = "ghp_e2e-status-t0ken-7c1d"
		hmac   = "e2e-alert-hmac-key-0123456789abcdef"
	)
	noteSecret(token)
	noteSecret(hmac)
	for _, ns := range []string{appNS, edgeNS, opNS} {
		deleteNamespaceAfter(t, cl, ns)
	}
	for _, ns := range []string{opNS, edgeNS} {
		if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	status := statustest.New(t, commitstatus.GitHub, token)
	sink := &alertSink{key: []byte(hmac)}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opNS, Name: "alerts"},
		StringData: map[string]string{"webhook-url": sinkSrv.URL + "/in", "webhook-hmac-key": hmac}}); err != nil {
		t.Fatal(err)
	}

	// the home apiserver as a registered cluster of org acme, bounded to edgeNS
	home := rest.CopyConfig(cl.cfg)
	if err := rest.LoadTLSFiles(home); err != nil {
		t.Fatal(err)
	}
	reg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hanzo.ai/v1", "kind": "Cluster", "metadata": map[string]any{"name": edge},
		"spec": map[string]any{"org": "acme", "endpoint": home.Host, "provider": "testbed", "namespaces": []any{edgeNS}},
	}}
	if err := cl.c.Create(ctx, reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.c.Delete(context.Background(), reg) })
	setCredential(t, cl, opNS, "acme", edge, kubeconfigOf(t, home, ""))

	repo := newGitRepo(t)
	edgeFile := "orgs/acme/clusters/" + edge + "/cm.yaml"
	sha1, _ := repo.push(t, "web and the edge's config", map[string][]byte{
		"home/ns.yaml":  []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + appNS + "}\n"),
		"home/web.yaml": feedbackDeployment(appNS, "registry.example/web:1", 60),
		edgeFile:        cmValue(edgeNS, "edge", "one"),
	})

	out, err := exec.Command(operatorBin, "install", "--print", "--namespace", opNS, "--image", "registry.example/operator:v0.0.0-e2e",
		"--git-url", repo.srv.HTTPURL(repo.name), "--git-username", repo.srv.Username,
		"--gitops-namespaces", appNS, "--gitops-token-secret", "git-creds", "--gitops-token-secret-key", "password",
		"--gitops-webhook-secret", "hook", "--fleet", "--controllers", "gitops",
		"--commit-status", "github", "--commit-status-url", status.URL, "--commit-status-repository", "o/universe",
		"--commit-status-token-secret", "status-token", "--alerts-secret", "alerts").Output()
	if err != nil {
		t.Fatalf("operator install --print: %v", err)
	}
	secrets := map[string]map[string]string{"git-creds": {"password": repo.srv.Password}, "hook": {"secret": "hook-hmac-secret"},
		"status-token": {"token": token}}
	op, args := startInstalled(t, cl, opNS, out, secrets, "--fleet-allow-non-routable", "--gitops-report-authz=false")
	op.secret = "hook-hmac-secret"
	for _, want := range []string{"--commit-status=github", "--commit-status-token-file=", "--alerts-secret=alerts", "--fleet=true"} {
		if !strings.Contains(strings.Join(args, " "), want) {
			t.Errorf("the installed Deployment does not pass %s: %q", want, args)
		}
	}

	homeCtx, edgeCtx := commitstatus.DefaultContext, commitstatus.ClusterContext(commitstatus.DefaultContext, "acme/"+edge)
	// posted waits for a status of sha in context, and returns the posts of that commit and
	// context up to it.
	posted := func(sha, context, state string) []statustest.Post {
		t.Helper()
		var before []statustest.Post
		waitFor(t, fmt.Sprintf("%s on %s in %s", state, sha[:8], context), 45*time.Second, func() (bool, string) {
			before = before[:0]
			for _, p := range status.Posts() {
				if p.SHA != sha || p.Context != context {
					continue
				}
				before = append(before, p)
				if p.State == state {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%+v (violations %v)", before, status.Violations())
		})
		return before
	}
	states := func(ps []statustest.Post) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.State+" "+p.Description)
		}
		return strings.Join(s, "; ")
	}
	available := func() int32 {
		var d appsv1.Deployment
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		return d.Status.AvailableReplicas
	}
	alerts := func(n int) []alert.Payload {
		t.Helper()
		var got []alert.Payload
		waitFor(t, fmt.Sprintf("%d verified alerts", n), 30*time.Second, func() (bool, string) {
			var refused []string
			got, refused = sink.payloads()
			if len(refused) > 0 {
				t.Fatalf("the receiver refused deliveries: %q", refused)
			}
			return len(got) >= n, fmt.Sprintf("%+v", got)
		})
		return got
	}

	op.reconcileNow(t)
	// 1. merged and healthy: success only once web is Current
	ps := posted(sha1, homeCtx, "success")
	if got := states(ps); !strings.HasPrefix(got, "pending sweep started; pending ") || !strings.Contains(got, "rolling out 1") || strings.Count(got, "success") != 1 {
		t.Errorf("home statuses of the good commit: %s; want pending, pending rolling out, then success", got)
	}
	if n := available(); n != 1 {
		t.Errorf("success posted with web's available replicas %d", n)
	}
	if got := states(posted(sha1, edgeCtx, "success")); !strings.HasPrefix(got, "pending sweep started; success applied 1") {
		t.Errorf("the edge cluster's statuses: %s", got)
	}
	if got, _ := sink.payloads(); len(got) != 0 {
		t.Errorf("alerts before anything failed: %+v", got)
	}

	// 2. broken: web's new image crash-loops past its progress deadline
	sha2, _ := repo.push(t, "web: a broken image", map[string][]byte{"home/web.yaml": feedbackDeployment(appNS, testbed.CrashLoopImage, 4)})
	op.reconcileNow(t)
	ps = posted(sha2, homeCtx, "failure")
	if got := states(ps); strings.Contains(got, "success") || !strings.Contains(ps[len(ps)-1].Description, "unhealthy 1") {
		t.Errorf("home statuses of the broken commit: %s; want failure with unhealthy 1 and no success", got)
	}
	posted(sha2, edgeCtx, "success") // the edge's files did not change: its sweep of sha2 is fine
	got := alerts(1)
	if a := got[0]; a.Kind != alert.SweepFailed || a.Cluster != "home" || a.Revision != sha2 || a.Severity != "warning" ||
		!strings.Contains(strings.Join(a.Details, "\n"), "Deployment/"+appNS+"/web: health Failed") {
		t.Errorf("the broken commit's alert: %+v; want SweepFailed on home naming web", a)
	}

	// 3. fixed: success and one SweepRecovered
	sha3, _ := repo.push(t, "web: a good image", map[string][]byte{"home/web.yaml": feedbackDeployment(appNS, "registry.example/web:2", 60)})
	op.reconcileNow(t)
	posted(sha3, homeCtx, "success")
	got = alerts(2)
	if a := got[1]; a.Kind != alert.SweepRecovered || a.Cluster != "home" || a.Revision != sha3 || a.Severity != "info" {
		t.Errorf("the fix's alert: %+v; want SweepRecovered on home", a)
	}
	op.reconcileNow(t) // an idle sweep more: no status changes, no alert
	op.sweptAt(t, sha3, time.Now())
	if got, _ := sink.payloads(); len(got) != 2 {
		t.Errorf("alerts: %+v; want exactly SweepFailed and SweepRecovered", got)
	}
	for _, p := range status.Posts() {
		if p.Repository != "o/universe" || (p.Context != homeCtx && p.Context != edgeCtx) {
			t.Errorf("a status posted elsewhere: %+v", p)
		}
	}
	if v := status.Violations(); len(v) > 0 {
		t.Errorf("requests against GitHub's documented statuses API: %v", v)
	}
}
