package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/e2e/testbed"
)

const planeAudience = "deploy-dashboard"

// planeAPI calls the plane as a dashboard does.
type planeAPI struct {
	base string // http://host:port/v1/deploy
	// bodies keeps every response body, for the Secret check.
	bodies *bytes.Buffer
}

func (p planeAPI) do(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	p.bodies.Write(b)
	return resp.StatusCode, b
}

// get decodes a 200 answer strictly into v: every field the plane sends must be a field of
// the reference's shape.
func (p planeAPI) get(t *testing.T, path, token string, v any) []byte {
	t.Helper()
	code, b := p.do(t, http.MethodGet, path, token, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, b)
	}
	if v != nil {
		strictDecode(t, path, b, v)
	}
	return b
}

func strictDecode(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: does not decode into %T: %v\n%s", what, v, err, b)
	}
}

// orgNamespace makes ns org's tenant, as the platform's cloud API labels one (a trusted
// manager of kinds.Tenancy).
func orgNamespace(t *testing.T, cl *cluster, ns, org string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns, "labels": map[string]any{"hanzo.ai/org": org}}}}
	if err := cl.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("cloud-api")); err != nil {
		t.Fatal(err)
	}
}

func labelled(yaml, name, org string) []byte {
	return []byte(strings.Replace(yaml, "metadata:\n  name: "+name+"\n", "metadata:\n  name: "+name+"\n  labels:\n    hanzo.ai/org: "+org+"\n", 1))
}

