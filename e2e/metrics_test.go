package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSecureMetricsOnTheInstalledRole runs the operator as the ServiceAccount
// `operator install` creates, with exactly the install's RBAC, and --metrics-secure:
// it sweeps (the role suffices to run), and /metrics answers a ServiceAccount token bound
// to a role that may get /metrics with 200, a valid token without that grant with 403,
// no token with 401, and a forged one with controller-runtime's 500. Without the install's TokenReview and
// SubjectAccessReview grants every caller would be refused.
func TestSecureMetricsOnTheInstalledRole(t *testing.T) {
	t.Parallel() // its own namespace and operator; runs with the other parallel tests, after the sequential ones
	cl := getCluster(t)
	ctx := context.Background()
	const ns = "e2e-metrics"
	deleteNamespaceAfter(t, cl, ns)

	// The install's Namespace, ServiceAccount and RBAC, as `operator install` applies them.
	out, err := exec.Command(operatorBin, "install", "--print", "--namespace", ns, "--image", "registry.example/operator:v0.0.0-e2e").Output()
	if err != nil {
		t.Fatalf("operator install --print: %v", err)
	}
	objs, err := ssautil.ReadObjects(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if o.GetNamespace() == "" && o.GetKind() != "Namespace" {
			t.Cleanup(func() { _ = cl.c.Delete(context.Background(), o) })
		}
		if err := cl.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	// A scraper bound to a metrics reader role, and a stranger with no grant.
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}}}
	for _, o := range []client.Object{reader, binding,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns}}} {
		if err := cl.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		if o.GetNamespace() == "" {
			t.Cleanup(func() { _ = cl.c.Delete(context.Background(), o) })
		}
	}
	cs, err := kubernetes.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		noteSecret(tr.Status.Token)
		return tr.Status.Token
	}

	// The operator's kubeconfig: the install's ServiceAccount, nothing more.
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cl.cfg.Host, CertificateAuthority: cl.cfg.CAFile, CertificateAuthorityData: cl.cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token("universe-operator")}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "operator"}
	kc.CurrentContext = "e2e"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	repo := newGitRepo(t)
	sha, pushed := repo.push(t, "one config map", map[string][]byte{
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: metered, namespace: " + ns + "}\ndata: {k: v}\n")})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--metrics-secure", "--kubeconfig", kubeconfig)
	if rep := op.sweptAt(t, sha, pushed); rep.Error != "" || rep.Summary.Created != 1 {
		t.Fatalf("the operator as its installed ServiceAccount: %s %+v", rep.Error, rep.Summary)
	}

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the operator's self-signed serving cert
	get := func(bearer string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+op.metrics+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scraper, stranger := token("scraper"), token("stranger")
	waitFor(t, "/metrics for the scraper", 30*time.Second, func() (bool, string) {
		code, body := get(scraper)
		return code == http.StatusOK && strings.Contains(body, "universe_operator_gitops_sweeps_total"), http.StatusText(code)
	})
	for name, tc := range map[string]struct {
		bearer string
		want   int
	}{
		"a token without the grant": {stranger, http.StatusForbidden},
		"no token":                  {"", http.StatusUnauthorized},
	} {
		if code, body := get(tc.bearer); code != tc.want {
			t.Errorf("%s: /metrics %d %.80q, want %d", name, code, body, tc.want)
		}
	}
	// The apiserver's TokenReview answers a forged token with an error, which
	// controller-runtime's filter turns into 500 "Authentication failed": refused all the same.
	if code, body := get("eyJhbGciOiJSUzI1NiJ9.e30.forged"); code != http.StatusInternalServerError || strings.Contains(body, "universe_operator") {
		t.Errorf("a forged token: /metrics %d %.80q, want it refused (500 Authentication failed)", code, body)
	}
	// the harness greps the operator's log, report, Events and statuses for all three tokens
}
