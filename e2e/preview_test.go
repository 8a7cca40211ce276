package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

// pullRequest opens pull request n on the repository as GitHub keeps one: a commit on a
// new branch from main writing files, pushed to refs/heads/<branch> and to the base
// repository's refs/pull/<n>/head. It returns the head SHA.
func (r *gitRepo) pullRequest(t *testing.T, n int, branch, msg string, files map[string][]byte) string {
	t.Helper()
	work := t.TempDir()
	auth := &githttp.BasicAuth{Username: r.srv.Username, Password: r.srv.Password}
	repo, err := gogit.PlainClone(work, false, &gogit.CloneOptions{URL: r.srv.HTTPURL(r.name), Auth: auth,
		ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Checkout(&gogit.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Create: true}); err != nil {
		t.Fatal(err)
	}
	for p, data := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "e2e", Email: "e2e@example.invalid", When: time.Now()}
	sha, err := wt.Commit(msg, &gogit.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	head := plumbing.NewBranchReferenceName(branch)
	if err := repo.Push(&gogit.PushOptions{RemoteName: "origin", Auth: auth, RefSpecs: []config.RefSpec{
		config.RefSpec(fmt.Sprintf("%s:%s", head, head)), config.RefSpec(fmt.Sprintf("%s:refs/pull/%d/head", head, n)),
	}}); err != nil {
		t.Fatal(err)
	}
	return sha.String()
}

// pullRequestEvent is a GitHub pull_request webhook body (the documented fields, trimmed as
// reconcile/gitops/testdata/pullrequest/github-synchronize.json is).
func pullRequestEvent(action string, n int, branch, head, baseSHA string) string {
	repo := `{"id": 4242, "name": "universe", "full_name": "o/universe", "private": true, "default_branch": "main"}`
	return fmt.Sprintf(`{"action": %q, "number": %d, "pull_request": {"number": %d, "state": "open",
  "head": {"label": "o:%s", "ref": %q, "sha": %q, "repo": %s},
  "base": {"label": "o:main", "ref": "main", "sha": %q, "repo": %s}},
  "repository": %s, "sender": {"login": "alice", "id": 1, "type": "User"}}`, action, n, n, branch, branch, head, repo, baseSHA, repo, repo)
}

// postPullRequest POSTs a signed pull_request event as GitHub does and returns the status.
func (o *operator) postPullRequest(t *testing.T, body, delivery string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, o.hook+"/reconcile", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", sign(o.secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func previewService(ns, tag string) []byte {
	return fmt.Appendf(nil, `apiVersion: hanzo.ai/v1
kind: Service
metadata: {name: web, namespace: %s}
spec:
  image: {repository: ghcr.io/hanzoai/web, tag: %q}
  replicas: 2
  ports:
    - {name: http, containerPort: 8080, servicePort: 80}
`, ns, tag)
}

// TestPreviewWebhookChecks is issue 31's "done when" for pull requests, on the full control
// plane with `operator run --preview --commit-status github` against the GitHub-shaped check
// runs server (statustest) and a git server holding refs/pull/N/head as GitHub does:
//   - a pull request changing a Service CR's image: its signed pull_request event is answered
//     202 at once and gets a successful check run on its head whose title names the
//     Deployment that will roll and whose text holds the image diff;
//   - a pull request adding a ClusterRoleBinding gets a failing check naming rule ClusterScoped;
//   - an unsigned pull_request event is refused, a closed one ignored; nothing a preview reads
//     is applied: the live CR, its Deployment and the cluster's bindings are unchanged, and
//     the sweep stays on main.
func TestPreviewWebhookChecks(t *testing.T) {
	cl := getCluster(t)
	ctx := context.Background()
	const (
		ns    = "e2e-preview"
		token = "ghp_e2e-preview-t0ken-51ab"
	)
	noteSecret(token)
	deleteNamespaceAfter(t, cl, ns)
	status := statustest.New(t, commitstatus.GitHub, token)
	tokenFile := filepath.Join(t.TempDir(), "status-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t)
	base, pushed := repo.push(t, "web v1", map[string][]byte{
		"ns.yaml":       []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"apps/web.yaml": previewService(ns, "v1"),
	})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--preview",
		"--commit-status", "github", "--commit-status-url", status.URL, "--commit-status-repository", "o/universe",
		"--commit-status-token-file", tokenFile)
	op.reconcileNow(t)
	op.sweptAt(t, base, pushed)
	deployment := func() *appsv1.Deployment {
		var d appsv1.Deployment
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
			return nil
		}
		return &d
	}
	waitFor(t, "the Service CR's Deployment", time.Minute, func() (bool, string) { return deployment() != nil, "" })
	checkRun := func(sha string) statustest.Post {
		t.Helper()
		var got statustest.Post
		waitFor(t, "the check run on "+sha[:8], time.Minute, func() (bool, string) {
			for _, p := range status.Posts() {
				if p.SHA == sha && p.CheckRun {
					got = p
					return true, ""
				}
			}
			return false, fmt.Sprintf("posts %+v, violations %v", status.Posts(), status.Violations())
		})
		return got
	}

	// 1. the image change: 202 at once, a successful check naming the rolling Deployment
	head1 := repo.pullRequest(t, 1, "web-v2", "web: v2", map[string][]byte{"apps/web.yaml": previewService(ns, "v2")})
	unsigned, _ := http.NewRequest(http.MethodPost, op.hook+"/reconcile", strings.NewReader(pullRequestEvent("opened", 1, "web-v2", head1, base)))
	unsigned.Header.Set("X-GitHub-Event", "pull_request")
	if resp, err := http.DefaultClient.Do(unsigned); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned pull_request event: %v %v, want 401", resp, err)
	}
	if code := op.postPullRequest(t, pullRequestEvent("opened", 1, "web-v2", head1, base), "d-1"); code != http.StatusAccepted {
		t.Fatalf("pull_request opened: %d, want 202", code)
	}
	got := checkRun(head1)
	if got.Context != "universe-operator/sync/preview" || got.State != "success" || got.Repository != "o/universe" ||
		!strings.Contains(got.Description, "rolls Deployment/"+ns+"/web (2 pods)") ||
		!strings.Contains(got.Text, "+        image: ghcr.io/hanzoai/web:v2") || !strings.Contains(got.Text, "-        image: ghcr.io/hanzoai/web:v1") {
		t.Errorf("the image change's check run: %+v", got)
	}

	// 2. a ClusterRoleBinding: a failing check naming the scope rule
	head2 := repo.pullRequest(t, 2, "admin", "give the default account cluster-admin", map[string][]byte{"apps/crb.yaml": []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-preview-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: ` + ns + `}]