// TestDeployPlane drives `operator run --deploy-plane-bind-address` with an OIDC issuer served
// in the test: every route decodes into the reference's shapes, tenancy by org, the admin's
// sync and rollback, Secrets never surfaced, and the application stream.
func TestDeployPlane(t *testing.T) {
	cl := getCluster(t)
	ctx := context.Background()
	repo := newGitRepo(t)
	const ns = "e2e-plane"
	deleteNamespaceAfter(t, cl, ns)
	ensureNamespace(t, cl.c, ns)
	orgNamespace(t, cl, ns, "acme")
	const secretValue = "s3cr3t-e2e-plane-value"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-creds", Namespace: ns}, StringData: map[string]string{"password": secretValue}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	files := universeFiles(t, ns)
	web := strings.Replace(string(files["apps/web.yaml"]), "  env:\n", "  env:\n    - name: DB_PASSWORD\n      valueFrom:\n        secretKeyRef: { name: web-creds, key: password }\n", 1)
	files["apps/web.yaml"] = labelled(web, "web", "acme")
	files["apps/worker.yaml"] = labelled(string(files["apps/worker.yaml"]), "worker", "globex")
	// worker claims globex in acme's namespace: the plane shows it to no org
	sha, _ := repo.push(t, "the example universe in org acme's namespace, worker labelled globex", files)

	iss, err := testbed.NewOIDCIssuer(planeAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--log-level", "debug",
		"--deploy-plane-bind-address", addr, "--deploy-plane-oidc-issuer", iss.URL, "--deploy-plane-oidc-audience", planeAudience,
		"--deploy-plane-keepalive", "400ms", "--deploy-plane-admin-org", "platform")
	api := planeAPI{base: "http://" + addr + "/v1/deploy", bodies: &bytes.Buffer{}}
	admin := iss.Token(map[string]any{"sub": "root", "email": "root@example.test", "aud": planeAudience, "org": "platform", "groups": []string{"admin"}})
	member := iss.Token(map[string]any{"sub": "ann", "aud": planeAudience, "org": "acme", "groups": []string{"dev"}})
	noteSecret(secretValue, admin, member)
	op.reconcileNow(t)
	op.sweptAt(t, sha, time.Now().Add(-time.Minute))

	apps := map[string]string{"web": "Service", "worker": "App", "sql": "SQL", "edge": "Ingress", "api": "HanzoService"}
	var list deploy.ApplicationList
	// Argo CD's Ingress rule: Progressing until a load balancer reports an address, which
	// nothing does on this cluster; every other application Healthy.
	wantHealth := func(name string) string {
		if name == "edge" {
			return deploy.HealthProgressing
		}
		return deploy.HealthHealthy
	}
	waitFor(t, "every application Synced, Healthy but the Ingress", 2*time.Minute, func() (bool, string) {
		list = deploy.ApplicationList{}
		strictDecode(t, "list", api.get(t, "/api/v1/applications", admin, nil), &list)
		got := map[string]bool{}
		for _, a := range list.Items {
			if _, ok := apps[a.Name]; ok && a.Namespace == ns {
				if a.Status.Health.Status != wantHealth(a.Name) || a.Status.Sync.Status != deploy.SyncSynced {
					return false, fmt.Sprintf("%s: %s/%s %s", a.Name, a.Status.Health.Status, a.Status.Sync.Status, a.Status.Health.Message)
				}
				got[a.Name] = true
			}
		}
		return len(got) == len(apps), fmt.Sprintf("%d of %d applications", len(got), len(apps))
	})
	// the Secret becomes a controlled child of web, as a projector's would be
	webCR, err := getObj(ctx, cl.c, universeGVK("Service"), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(secret.DeepCopy())
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: "hanzo.ai/v1", Kind: "Service", Name: "web", UID: webCR.GetUID(), Controller: ptr.To(true)}}
	if err := cl.c.Patch(ctx, secret, patch); err != nil {
		t.Fatal(err)
	}

	t.Run("shapes", func(t *testing.T) { planeShapes(t, api, admin, ns, sha) })
	t.Run("tenancy", func(t *testing.T) { planeTenancy(t, api, member, admin, ns) })
	t.Run("sync", func(t *testing.T) { planeSync(t, api, op, cl, admin, ns) })
	t.Run("rollback", func(t *testing.T) { planeRollback(t, api, cl, repo, admin, ns) })
	t.Run("stream", func(t *testing.T) { planeStream(t, api, cl, admin, member, ns) })
	t.Run("tokens", func(t *testing.T) {
		expired := iss.Token(map[string]any{"sub": "root", "aud": planeAudience, "groups": []string{"admin"},
			"exp": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Add(-time.Hour).Unix()})
		wrongAud := iss.Token(map[string]any{"sub": "root", "aud": "other", "groups": []string{"admin"}})
		unsigned := iss.UnsignedToken(map[string]any{"sub": "root", "aud": planeAudience, "groups": []string{"admin"}})
		for name, tok := range map[string]string{"none": "", "expired": expired, "wrong audience": wrongAud, "unsigned": unsigned} {
			for _, path := range []string{"/api/v1/applications", "/api/v1/applications/web/resource-tree?appNamespace=" + ns, "/api/version", "/api/v1/stream/applications"} {
				if code, b := api.do(t, http.MethodGet, path, tok, nil); code != http.StatusUnauthorized {
					t.Errorf("%s token, %s: %d %s, want 401", name, path, code, b)
				}
			}
			if code, _ := api.do(t, http.MethodPost, "/api/v1/applications/web/sync?appNamespace="+ns, tok, map[string]any{}); code != http.StatusUnauthorized {
				t.Errorf("%s token, sync: %d, want 401", name, code)
			}
		}
	})

	// Secrets never surfaced: in no body this test received
	all := api.bodies.String()
	for _, leak := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue))} {
		if strings.Contains(all, leak) {
			t.Errorf("the Secret's value appeared in a response")
		}
	}
	if strings.Contains(all, `"kind":"Secret"`) || strings.Contains(all, `\"kind\":\"Secret\"`) {
		t.Errorf("a Secret object appeared in a response")
	}
}

