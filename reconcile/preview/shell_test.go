package preview

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/commitstatus/statustest"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

const group = "hanzo.ai"

func snapshot(rev string, files map[string]string) *source.Snapshot {
	s := &source.Snapshot{Revision: rev}
	for p, d := range files {
		sum := sha1.Sum([]byte(d))
		s.Files = append(s.Files, source.File{Path: p, BlobSHA: hex.EncodeToString(sum[:]), Data: []byte(d)})
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	return s
}

func serviceCR(ns, tag string) string {
	return `apiVersion: hanzo.ai/v1
kind: Service
metadata:
  name: web
  namespace: ` + ns + `
spec:
  image: {repository: ghcr.io/hanzoai/web, tag: "` + tag + `"}
  replicas: 3
  ports:
    - {name: http, containerPort: 8080, servicePort: 80}
`
}

// setup installs the universe's CRDs and a namespace, and returns a client.
func setup(t testing.TB, cfg *rest.Config, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := kinds.Bundle(group)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ssautil.ReadObjects(bytes.NewReader(bundle))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: "test"}).Apply(ctx, crds) {
		if r.Err != nil {
			t.Fatalf("install %s: %v", r.Object, r.Err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c, err = client.New(cfg, client.Options{})
		if err != nil {
			return false, err
		}
		_, err = c.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: "Service"}, "v1")
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return c
}

// applyBase applies snap as the sweep and the Kind controller would: the CRs and plain
// objects under the gitops manager, the CRs' children (owned by the live CR) under the Kind
// controllers'.
func applyBase(t testing.TB, c client.Client, r render.Renderer, snap *source.Snapshot) {
	t.Helper()
	ctx := context.Background()
	objs, errs := source.Parse(snap)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, o := range objs {
		for _, res := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{o.Obj}) {
			if res.Err != nil {
				t.Fatalf("apply %s: %v", res.Object, res.Err)
			}
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.Obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o.Obj), live); err != nil {
			t.Fatal(err)
		}
		withUID := o
		withUID.Obj = o.Obj.DeepCopy()
		withUID.Obj.SetUID(live.GetUID())
		rd := r.RenderOne(withUID)
		if rd.Err != nil || !rd.CR {
			continue
		}
		for _, res := range (&apply.Applier{Client: c, Manager: kinds.ManagerKinds}).Apply(ctx, rd.Objects) {
			if res.Err != nil {
				t.Fatalf("apply %s: %v", res.Object, res.Err)
			}
		}
	}
}