`)})
	if code := op.postPullRequest(t, pullRequestEvent("opened", 2, "admin", head2, base), "d-2"); code != http.StatusAccepted {
		t.Fatalf("pull_request opened: %d, want 202", code)
	}
	got = checkRun(head2)
	if got.State != "failure" || !strings.Contains(got.Description, "ClusterScoped") || !strings.Contains(got.Summary, "rule ClusterScoped") {
		t.Errorf("the ClusterRoleBinding's check run: %+v", got)
	}

	// 3. a closed pull request is ignored; a redelivery is not previewed twice
	if code := op.postPullRequest(t, pullRequestEvent("closed", 2, "admin", head2, base), "d-3"); code != http.StatusOK {
		t.Errorf("pull_request closed: %d, want 200 (ignored)", code)
	}
	if code := op.postPullRequest(t, pullRequestEvent("opened", 2, "admin", head2, base), "d-2"); code != http.StatusOK {
		t.Errorf("a redelivery: %d, want 200", code)
	}

	// nothing a preview read was applied
	var sv unstructured.Unstructured
	sv.SetGroupVersionKind(universeGVK("Service"))
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &sv); err != nil {
		t.Fatal(err)
	}
	if tag, _, _ := unstructured.NestedString(sv.Object, "spec", "image", "tag"); tag != "v1" {
		t.Errorf("the live Service CR's tag is %q after the preview, want v1", tag)
	}
	if d := deployment(); d == nil || d.Spec.Template.Spec.Containers[0].Image != "ghcr.io/hanzoai/web:v1" {
		t.Errorf("the live Deployment changed: %+v", d)
	}
	if err := cl.c.Get(ctx, client.ObjectKey{Name: "e2e-preview-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the previewed ClusterRoleBinding: %v, want NotFound", err)
	}
	if rep, err := op.report(); err != nil || rep.Revision != base {
		t.Errorf("the sweep's report %+v (%v), want it on main's %s", rep, err, base)
	}
	posts := 0
	for _, p := range status.Posts() {
		if p.CheckRun {
			posts++
		}
	}
	if posts != 2 {
		t.Errorf("%d check runs posted, want 2: %+v", posts, status.Posts())
	}
	resp, err := http.Get("http://" + op.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `universe_operator_previews_total{result="posted"} 2`) {
		t.Errorf("/metrics lacks 2 posted previews:\n%s", grepLines(string(metrics), "universe_operator_previews_total"))
	}
	if v := status.Violations(); len(v) > 0 {
		t.Errorf("requests against GitHub's documented check-runs API: %v", v)
	}
}