func planeShapes(t *testing.T, api planeAPI, admin, ns, sha string) {
	q := "?appNamespace=" + ns
	var app deploy.Application
	api.get(t, "/api/v1/applications/web"+q, admin, &app)
	if app.Spec.Source == nil || app.Spec.Source.Path != "apps/web.yaml" || app.Status.Sync.Revision != sha {
		t.Errorf("web: source %+v revision %q, want apps/web.yaml at %s", app.Spec.Source, app.Status.Sync.Revision, sha)
	}
	if app.Spec.Project != "acme" || app.Spec.Destination.Namespace != ns {
		t.Errorf("web: project %q destination %+v", app.Spec.Project, app.Spec.Destination)
	}
	kinds := map[string]bool{}
	for _, r := range app.Status.Resources {
		kinds[r.Kind] = true
		if (r.Health == nil && (r.Kind == "Deployment" || r.Kind == "Service")) || r.Status != deploy.SyncSynced {
			t.Errorf("web resource %s/%s: %+v", r.Kind, r.Name, r)
		}
	}
	if !kinds["Deployment"] || !kinds["Service"] || kinds["Secret"] {
		t.Errorf("web resources: %v", kinds)
	}
	// the raw JSON: numeric history ids
	raw := map[string]any{}
	_ = json.Unmarshal(api.get(t, "/api/v1/applications/web"+q, admin, nil), &raw)
	hist, _, _ := unstructured.NestedSlice(raw, "status", "history")
	if len(hist) == 0 {
		t.Fatalf("web has no history")
	}
	if _, ok := hist[0].(map[string]any)["id"].(float64); !ok {
		t.Errorf("history id is not a JSON number: %#v", hist[0])
	}

	// resource tree: ResourceRef inline, Pods under ReplicaSets under the Deployment
	var tree deploy.ApplicationTree
	body := api.get(t, "/api/v1/applications/web/resource-tree"+q, admin, &tree)
	var rawTree struct {
		Nodes []map[string]any `json:"nodes"`
	}
	_ = json.Unmarshal(body, &rawTree)
	byKind := map[string]int{}
	for _, n := range rawTree.Nodes {
		for _, k := range []string{"kind", "name", "namespace", "uid", "version"} {
			if _, ok := n[k]; !ok {
				t.Errorf("tree node without inline %q: %v", k, n)
			}
		}
		if _, nested := n["resourceRef"]; nested {
			t.Errorf("tree node nests its ResourceRef: %v", n)
		}
		byKind[n["kind"].(string)]++
	}
	if byKind["Deployment"] != 1 || byKind["ReplicaSet"] < 1 || byKind["Pod"] != 2 || byKind["Secret"] != 0 {
		t.Errorf("tree kinds %v: want one Deployment, its ReplicaSet, two Pods, no Secret", byKind)
	}
	for _, n := range tree.Nodes {
		if n.Kind == "Pod" && (len(n.ParentRefs) != 1 || n.ParentRefs[0].Kind != "ReplicaSet" || n.Health == nil) {
			t.Errorf("pod node %s: parents %+v health %+v", n.Name, n.ParentRefs, n.Health)
		}
	}

	// managed resources: states are JSON documents in strings
	var mr deploy.ManagedResourcesResponse
	api.get(t, "/api/v1/applications/web/managed-resources"+q, admin, &mr)
	seen := map[string]bool{}
	for _, d := range mr.Items {
		seen[d.Kind] = true
		for name, s := range map[string]string{"liveState": d.LiveState, "targetState": d.TargetState} {
			var obj map[string]any
			if err := json.Unmarshal([]byte(s), &obj); err != nil || obj["kind"] != d.Kind {
				t.Errorf("%s %s/%s: %s is not the object as a JSON string: %.80s", d.Kind, d.Namespace, d.Name, name, s)
			}
		}
		if d.Modified {
			t.Errorf("%s/%s modified in a converged universe: %s", d.Kind, d.Name, d.Diff)
		}
	}
	if !seen["Deployment"] || seen["Secret"] {
		t.Errorf("managed resources kinds %v", seen)
	}

	var md deploy.RevisionMetadata
	api.get(t, "/api/v1/applications/web/revisions/"+app.Status.History[0].Revision+"/metadata"+q, admin, &md)
	api.get(t, "/api/v1/applications/web/revisions/"+sha+"/metadata"+q, admin, &md)
	if !strings.HasPrefix(md.Message, "the example universe") || md.Date == nil || md.Author == "" {
		t.Errorf("metadata of %s: %+v, want the pushed commit", sha, md)
	}
	var clusters deploy.ClusterList
	api.get(t, "/api/v1/clusters", admin, &clusters)
	if len(clusters.Items) != 1 || clusters.Items[0].Info.ConnectionState.Status != "Successful" || clusters.Items[0].ServerVersion == "" {
		t.Errorf("clusters: %+v", clusters.Items)
	}
	var projects deploy.AppProjectList
	api.get(t, "/api/v1/projects", admin, &projects)
	names := []string{}
	for _, p := range projects.Items {
		names = append(names, p.Name)
	}
	// one project per namespace org; worker's own globex label makes no project
	if strings.Join(names, ",") != "acme,default" {
		t.Errorf("projects %v, want acme, default", names)
	}
	var settings deploy.Settings
	api.get(t, "/api/v1/settings", admin, &settings)
	var version deploy.VersionMessage
	vb := api.get(t, "/api/version", admin, &version)
	if !strings.Contains(string(vb), `"Version":`) || !strings.Contains(string(vb), `"GoVersion":`) || version.GoVersion == "" {
		t.Errorf("version keys are not capitalised: %s", vb)
	}
	// the same routes without the api/v1 segment
	var again deploy.ApplicationList
	api.get(t, "/applications?selector=hanzo.ai/org%3Dacme", admin, &again)
	// only this namespace's: another test's acme namespace may still be terminating
	again.Items = slices.DeleteFunc(again.Items, func(a deploy.Application) bool { return a.Namespace != ns })
	if len(again.Items) != 1 || again.Items[0].Name != "web" {
		t.Errorf("selector hanzo.ai/org=acme: %d items", len(again.Items))
	}
	// the project is the namespace's org; worker's own globex label moves it nowhere
	api.get(t, "/api/v1/applications?projects=globex", admin, &again)
	if len(again.Items) != 0 {
		t.Errorf("projects=globex: %d items, want none (worker's label is not its namespace's org)", len(again.Items))
	}
	var worker deploy.Application
	api.get(t, "/api/v1/applications/worker?appNamespace="+ns, admin, &worker)
	mismatch := false
	for _, c := range worker.Status.Conditions {
		mismatch = mismatch || (c.Type == "InvalidSpecError" && strings.Contains(c.Message, "OrgMismatch"))
	}
	if !mismatch {
		t.Errorf("worker's conditions %+v, want an InvalidSpecError naming OrgMismatch", worker.Status.Conditions)
	}
	// fields: only the named paths
	fb := api.get(t, "/api/v1/applications?fields=metadata.resourceVersion,items.metadata.name,items.status.health", admin, nil)
	var fl map[string]any
	_ = json.Unmarshal(fb, &fl)
	items, _ := fl["items"].([]any)
	if len(items) == 0 {
		t.Fatalf("fields: no items: %s", fb)
	}
	first := items[0].(map[string]any)
	if _, ok := first["spec"]; ok || first["metadata"] == nil || len(first["metadata"].(map[string]any)) != 1 {
		t.Errorf("fields not applied: %v", first)
	}
}

