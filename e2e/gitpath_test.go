package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source/sopstest"
)

// TestGitPathAsFluxUsersExpect drives issue 30's "done when" through the built binary, one
// operator and one git server: Kustomize overlays, a SOPS Secret, path ordering with a
// failing dependency, and orphans that only `operator orphans --delete --yes` deletes.
// Subtests run in order on one repository; each pushes a commit and waits for its sweep.
func TestGitPathAsFluxUsersExpect(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-gitpath"
	ctx := context.Background()
	deleteNamespaceAfter(t, cl, ns)
	if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	identity, recipient := sopstest.Key()
	noteSecret(identity)
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sops-age"},
		Data: map[string][]byte{"age.agekey": []byte(identity + "\n")}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	files := map[string][]byte{} // the repository as pushed so far
	push := func(t *testing.T, msg string, change map[string][]byte) (string, time.Time) {
		t.Helper()
		for p, b := range change {
			if b == nil {
				delete(files, p)
			} else {
				files[p] = b
			}
		}
		return repo.push(t, msg, change)
	}
	sha, pushed := push(t, "root", map[string][]byte{"keep/keep.yaml": configMap(ns, "keep", "k", "v")})
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-sops-age-secret", "sops-age")
	op.sweptAt(t, sha, pushed)
	sweep := func(t *testing.T, sha string, pushed time.Time) *gitops.Report {
		t.Helper()
		op.reconcileNow(t)
		return op.sweptAt(t, sha, pushed)
	}
	cmValue := func(t *testing.T, name, key string) (string, bool) {
		t.Helper()
		var cm corev1.ConfigMap
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return "", false
			}
			t.Fatal(err)
		}
		return cm.Data[key], true
	}

	t.Run("overlays", func(t *testing.T) {
		kust := func(prefix string) []byte {
			return []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns +
				"\nnamePrefix: " + prefix + "-\nresources:\n- ../../base\ncommonLabels:\n  env: " + prefix + "\n")
		}
		sha, pushed := push(t, "overlays", map[string][]byte{
			"apps/base/kustomization.yaml":             []byte("resources:\n- app.yaml\n"),
			"apps/base/app.yaml":                       configMap("", "app", "greeting", "v1"),
			"apps/overlays/prod/kustomization.yaml":    kust("prod"),
			"apps/overlays/staging/kustomization.yaml": kust("staging"),
		})
		rep := sweep(t, sha, pushed)
		for _, s := range rep.Skips {
			t.Errorf("skip: %+v", s)
		}
		for _, name := range []string{"prod-app", "staging-app"} {
			if v, ok := cmValue(t, name, "greeting"); v != "v1" {
				t.Errorf("%s: greeting %q (exists %v), want v1", name, v, ok)
			}
		}
		if _, ok := cmValue(t, "app", "greeting"); ok {
			t.Error("the base was applied alone as ConfigMap app")
		}
		sha, pushed = push(t, "base v2", map[string][]byte{"apps/base/app.yaml": configMap("", "app", "greeting", "v2")})
		rep = sweep(t, sha, pushed)
		for _, name := range []string{"prod-app", "staging-app"} {
			if v, _ := cmValue(t, name, "greeting"); v != "v2" {
				t.Errorf("after the base changed, %s: greeting %q, want v2", name, v)
			}
			if r := result(rep, name); r == nil || r.Action != apply.Updated {
				t.Errorf("after the base changed, %s: %+v, want UPDATE", name, r)
			}
		}
	})

	t.Run("sops", func(t *testing.T) {
		const plain = "sops-plaintext-e2e-9d41c07b"
		noteSecret(plain)
		enc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: "+ns+
			"\nstringData:\n  password: "+plain+"\n"), recipient)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(enc, []byte(plain)) {
			t.Fatal("the encrypted file holds the plaintext")
		}
		sha, pushed := push(t, "sops", map[string][]byte{"secrets/db.yaml": enc})
		rep := sweep(t, sha, pushed)
		for _, s := range rep.Skips {
			t.Errorf("skip: %+v", s)
		}
		var sec corev1.Secret
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &sec); err != nil {
			t.Fatal(err)
		}
		if got := string(sec.Data["password"]); got != plain {
			t.Errorf("Secret db password is %d bytes, not the plaintext", len(got))
		}
		checkNoSecrets(t, "the operator log", op.logs())
		checkNoSecrets(t, "GET /gitops", op.reportBody())
		checkClusterNoSecrets(t, cl)
		dir := writeTree(t, files)
		for _, args := range [][]string{{"diff", "--kubeconfig", cl.kubeconfig, dir}, {"render", dir + "/secrets/db.yaml"}} {
			out, _ := exec.Command(operatorBin, args...).CombinedOutput()
			checkNoSecrets(t, "operator "+args[0], string(out))
			if bytes.Contains(out, []byte(plain)) {
				t.Errorf("operator %s prints the plaintext", args[0])
			}
		}
	})

	t.Run("ordering", func(t *testing.T) {
		dep := func(on string) []byte { return []byte("dependsOn: [" + on + "]\n") }
		sha, pushed := push(t, "chain", map[string][]byte{
			"chain/a/.universe.yaml": []byte("dependsOn: []\n"),
			"chain/a/cm.yaml":        configMap(ns, "chain-a", "k", "a"),
			"chain/b/.universe.yaml": dep("chain/a"),
			"chain/b/cm.yaml":        configMap(ns, "chain-b", "k", "b"),
			"chain/c/.universe.yaml": dep("chain/b"),
			"chain/c/cm.yaml":        configMap(ns, "chain-c", "k", "c"),
			// fail/base's ConfigMap is refused by the apiserver (an invalid key).
			"fail/base/.universe.yaml": []byte("dependsOn: []\n"),
			"fail/base/cm.yaml":        configMap(ns, "fail-base", "bad key!", "x"),
			"fail/dep/.universe.yaml":  dep("fail/base"),
			"fail/dep/cm.yaml":         configMap(ns, "fail-dep", "k", "d"),
		})
		rep := sweep(t, sha, pushed)
		idx := func(name string) int {
			return slices.IndexFunc(rep.Results, func(r apply.Result) bool { return r.Object.Name == name })
		}
		a, b, c := idx("chain-a"), idx("chain-b"), idx("chain-c")
		if a < 0 || a >= b || b >= c {
			t.Errorf("plan order of chain a, b, c: %d, %d, %d, want increasing", a, b, c)
		}
		for _, name := range []string{"chain-a", "chain-b", "chain-c"} {
			if r := result(rep, name); r == nil || r.Action != apply.Created {
				t.Errorf("%s: %+v, want CREATE", name, r)
			}
		}
		if r := result(rep, "fail-base"); r == nil || r.Action != apply.Failed {
			t.Errorf("fail-base: %+v, want ERROR", r)
		}
		if r := result(rep, "fail-dep"); r == nil || r.Action != gitops.Held || r.Reason != string(gitops.ReasonDependencyNotReady) ||
			!strings.Contains(r.Message, "fail/base") {
			t.Errorf("fail-dep: %+v, want HELD DependencyNotReady naming fail/base", r)
		}
		if _, ok := cmValue(t, "fail-dep", "k"); ok {
			t.Error("the held ConfigMap fail-dep exists")
		}
		// Fixing the dependency lets the dependent through.
		sha, pushed = push(t, "fix", map[string][]byte{"fail/base/cm.yaml": configMap(ns, "fail-base", "good", "x")})
		rep = sweep(t, sha, pushed)
		for _, name := range []string{"fail-base", "fail-dep"} {
			if r := result(rep, name); r == nil || r.Action != apply.Created {
				t.Errorf("after the fix, %s: %+v, want CREATE", name, r)
			}
		}
	})

	t.Run("orphans", func(t *testing.T) {
		two := append(configMap(ns, "orphan-1", "k", "1"), append([]byte("---\n"), configMap(ns, "orphan-2", "k", "2")...)...)
		sha, pushed := push(t, "two", map[string][]byte{"orphan/two.yaml": two})
		sweep(t, sha, pushed)
		// A ConfigMap git never declared, in the same namespace: never touched.
		if err := cl.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-from-git"}}); err != nil {
			t.Fatal(err)
		}
		removed, pushed := push(t, "remove two.yaml", map[string][]byte{"orphan/two.yaml": nil})
		rep := sweep(t, removed, pushed)
		var names []string
		for _, o := range rep.Orphans {
			names = append(names, o.Object.Name)
			if o.RemovedIn != removed || o.File != "orphan/two.yaml" || !o.Created {
				t.Errorf("orphan %+v: want removedIn %s, file orphan/two.yaml, created", o, removed)
			}
		}
		if !slices.Equal(names, []string{"orphan-1", "orphan-2"}) {
			t.Fatalf("orphans %v, want [orphan-1 orphan-2]", names)
		}
		if rep.Summary.Orphaned != 2 {
			t.Errorf("summary orphaned %d, want 2", rep.Summary.Orphaned)
		}
		if !strings.Contains(op.logs(), "Orphaned") {
			t.Error("the log does not say Orphaned")
		}
		// Another sweep and a listing delete nothing.
		rep = sweep(t, removed, time.Now())
		if len(rep.Orphans) != 2 {
			t.Errorf("second sweep: %d orphans, want 2", len(rep.Orphans))
		}
		out, err := exec.Command(operatorBin, "orphans", "--namespace", ns, "--kubeconfig", cl.kubeconfig).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "2 orphans") || !strings.Contains(string(out), removed) {
			t.Errorf("operator orphans: %v\n%s", err, out)
		}
		for _, name := range []string{"orphan-1", "orphan-2"} {
			if _, ok := cmValue(t, name, "k"); !ok {
				t.Errorf("%s was deleted before orphans --delete", name)
			}
		}
		out, err = exec.Command(operatorBin, "orphans", "--delete", "--yes", "--namespace", ns, "--kubeconfig", cl.kubeconfig).CombinedOutput()
		if err != nil {
			t.Fatalf("operator orphans --delete --yes: %v\n%s", err, out)
		}
		t.Logf("operator orphans --delete --yes:\n%s", out)
		for _, name := range []string{"orphan-1", "orphan-2"} {
			if _, ok := cmValue(t, name, "k"); ok {
				t.Errorf("%s still exists after orphans --delete", name)
			}
		}
		for _, name := range []string{"keep", "prod-app", "staging-app", "chain-a", "chain-b", "chain-c", "fail-base", "fail-dep", "not-from-git"} {
			var cm corev1.ConfigMap
			if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
				t.Errorf("%s after orphans --delete: %v", name, err)
			}
		}
		var sec corev1.Secret
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &sec); err != nil {
			t.Errorf("Secret db after orphans --delete: %v", err)
		}
		// The sweep drops the deleted orphans from its inventory once its watch sees them gone.
		waitFor(t, "the orphans dropped from the report", time.Minute, func() (bool, string) {
			op.reconcileNow(t)
			r, err := op.report()
			if err != nil {
				return false, err.Error()
			}
			return len(r.Orphans) == 0, fmt.Sprintf("%d orphans", len(r.Orphans))
		})
	})
}

// configMap is a ConfigMap manifest with one data key (no namespace line when ns is "").
func configMap(ns, name, key, value string) []byte {
	meta := "  name: " + name + "\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n" + meta + "data:\n  \"" + key + "\": \"" + value + "\"\n")
}

// result is the report's result for the ConfigMap or Secret name, nil when it has none.
func result(rep *gitops.Report, name string) *apply.Result {
	for i, r := range rep.Results {
		if r.Object.Name == name {
			return &rep.Results[i]
		}
	}
	return nil
}
