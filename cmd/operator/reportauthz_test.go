package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openuniverse/operator/e2e/testbed"
)

// TestGitOpsReportAuthz attacks GET /gitops as the installed operator serves it
// (--gitops-report-authz, install's default): no token and a token the apiserver does not
// authorize are refused; a ServiceAccount granted get on /gitops reads it. POST /reconcile
// keeps its own check (the webhook secret) and needs no cluster token. Off, the report is
// open, which is what the flag's explicit false asks for.
func TestGitOpsReportAuthz(t *testing.T) {
	cfg := testbed.APIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := "report-authz"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("report-reader"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gitops-report-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/gitops"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops-report-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gitops-report-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "report-reader", Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/gitops", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"report":1}`)) })
	mux.HandleFunc("/reconcile", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(on bool) *httptest.Server {
		h, err := reportAuthz(cfg, hc, on, mux)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	do := func(srv *httptest.Server, method, path, tok string) int {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	closed := serve(true)
	for _, c := range []struct {
		name, method, path, tok string
		want                    int
	}{
		{"no token", http.MethodGet, "/gitops", "", http.StatusUnauthorized},
		// the TokenReview rejects it with an error, which controller-runtime's filter answers 500: refused, never served
		{"forged token", http.MethodGet, "/gitops", "not-a-token", http.StatusInternalServerError},
		{"unauthorized ServiceAccount", http.MethodGet, "/gitops", stranger, http.StatusForbidden},
		{"authorized ServiceAccount", http.MethodGet, "/gitops", reader, http.StatusOK},
		{"the webhook needs no cluster token", http.MethodPost, "/reconcile", "", http.StatusAccepted},
	} {
		if got := do(closed, c.method, c.path, c.tok); got != c.want {
			t.Errorf("%s: %s %s = %d, want %d", c.name, c.method, c.path, got, c.want)
		}
	}
	if got := do(serve(false), http.MethodGet, "/gitops", ""); got != http.StatusOK {
		t.Errorf("--gitops-report-authz=false: GET /gitops = %d, want the open report", got)
	}
}