func planeTenancy(t *testing.T, api planeAPI, member, admin, ns string) {
	q := "?appNamespace=" + ns
	var list deploy.ApplicationList
	api.get(t, "/api/v1/applications", member, &list)
	names := []string{}
	for _, a := range list.Items {
		if a.Namespace == ns { // another test's acme namespace may still be terminating
			names = append(names, a.Name)
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "api,edge,sql,web" {
		t.Fatalf("member of acme sees %v, want acme's namespace but worker (labelled globex)", names)
	}
	for _, path := range []string{"/api/v1/applications/worker" + q, "/api/v1/applications/worker/resource-tree" + q,
		"/api/v1/applications/worker/managed-resources" + q, "/api/v1/applications/nonexistent" + q, "/api/v1/projects/globex"} {
		if code, b := api.do(t, http.MethodGet, path, member, nil); code != http.StatusForbidden {
			t.Errorf("member GET %s: %d %s, want 403", path, code, b)
		}
	}
	api.get(t, "/api/v1/applications/web/resource-tree"+q, member, &deploy.ApplicationTree{})
	for _, verb := range []string{"sync", "rollback", "reconcile"} {
		if code, b := api.do(t, http.MethodPost, "/api/v1/applications/web/"+verb+q, member, map[string]any{"id": 0}); code != http.StatusForbidden {
			t.Errorf("member POST %s on its own app: %d %s, want 403", verb, code, b)
		}
	}
	if code, _ := api.do(t, http.MethodPost, "/reconcile", member, nil); code != http.StatusForbidden {
		t.Errorf("member POST /reconcile: %d, want 403", code)
	}
	var ci deploy.CanIResponse
	api.get(t, "/api/v1/account/can-i/applications/sync/acme/web", member, &ci)
	if ci.Value != "no" {
		t.Errorf("member can-i sync: %q", ci.Value)
	}
	api.get(t, "/api/v1/account/can-i/applications/get/acme/web", member, &ci)
	if ci.Value != "yes" {
		t.Errorf("member can-i get: %q", ci.Value)
	}
	api.get(t, "/api/v1/account/can-i/applications/sync/globex/worker", admin, &ci)
	if ci.Value != "yes" {
		t.Errorf("admin can-i sync: %q", ci.Value)
	}
	// the org comes from the token only
	code, b := api.do(t, http.MethodGet, "/api/v1/applications?org=globex&project=globex", member, nil)
	var l deploy.ApplicationList
	if code != http.StatusOK || json.Unmarshal(b, &l) != nil || len(l.Items) != 0 {
		t.Errorf("member asking for globex by parameter: %d, %d items", code, len(l.Items))
	}
}

func countLines(logs string, parts ...string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			n++
		}
	}
	return n
}