func previewer(t testing.TB, c client.Client, ns string) *Previewer {
	t.Helper()
	sc, err := gitops.NewScope([]string{ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Previewer{
		Differ: &render.Differ{Client: c, Renderer: render.Renderer{Registry: kinds.Builtin(), APIGroup: group}},
		Scope:  sc, Mapper: c.RESTMapper(),
	}
}

// TestPreviewImageChange: a change of a Service CR's image previews as the CR and its
// Deployment changed, the Deployment rolling its 3 pods, the diff holding the new image;
// the unchanged file is not built, the Secret's value never shows.
func TestPreviewImageChange(t *testing.T) {
	cfg := testbed.APIServer(t)
	const ns = "preview-image"
	c := setup(t, cfg, ns)
	p := previewer(t, c, ns)
	secret := `apiVersion: v1
kind: Secret
metadata: {name: db, namespace: ` + ns + `}
stringData: {password: hunter2-preview}
`
	base := snapshot(strings.Repeat("b", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v1"), "apps/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: " + ns + "}\n"})
	applyBase(t, c, p.Differ.Renderer, base)
	head := snapshot(strings.Repeat("a", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v2"), "apps/db.yaml": secret,
		"apps/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: " + ns + "}\n"})
	_, h := ChangedFiles(base, head)
	if len(h.Files) != 2 {
		t.Fatalf("changed files %v, want apps/db.yaml and apps/web.yaml", h.Files)
	}
	pv := p.Preview(context.Background(), base, head)
	if pv.Refused() {
		t.Fatalf("refused: %s", pv.Report())
	}
	if len(pv.Rolls) != 1 || pv.Rolls[0].Object.String() != "Deployment/"+ns+"/web" || pv.Rolls[0].Replicas != 3 {
		t.Fatalf("rolls %+v, want Deployment %s/web with 3 replicas\n%s", pv.Rolls, ns, pv.Report())
	}
	if !strings.Contains(pv.Summary(), "rolls Deployment/"+ns+"/web (3 pods)") || !strings.Contains(pv.Report(), "ghcr.io/hanzoai/web:v1 → ghcr.io/hanzoai/web:v2") {
		t.Fatalf("summary %q\n%s", pv.Summary(), pv.Report())
	}
	d := pv.Details()
	if !strings.Contains(d, "+        image: ghcr.io/hanzoai/web:v2") || !strings.Contains(d, "-        image: ghcr.io/hanzoai/web:v1") {
		t.Fatalf("details lack the image diff:\n%s", d)
	}
	if strings.Contains(d, "hunter2-preview") || strings.Contains(pv.Report(), "hunter2-preview") {
		t.Fatal("the Secret's value shows in the preview")
	}
	if strings.Contains(d, "ConfigMap/"+ns+"/other") {
		t.Fatal("the unchanged file was built")
	}
	got := postCheck(t, pv, "github")
	if !got.CheckRun || got.State != "success" || got.Context != "universe-operator/sync/preview" ||
		!strings.Contains(got.Description, "rolls Deployment/"+ns+"/web") || !strings.Contains(got.Text, "ghcr.io/hanzoai/web:v2") {
		t.Fatalf("check run %+v", got)
	}
}

// TestPreviewScopeRefusal: a cluster-scoped object (the apiserver's RESTMapping, whatever the
// file declares) is refused by the sweep's scope rule, and the preview fails naming it.
func TestPreviewScopeRefusal(t *testing.T) {
	cfg := testbed.APIServer(t)
	const ns = "preview-scope"
	c := setup(t, cfg, ns)
	p := previewer(t, c, ns)
	base := snapshot(strings.Repeat("b", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v1")})
	head := snapshot(strings.Repeat("a", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v1"), "apps/crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: preview-admin, namespace: ` + ns + `}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: ` + ns + `}]
`})
	pv := p.Preview(context.Background(), base, head)
	if !pv.Refused() {
		t.Fatalf("not refused: %s", pv.Report())
	}
	sc := pv.RefusedBy(RefusedScope)
	if len(sc) != 1 || sc[0].Rule != gitops.ReasonClusterScoped || !strings.Contains(sc[0].Object, "preview-admin") {
		t.Fatalf("scope refusals %+v", sc)
	}
	if !strings.Contains(pv.Summary(), "(ClusterScoped)") || !strings.Contains(pv.Report(), "rule ClusterScoped") {
		t.Fatalf("summary %q\n%s", pv.Summary(), pv.Report())
	}
	if got := postCheck(t, pv, "github"); got.State != "failure" || !strings.Contains(got.Summary, "rule ClusterScoped") {
		t.Fatalf("check run %+v", got)
	}
	if got := postCheck(t, pv, "gitlab"); got.CheckRun || got.State != "failed" || !strings.Contains(got.Description, "ClusterScoped") {
		t.Fatalf("gitlab status %+v", got)
	}
}

// postCheck posts pv's check to a fake host of provider and returns the one post.
func postCheck(t *testing.T, pv Preview, provider string) statustest.Post {
	t.Helper()
	srv := statustest.New(t, provider, "tok")
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := source.OpenTokenFile(tf)
	if err != nil {
		t.Fatal(err)
	}
	o := commitstatus.DefaultOptions()
	o.Provider, o.URL, o.Repository, o.TokenFile = provider, srv.URL, "acme/universe", tf
	prov, err := commitstatus.NewProvider(o, creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.(commitstatus.Checker).PostCheck(context.Background(), pv.Check(o.Context)); err != nil {
		t.Fatal(err)
	}
	posts := srv.Posts()
	if len(posts) != 1 || len(srv.Violations()) > 0 {
		t.Fatalf("posts %+v, violations %v", posts, srv.Violations())
	}
	return posts[0]
}
