package e2e

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ociRegistry is go-containerregistry's in-process registry on loopback.
type ociRegistry struct {
	srv  *httptest.Server
	host string
}

func newRegistry(t *testing.T) *ociRegistry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &ociRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "http://")}
}

func (r *ociRegistry) push(t *testing.T, repo string, tags ...string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		ref, err := name.NewTag(r.host + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
}

// head returns the head commit of main and the file at path in it.
func (r *gitRepo) head(t *testing.T, path string) (*object.Commit, string) {
	t.Helper()
	repo, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: r.srv.HTTPURL(r.name),
		Auth: &githttp.BasicAuth{Username: r.srv.Username, Password: r.srv.Password}, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File(path)
	if err != nil {
		return c, ""
	}
	s, _ := f.Contents()
	return c, s
}

func imageUpdateYAML(ns, name, repo, writeback, path, extra string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: hanzo.ai/v1
kind: ImageUpdate
metadata:
  name: %s
  namespace: %s
spec:
  imageRepository: %s
  policy: "semver:>=1.0.0"
  writebackRepo: %s
  writebackPath: %s
  intervalSeconds: 60
%s`, name, ns, repo, writeback, path, extra))
}

func requestReconcile(t *testing.T, cl *cluster, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(universeGVK("ImageUpdate"))
	u.SetNamespace(ns)
	u.SetName(name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if err := cl.c.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("e2e")); err != nil {
		t.Fatal(err)
	}
}

// condition returns status and reason of a condition of u.
func condition(u *unstructured.Unstructured, typ string) (string, string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func waitImageUpdate(t *testing.T, cl *cluster, ns, name, reason string, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	waitFor(t, "ImageUpdate "+name+" "+reason, timeout, func() (bool, string) {
		var err error
		if u, err = getObj(context.Background(), cl.c, universeGVK("ImageUpdate"), ns, name); err != nil {
			return false, err.Error()
		}
		st, r, msg := condition(u, "Ready")
		return r == reason, st + " " + r + ": " + msg
	})
	return u
}

// TestImageUpdateLoop: a new tag in the registry lands as one commit changing only the tag
// bytes, the operator's own sweep applies it at once and the Service rolls to Ready on kwok;
// then a registry outage, a missing tag shape and a file without a match each give their
// condition, and two ImageUpdates racing on one branch with a human commit both land.
func TestImageUpdateLoop(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	reg := newRegistry(t)
	const ns = "e2e-imgup"
	deleteNamespaceAfter(t, cl, ns)
	webRepo, workerRepo := reg.host+"/hanzo/web", reg.host+"/hanzo/worker"
	reg.push(t, "hanzo/web", "v1.0.0")
	reg.push(t, "hanzo/worker", "1.0.0")
	reg.push(t, "hanzo/absent", "v1.0.0")
	url := repo.srv.HTTPURL(repo.name)
	web := fmt.Sprintf(`apiVersion: hanzo.ai/v1
kind: Service
metadata:
  name: web
  namespace: %s
spec:
  image:
    repository: %s
    tag: "v1.0.0" # bumped by ImageUpdate web
  replicas: 1
  ports: [{name: http, containerPort: 8080, servicePort: 80}]
`, ns, webRepo)
	worker := strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(web, "name: web", "name: worker"), webRepo, workerRepo), `"v1.0.0" # bumped by ImageUpdate web`, "1.0.0\r")
	repo.push(t, "a universe with image updates", map[string][]byte{
		"namespace.yaml":    []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n"),
		"apps/web.yaml":     []byte(web),
		"apps/worker.yaml":  []byte(worker),
		"auto/web.yaml":     imageUpdateYAML(ns, "web", webRepo, url, "apps/web.yaml", ""),
		"auto/worker.yaml":  imageUpdateYAML(ns, "worker", workerRepo, url, "apps/worker.yaml", ""),
		"auto/nomatch.yaml": imageUpdateYAML(ns, "nomatch", reg.host+"/hanzo/absent", url, "apps/web.yaml", ""),
		"auto/outage.yaml":  imageUpdateYAML(ns, "outage", "127.0.0.1:1/hanzo/web", url, "apps/web.yaml", ""),
		"apps/arch.yaml":    []byte(strings.ReplaceAll(strings.ReplaceAll(web, "name: web", "name: arch"), webRepo+"\n    tag: \"v1.0.0\"", reg.host+"/hanzo/arch\n    tag: v1.0.0-amd64")),
		"auto/arch.yaml":    imageUpdateYAML(ns, "arch", reg.host+"/hanzo/arch", url, "apps/arch.yaml", ""),
		"docs/README.md":    []byte("universe\n"),
	})
	reg.push(t, "hanzo/arch", "v1.0.0-amd64", "v1.1.0")
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--image-allow-private-registries") // the registry is on 127.0.0.1
	op.reconcileNow(t)

	// The conditions that are not a push.
	waitImageUpdate(t, cl, ns, "web", "NoNewTag", 90*time.Second)
	u := waitImageUpdate(t, cl, ns, "nomatch", "NoMatch", 60*time.Second)
	if st, _, msg := condition(u, "Stalled"); st != "True" || !strings.Contains(msg, "apps/web.yaml") || !strings.Contains(msg, "hanzo/absent") {
		t.Errorf("nomatch: Stalled %s %q", st, msg)
	}
	u = waitImageUpdate(t, cl, ns, "outage", "RegistryError", 60*time.Second)
	if st, _, _ := condition(u, "Stalled"); st == "True" {
		t.Error("a registry outage is not stalled")
	}
	u = waitImageUpdate(t, cl, ns, "arch", "TagShapeMissing", 60*time.Second)
	if _, _, msg := condition(u, "Ready"); !strings.Contains(msg, "v1.1.0") {
		t.Errorf("arch: %q does not name the held version", msg)
	}
	if latest, _, _ := unstructured.NestedString(u.Object, "status", "latestTag"); latest != "v1.0.0-amd64" {
		t.Errorf("arch latestTag %q", latest)
	}
	waitFor(t, "Service web Ready", 2*time.Minute, func() (bool, string) {
		u, err := getObj(context.Background(), cl.c, universeGVK("Service"), ns, "web")
		if err != nil {
			return false, err.Error()
		}
		return ready(u)
	})

	// A new tag: tag → commit → applied → Ready.
	before, oldFile := repo.head(t, "apps/web.yaml")
	reg.push(t, "hanzo/web", "v1.1.0", "v2.0.0-rc.1")
	tagged := time.Now()
	requestReconcile(t, cl, ns, "web")
	var commit *object.Commit
	var committed time.Time
	waitFor(t, "the bump commit", time.Minute, func() (bool, string) {
		c, _ := repo.head(t, "apps/web.yaml")
		if c.Hash == before.Hash {
			return false, "head unchanged"
		}
		commit, committed = c, time.Now()
		return true, ""
	})
	_, newFile := repo.head(t, "apps/web.yaml")
	if want := strings.Replace(oldFile, `"v1.0.0"`, `"v1.1.0"`, 1); newFile != want {
		t.Fatalf("the commit changed more than the tag:\n%q\nwant\n%q", newFile, want)
	}
	if len(commit.ParentHashes) != 1 || commit.ParentHashes[0] != before.Hash || !strings.Contains(commit.Message, webRepo+" v1.0.0 -> v1.1.0") {
		t.Fatalf("commit %s parents %v message %q", commit.Hash, commit.ParentHashes, commit.Message)
	}
	stats, err := commit.Stats()
	if err != nil || len(stats) != 1 || stats[0].Name != "apps/web.yaml" || stats[0].Addition != 1 || stats[0].Deletion != 1 {
		t.Fatalf("commit stats %v %v", stats, err)
	}
	var applied time.Time
	waitFor(t, "the Deployment at v1.1.0", time.Minute, func() (bool, string) {
		d, err := getObj(context.Background(), cl.c, gvkDeployment, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		img := ""
		if len(cs) > 0 {
			img = fmt.Sprint(cs[0].(map[string]any)["image"])
		}
		applied = time.Now()
		return img == webRepo+":v1.1.0", img
	})
	waitFor(t, "Service web Ready at v1.1.0", 2*time.Minute, func() (bool, string) {
		d, err := getObj(context.Background(), cl.c, gvkDeployment, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		gen, _, _ := unstructured.NestedInt64(d.Object, "metadata", "generation")
		obs, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
		upd, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
		rdy, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas")
		u, err := getObj(context.Background(), cl.c, universeGVK("Service"), ns, "web")
		if err != nil {
			return false, err.Error()
		}
		ok, msg := ready(u)
		return ok && obs >= gen && upd == 1 && rdy == 1, fmt.Sprintf("%s gen %d/%d updated %d ready %d", msg, obs, gen, upd, rdy)
	})
	readyAt := time.Now()
	u = waitImageUpdate(t, cl, ns, "web", "Pushed", 30*time.Second)
	if tag, _, _ := unstructured.NestedString(u.Object, "status", "lastPushedTag"); tag != "v1.1.0" {
		t.Errorf("lastPushedTag %q", tag)
	}
	if c, _, _ := unstructured.NestedString(u.Object, "status", "lastCommit"); c != commit.Hash.String() {
		t.Errorf("lastCommit %q, want %s", c, commit.Hash)
	}
	t.Logf("tag pushed → commit %v, → applied %v, → Service Ready %v (the sweep was triggered by the push, not the 45 s resync)",
		committed.Sub(tagged).Round(time.Millisecond), applied.Sub(tagged).Round(time.Millisecond), readyAt.Sub(tagged).Round(time.Millisecond))
	if applied.Sub(committed) > 30*time.Second {
		t.Errorf("applied %v after the commit: the push did not start the sweep", applied.Sub(committed))
	}

	// Two writers on one branch, and a human: web and worker get new tags at once while an
	// unrelated commit lands; every change is on main.
	reg.push(t, "hanzo/web", "v1.2.0")
	reg.push(t, "hanzo/worker", "1.1.0")
	requestReconcile(t, cl, ns, "web")
	requestReconcile(t, cl, ns, "worker")
	// The human's push races the operator's: like a person, it retries when refused.
	for i := 0; ; i++ {
		_, err := repo.srv.Commit(repo.name, "main", "human: docs", map[string][]byte{"docs/README.md": []byte("universe, edited\n")})
		if err == nil {
			break
		}
		if i == 10 {
			t.Fatalf("the human push never landed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitFor(t, "both bumps on main", time.Minute, func() (bool, string) {
		_, w := repo.head(t, "apps/web.yaml")
		_, k := repo.head(t, "apps/worker.yaml")
		return strings.Contains(w, `"v1.2.0"`) && strings.Contains(k, "tag: 1.1.0\r\n"), w + k
	})
	head, docs := repo.head(t, "docs/README.md")
	if docs != "universe, edited\n" {
		t.Fatalf("the human commit was lost: %q", docs)
	}
	msgs := []string{}
	it := object.NewCommitPreorderIter(head, nil, nil)
	_ = it.ForEach(func(c *object.Commit) error { msgs = append(msgs, strings.SplitN(c.Message, "\n", 2)[0]); return nil })
	joined := strings.Join(msgs, "|")
	for _, want := range []string{"v1.1.0 -> v1.2.0", "1.0.0 -> 1.1.0", "human: docs", "v1.0.0 -> v1.1.0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("history lacks %q: %s", want, joined)
		}
	}
	_, w := repo.head(t, "apps/worker.yaml")
	if want := strings.Replace(worker, "1.0.0\r", "1.1.0\r", 1); w != want {
		t.Errorf("worker file %q, want %q (CRLF kept)", w, want)
	}
}