func planeSync(t *testing.T, api planeAPI, op *operator, cl *cluster, admin, ns string) {
	q := "?appNamespace=" + ns
	reconciles := countLines(op.logs(), `"Reconciled"`, `"name":"worker"`)
	sweeps := countLines(op.logs(), `"Sweep complete`)
	code, b := api.do(t, http.MethodPost, "/api/v1/applications/worker/sync"+q, admin, map[string]any{"appNamespace": ns, "prune": false, "syncOptions": map[string]any{"items": []string{}}})
	if code != http.StatusOK {
		t.Fatalf("admin sync: %d %s", code, b)
	}
	var app deploy.Application
	strictDecode(t, "sync", b, &app)
	if app.Operation == nil || app.Operation.InitiatedBy.Username != "root@example.test" {
		t.Errorf("sync answer operation %+v", app.Operation)
	}
	waitFor(t, "a reconcile of worker and a sweep after the sync", time.Minute, func() (bool, string) {
		r, s := countLines(op.logs(), `"Reconciled"`, `"name":"worker"`), countLines(op.logs(), `"Sweep complete`)
		return r > reconciles && s > sweeps, fmt.Sprintf("reconciles %d→%d, sweeps %d→%d", reconciles, r, sweeps, s)
	})
	u, err := getObj(context.Background(), cl.c, universeGVK("App"), ns, "worker")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAnnotations()[deploy.AnnotationSyncInitiatedBy] != "root@example.test" {
		t.Errorf("worker annotations %v", u.GetAnnotations())
	}
	waitFor(t, "the sync's operation state Succeeded", time.Minute, func() (bool, string) {
		var a deploy.Application
		api.get(t, "/api/v1/applications/worker"+q, admin, &a)
		if a.Status.OperationState == nil {
			return false, "no operationState"
		}
		return a.Status.OperationState.Phase == deploy.PhaseSucceeded && a.Status.OperationState.Operation.InitiatedBy.Username == "root@example.test",
			a.Status.OperationState.Phase + ": " + a.Status.OperationState.Message
	})
	if code, b := api.do(t, http.MethodPost, "/reconcile", admin, nil); code != http.StatusOK {
		t.Errorf("admin POST /reconcile: %d %s", code, b)
	}
}

