package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

// countDiffer stands for the server-side dry-run of managed-resources and counts the calls.
type countDiffer struct {
	mu    sync.Mutex
	calls int
}

func (d *countDiffer) Diff(context.Context, *unstructured.Unstructured) ([]ChildDiff, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return nil, nil
}

func (d *countDiffer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// anyCommit describes any revision it is asked for, as the universe repository's clone does
// for any commit it holds (another org's included).
type anyCommit struct {
	mu    sync.Mutex
	asked []string
}

func (a *anyCommit) Metadata(_ context.Context, rev string) (*RevisionMetadata, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, rev)
	return &RevisionMetadata{Author: "someone <someone@globex.test>", Message: "globex: internal change " + rev}, nil
}

// sweptAt is the git sweep's record: every CR of namespace came from git at revision.
type sweptAt struct{ namespace, revision string }

func (g sweptAt) Record(_ schema.GroupVersionKind, namespace, _ string) *GitRecord {
	if namespace != g.namespace {
		return nil
	}
	return &GitRecord{RepoURL: "https://git.example.test/universe", Revision: g.revision, File: "apps/web.yaml", Action: "InSync"}
}

// TestHostileTenant plays a member of org acme against the real apiserver: the plane's org
// was the CR's own hanzo.ai/org label, which anyone who can write a CR sets; duplicate
// names answered "several applications" before the visibility check (a cross-org name
// oracle); managed-resources ran unthrottled dry-runs; revisions/{sha}/metadata described any
// commit. Now an application's org is its namespace's (kinds.Tenancy: the label counts only
// when a trusted manager wrote it, read from managedFields in the plane's cache).
func TestHostileTenant(t *testing.T) {
	base := testbed.APIServer(t)
	kc, err := client.New(base, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, kc)
	iss, err := testbed.NewOIDCIssuer("aud")
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	ao := DefaultAuthOptions()
	ao.Issuer, ao.Audience, ao.AdminOrg = iss.URL, "aud", "platform"
	auth, err := NewAuthenticator(context.Background(), ao, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const commit = "c0ffee0000000000000000000000000000000001"
	differ, commits := &countDiffer{}, &anyCommit{}
	_, srv := planeOn(t, base, auth, prometheus.NewRegistry(), func(c *Config) {
		c.Differ, c.Revisions, c.Git = differ, commits, sweptAt{namespace: "hostile-a", revision: commit}
		c.Options.DiffBurst, c.Options.DiffRate = 3, 0.01
	})
	member := iss.Token(map[string]any{"sub": "ann", "aud": "aud", "org": "acme"})
	admin := iss.Token(map[string]any{"sub": "root", "aud": "aud", "org": "platform", "groups": []string{"admin"}})

	ctx := context.Background()
	namespace := func(name, manager, org string) {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": name, "labels": map[string]any{kinds.OrgLabel: org}}}}
		if err := kc.Apply(ctx, client.ApplyConfigurationFromUnstructured(ns), client.FieldOwner(manager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	namespace("hostile-a", "cloud-api", "acme")   // acme's tenant namespace, labelled by the platform
	namespace("hostile-b", "cloud-api", "globex") // globex's
	namespace("hostile-squat", "kubectl", "acme") // labelled acme by someone untrusted
	service := func(ns, name, claims string) {
		cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hanzo.ai/v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"image": map[string]any{"repository": "ghcr.io/x/" + name, "tag": "v1"}, "replicas": int64(1)}}}
		if claims != "" {
			cr.SetLabels(map[string]string{kinds.OrgLabel: claims})
		}
		if err := kc.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	service("hostile-a", "web", "")            // acme's, by its namespace
	service("hostile-b", "web", "")            // globex's, the same name
	service("hostile-b", "secret-project", "") // globex's, a name acme must not learn
	service("hostile-b", "spoof", "acme")      // in globex's namespace, claiming acme
	service("hostile-squat", "squat", "acme")  // in a namespace no trusted manager gave an org

	api := srv.URL + "/v1/deploy/api/v1"
	call := func(path, token string) (int, http.Header, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, api+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var list ApplicationList
		code, _, b := call("/applications", admin)
		return code == 200 && json.Unmarshal(b, &list) == nil && len(list.Items) >= 5, nil
	})
	if err != nil {
		t.Fatal("the plane never listed the five applications")
	}

	t.Run("the org is the namespace's", func(t *testing.T) {
		var list ApplicationList
		code, _, b := call("/applications", member)
		if code != 200 || json.Unmarshal(b, &list) != nil {
			t.Fatalf("member list: %d %s", code, b)
		}
		var got []string
		for _, a := range list.Items {
			if strings.HasPrefix(a.Namespace, "hostile-") {
				got = append(got, a.Namespace+"/"+a.Name+" project "+a.Spec.Project)
			}
		}
		if len(got) != 1 || got[0] != "hostile-a/web project acme" {
			t.Fatalf("member of acme sees %v, want only hostile-a/web (project acme): not the CR claiming acme in globex's namespace, nor the one in a self-labelled namespace", got)
		}
		for _, c := range []struct{ ns, name, reason string }{{"hostile-b", "spoof", kinds.ReasonOrgMismatch}, {"hostile-squat", "squat", kinds.ReasonNamespaceHasNoOrg}} {
			var app Application
			code, _, b := call("/applications/"+c.name+"?appNamespace="+c.ns, admin)
			if code != 200 || json.Unmarshal(b, &app) != nil {
				t.Fatalf("admin get %s: %d %s", c.name, code, b)
			}
			found := false
			for _, cond := range app.Status.Conditions {
				found = found || (cond.Type == "InvalidSpecError" && strings.Contains(cond.Message, c.reason))
			}
			if !found || app.Spec.Project != DefaultProject {
				t.Errorf("admin sees %s with conditions %+v project %q, want an InvalidSpecError naming %s", c.name, app.Status.Conditions, app.Spec.Project, c.reason)
			}
		}
	})

	t.Run("visibility before any other answer", func(t *testing.T) {
		// web exists in acme's and globex's namespaces: acme's member gets acme's, not
		// "several applications have this name"
		var app Application
		code, _, b := call("/applications/web", member)
		if code != 200 || json.Unmarshal(b, &app) != nil || app.Namespace != "hostile-a" {
			t.Fatalf("member get web without appNamespace: %d %s, want hostile-a's web", code, b)
		}
		// another org's name answers exactly like a name that exists nowhere
		for _, sub := range []string{"", "/resource-tree", "/managed-resources", "/revisions/" + commit + "/metadata", "/syncwindows"} {
			for _, q := range []string{"", "?appNamespace=hostile-b"} {
				c1, _, hidden := call("/applications/secret-project"+sub+q, member)
				c2, _, absent := call("/applications/no-such-app"+sub+q, member)
				if c1 != c2 || string(hidden) != string(absent) || c1 != http.StatusForbidden {
					t.Errorf("%s%s: globex's name answers %d %s, a missing one %d %s", sub, q, c1, hidden, c2, absent)
				}
			}
		}
		if differ.count() != 0 {
			t.Fatalf("a hidden application's managed-resources ran %d dry-runs", differ.count())
		}
	})

	t.Run("revisions only of visible applications", func(t *testing.T) {
		code, _, b := call("/applications/web/revisions/"+commit+"/metadata?appNamespace=hostile-a", member)
		if code != 200 {
			t.Fatalf("the revision the plane observed for web: %d %s", code, b)
		}
		commits.mu.Lock()
		commits.asked = nil
		commits.mu.Unlock()
		other := "0ther00000000000000000000000000000000002"
		code, _, b = call("/applications/web/revisions/"+other+"/metadata?appNamespace=hostile-a", member)
		if code != http.StatusNotFound || strings.Contains(string(b), "globex") {
			t.Fatalf("any commit through a visible application: %d %s, want 404", code, b)
		}
		commits.mu.Lock()
		defer commits.mu.Unlock()
		if len(commits.asked) != 0 {
			t.Fatalf("the repository was asked about %v", commits.asked)
		}
	})

	t.Run("dry-runs are rate limited per identity", func(t *testing.T) {
		before := differ.count()
		codes := []int{}
		var retry string
		for range 5 {
			code, h, _ := call("/applications/web/managed-resources?appNamespace=hostile-a", member)
			codes = append(codes, code)
			if code == http.StatusTooManyRequests {
				retry = h.Get("Retry-After")
			}
		}
		if ran := differ.count() - before; ran != 3 || codes[3] != http.StatusTooManyRequests || retry == "" {
			t.Fatalf("5 managed-resources in a row: %v, %d dry-runs, Retry-After %q; want 3 then 429 with Retry-After", codes, ran, retry)
		}
		if code, _, b := call("/applications/web/managed-resources?appNamespace=hostile-a", admin); code != 200 {
			t.Fatalf("another identity's budget: %d %s", code, b)
		}
	})

	t.Run("moving a namespace's org moves its applications", func(t *testing.T) {
		namespace("hostile-b", "cloud-api", "acme")
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			code, _, _ := call("/applications/secret-project?appNamespace=hostile-b", member)
			return code == 200, nil
		})
		if err != nil {
			t.Fatal("acme's member never saw hostile-b's applications after the platform gave it to acme")
		}
	})
}