func planeRollback(t *testing.T, api planeAPI, cl *cluster, repo *gitRepo, admin, ns string) {
	ctx := context.Background()
	q := "?appNamespace=" + ns
	// web came from git: a rollback goes through the repository. Its upgrade history (as the
	// upgrade machine records it) names an older image.
	webCR, err := getObj(ctx, cl.c, universeGVK("Service"), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	hist := []byte(`{"status":{"upgradeHistory":[{"image":"ghcr.io/hanzoai/example:v1.2.0","result":"Succeeded","at":"2026-11-30T09:00:00Z"}]}}`)
	if err := cl.c.Status().Patch(ctx, webCR, client.RawPatch(types.MergePatchType, hist)); err != nil {
		t.Fatal(err)
	}
	var web deploy.Application
	waitFor(t, "web's history", 30*time.Second, func() (bool, string) {
		web = deploy.Application{}
		api.get(t, "/api/v1/applications/web"+q, admin, &web)
		return len(web.Status.History) > 0 && web.Status.History[0].Revision == "ghcr.io/hanzoai/example:v1.2.0", fmt.Sprintf("%+v", web.Status.History)
	})
	before, _ := repo.head(t, "apps/web.yaml")
	code, b := api.do(t, http.MethodPost, "/api/v1/applications/web/rollback"+q, admin, deploy.RollbackRequest{ID: web.Status.History[0].ID, AppNamespace: ns})
	if code != http.StatusOK {
		t.Fatalf("rollback of a CR from git: %d %s, want 200 and a commit", code, b)
	}
	var rolled deploy.Application
	strictDecode(t, "rollback", b, &rolled)
	head, file := repo.head(t, "apps/web.yaml")
	if rolled.Operation == nil || rolled.Operation.Sync == nil || rolled.Operation.Sync.Revision != head.Hash.String() ||
		len(head.ParentHashes) != 1 || head.ParentHashes[0] != before.Hash {
		t.Fatalf("rollback answered %+v; head %s (parents %v), before %s", rolled.Operation, head.Hash, head.ParentHashes, before.Hash)
	}
	if !strings.Contains(file, "    tag: v1.2.0\n") || !strings.Contains(head.Message, "rollback Service "+ns+"/web to ghcr.io/hanzoai/example:v1.2.0") ||
		!strings.Contains(head.Message, "root@example.test") {
		t.Errorf("rollback commit %q, file\n%s", head.Message, file)
	}
	waitFor(t, "web's Deployment on the rolled-back image (the sweep applied the commit)", time.Minute, func() (bool, string) {
		d, err := getObj(ctx, cl.c, gvkDeployment, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		img := cs[0].(map[string]any)["image"]
		return img == "ghcr.io/hanzoai/example:v1.2.0", fmt.Sprint(img)
	})
	// a CR created in the cluster, with an upgrade history its upgrade machine recorded
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hanzo.ai/v1", "kind": "Service",
		"metadata": map[string]any{"name": "direct", "namespace": ns, "labels": map[string]any{"hanzo.ai/org": "acme"}},
		"spec": map[string]any{"image": map[string]any{"repository": "ghcr.io/example/direct", "tag": "v1.1.0"}, "replicas": int64(1),
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}}},
	}}
	if err := cl.c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	status := []byte(`{"status":{"upgradeHistory":[{"image":"ghcr.io/example/direct:v1.0.0","result":"Succeeded","at":"2026-11-30T10:00:00Z"},` +
		`{"image":"ghcr.io/example/direct:v1.1.0-rc1","result":"RolledBack","at":"2026-11-30T11:00:00Z"}]}}`)
	if err := cl.c.Status().Patch(ctx, cr, client.RawPatch(types.MergePatchType, status)); err != nil {
		t.Fatal(err)
	}
	var app deploy.Application
	waitFor(t, "direct's history", 30*time.Second, func() (bool, string) {
		// the plane answers from its cache: until the watch delivers the new CR it is 404
		code, b := api.do(t, http.MethodGet, "/api/v1/applications/direct"+q, admin, nil)
		if code != http.StatusOK {
			return false, fmt.Sprintf("%d %s", code, b)
		}
		app = deploy.Application{}
		strictDecode(t, "direct", b, &app)
		return len(app.Status.History) == 2, fmt.Sprintf("%+v", app.Status.History)
	})
	if app.Status.History[0].Revision != "ghcr.io/example/direct:v1.0.0" || app.Status.History[1].Revision != "ghcr.io/example/direct:v1.1.0" {
		t.Fatalf("history %+v", app.Status.History)
	}
	if code, b := api.do(t, http.MethodPost, "/api/v1/applications/direct/rollback"+q, admin, deploy.RollbackRequest{ID: 7}); code != http.StatusBadRequest {
		t.Errorf("rollback to an unknown id: %d %s, want 400", code, b)
	}
	code, b = api.do(t, http.MethodPost, "/api/v1/applications/direct/rollback"+q, admin, deploy.RollbackRequest{ID: 0, AppNamespace: ns})
	if code != http.StatusOK {
		t.Fatalf("rollback: %d %s", code, b)
	}
	waitFor(t, "direct's Deployment on the old image", time.Minute, func() (bool, string) {
		d, err := getObj(ctx, cl.c, gvkDeployment, ns, "direct")
		if err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		img := cs[0].(map[string]any)["image"]
		return img == "ghcr.io/example/direct:v1.0.0", fmt.Sprint(img)
	})
}

// sseEvent is one frame of a stream: a data line, or a keepalive comment.
type sseEvent struct {
	keepalive bool
	data      []byte
}

func openStream(t *testing.T, url, token string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip") // asked for, and must not be used
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan sseEvent, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 4<<20), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ":":
				ch <- sseEvent{keepalive: true}
			case strings.HasPrefix(line, "data: "):
				ch <- sseEvent{data: []byte(strings.TrimSpace(strings.TrimPrefix(line, "data: ")))}
			}
		}
	}()
	return resp, ch
}

func planeStream(t *testing.T, api planeAPI, cl *cluster, admin, member, ns string) {
	ctx := context.Background()
	resp, events := openStream(t, api.base+"/api/v1/stream/applications?appNamespace="+ns, admin)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("stream headers: %v", resp.Header)
	}
	_, memberEvents := openStream(t, api.base+"/api/v1/stream/applications", member)
	type watch struct {
		Result deploy.ApplicationWatchEvent `json:"result"`
	}
	added := map[string]bool{}
	deadline := time.After(20 * time.Second)
	keepalives := 0
	for len(added) < 6 || keepalives == 0 {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.keepalive {
				keepalives++
				continue
			}
			var w watch
			strictDecode(t, "stream event", ev.data, &w)
			if w.Result.Type == deploy.EventAdded {
				added[w.Result.Application.Name] = true
			}
		case <-deadline:
			t.Fatalf("initial burst: ADDED %v, %d keepalives", added, keepalives)
		}
	}
	// a new CR: ADDED, then MODIFIED once its Deployment is Ready
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hanzo.ai/v1", "kind": "Service",
		"metadata": map[string]any{"name": "late", "namespace": ns},
		"spec": map[string]any{"image": map[string]any{"repository": "ghcr.io/example/late", "tag": "v1"}, "replicas": int64(1),
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080), "servicePort": int64(80)}}},
	}}
	start := time.Now()
	if err := cl.c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	var seq []string
	deadline = time.After(time.Minute)
wait:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.keepalive {
				continue
			}
			var w watch
			strictDecode(t, "stream event", ev.data, &w)
			if w.Result.Application.Name != "late" {
				continue
			}
			seq = append(seq, w.Result.Type+":"+w.Result.Application.Status.Health.Status)
			if w.Result.Type == deploy.EventModified && w.Result.Application.Status.Health.Status == deploy.HealthHealthy {
				if !strings.HasPrefix(seq[0], deploy.EventAdded) {
					t.Errorf("late: first event %s, want ADDED", seq[0])
				}
				t.Logf("late: %v, Healthy after %s", seq, time.Since(start).Round(time.Millisecond))
				break wait
			}
		case <-deadline:
			t.Fatalf("late never became Healthy on the stream: %v", seq)
		}
	}
	// the streamed resource tree of late: the whole tree, its Deployment Healthy
	_, treeEvents := openStream(t, api.base+"/api/v1/stream/applications/late/resource-tree?appNamespace="+ns, admin)
	select {
	case ev := <-treeEvents:
		var w struct {
			Result deploy.ApplicationTree `json:"result"`
		}
		strictDecode(t, "tree stream", ev.data, &w)
		healthy := false
		for _, n := range w.Result.Nodes {
			healthy = healthy || (n.Kind == "Deployment" && n.Health != nil && n.Health.Status == deploy.HealthHealthy)
		}
		if !healthy {
			t.Errorf("tree stream's first frame: %+v", w.Result.Nodes)
		}
	case <-time.After(20 * time.Second):
		t.Error("no tree frame")
	}
	// the member's stream carried only acme's applications
	for {
		select {
		case ev := <-memberEvents:
			if ev.keepalive {
				continue
			}
			var w watch
			strictDecode(t, "member stream event", ev.data, &w)
			if w.Result.Application.Name == "worker" || w.Result.Application.Namespace != ns {
				t.Errorf("member stream carried %s/%s", w.Result.Application.Namespace, w.Result.Application.Name)
			}
		default:
			return
		}
	}
}

// TestDeployPlaneNeedsAnIssuer: without an issuer neither command serves a plane.
func TestDeployPlaneNeedsAnIssuer(t *testing.T) {
	cl := getCluster(t)
	for _, args := range [][]string{
		{"run", "--kubeconfig", cl.kubeconfig, "--leader-elect=false", "--controllers", "kinds", "--health-probe-bind-address", "0",
			"--metrics-bind-address", "0", "--deploy-plane-bind-address", fmt.Sprintf("127.0.0.1:%d", freePort(t))},
		{"deploy-plane", "--kubeconfig", cl.kubeconfig, "--metrics-bind-address", "0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, operatorBin, args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "--deploy-plane-oidc-issuer is required") {
			t.Errorf("operator %s: err %v, output:\n%s", args[0], err, out)
		}
	}
}
