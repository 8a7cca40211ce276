package drive_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/source"
)

// platform serves /v1/apps with the rows set on it, checking the headers.
type platform struct {
	mu   sync.Mutex
	rows string
	srv  *httptest.Server
}

func newPlatform(t *testing.T) *platform {
	p := &platform{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer platform-t0ken" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		fmt.Fprintf(w, `{"apps": [%s], "summary": {}}`, p.rows)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *platform) set(ns, declared, running string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows = fmt.Sprintf(`{"id": "hanzo/cloud/prod", "org": "hanzo", "app": "cloud", "env": "prod", "registry": "ghcr.io/hanzo/cloud",
	  "declaredTag": %q, "runningTag": %q, "cluster": "test-cluster", "namespace": %q}`, declared, running, ns)
}

func (p *platform) client(t *testing.T) *drive.Platform {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("platform-t0ken"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := source.OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := drive.NewPlatform(p.srv.URL, "", tf)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorder keeps the events recorded.
type recorder struct {
	mu  sync.Mutex
	got []string // reason: note
}

func (r *recorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj := regarding.(client.Object)
	r.got = append(r.got, fmt.Sprintf("%s %s: %s", obj.GetName(), reason, fmt.Sprintf(note, args...)))
}

func (r *recorder) reasons() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, "\n")
}

// orgNamespace creates namespace ns of org, its org label written by labeller (cloud-api,
// the platform, is a trusted manager; anyone else is not).
func orgNamespace(t *testing.T, c client.Client, ns, org, labeller string) {
	t.Helper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kinds.OrgLabel: org}}}
	if err := c.Create(context.Background(), n, client.FieldOwner(labeller)); err != nil {
		t.Fatal(err)
	}
}

// appFixture creates namespace ns of org hanzo, a Service CR cloud (tag v1.2.3) created by
// manager, and a Deployment cloud-api it controls, as the Kind controller would have built it.
func appFixture(t *testing.T, c client.Client, ns, manager string) *unstructured.Unstructured {
	t.Helper()
	orgNamespace(t, c, ns, "hanzo", "cloud-api")
	return appObjects(t, c, ns, manager)
}

// appObjects creates the Service CR cloud and its Deployment cloud-api in ns.
func appObjects(t *testing.T, c client.Client, ns, manager string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Service",
		"metadata": map[string]any{"name": "cloud", "namespace": ns},
		"spec": map[string]any{
			"image":    map[string]any{"repository": "ghcr.io/hanzo/cloud", "tag": "v1.2.3"},
			"replicas": int64(1),
		},
	}}
	if manager == "" {
		if err := c.Create(ctx, cr, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatal(err)
		}
	} else if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(cr), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Fatal(err)
	}
	yes := true
	labels := map[string]string{"app.kubernetes.io/name": "cloud"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cloud-api", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: group + "/v1", Kind: "Service", Name: "cloud", UID: cr.GetUID(), Controller: &yes}}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "sidecar", Image: "ghcr.io/hanzo/proxy:v9.9.9"}, {Name: "cloud", Image: "ghcr.io/hanzo/cloud:v1.2.3"}}}},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	return cr
}

func tagOf(t *testing.T, c client.Client, cr *unstructured.Unstructured) (string, string) {
	t.Helper()
	live := cr.DeepCopy()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(cr), live); err != nil {
		t.Fatal(err)
	}
	tag, _, _ := unstructured.NestedString(live.Object, "spec", "image", "tag")
	return tag, live.GetResourceVersion()
}

func depImages(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cloud-api"}, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return strings.Join(out, ",")
}

// committer records the tag changes it is asked to commit.
type committer struct{ got []source.CRImage }

func (c *committer) CommitImage(_ context.Context, ch source.CRImage) (source.Result, error) {
	c.got = append(c.got, ch)
	return source.Result{Commit: "abc123"}, nil
}

func TestAppsDriveGates(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	p := newPlatform(t)
	rec := &recorder{}
	loop := func(mode drive.Mode, allow string) *drive.Apps {
		return &drive.Apps{Platform: p.client(t), Client: c, Cluster: "test-cluster", Mode: mode, Allow: drive.ParseAllowList(allow),
			RolloutTimeout: 300 * time.Millisecond, RolloutPoll: 100 * time.Millisecond,
			GitOpsManager: "universe-operator-gitops", Recorder: rec, Log: testr.New(t)}
	}
	cr := appFixture(t, c, "drive-gates", "")
	_, rv0 := tagOf(t, c, cr)

	t.Run("dry-run never writes", func(t *testing.T) {
		p.set("drive-gates", "v1.3.0", "v1.2.3")
		out, err := loop(drive.ModeDryRun, "*").Tick(ctx)
		if err != nil || len(out) != 1 || out[0].Decision.Verdict != drive.VerdictReport || out[0].Object != "Service/drive-gates/cloud" {
			t.Fatalf("Tick = %+v, %v", out, err)
		}
		if tag, rv := tagOf(t, c, cr); tag != "v1.2.3" || rv != rv0 {
			t.Errorf("dry-run wrote the CR: tag %s rv %s (was %s)", tag, rv, rv0)
		}
		if !strings.Contains(rec.reasons(), "cloud DriveIntended: dry-run: would drive hanzo/cloud/prod from v1.2.3 to ghcr.io/hanzo/cloud:v1.3.0") {
			t.Errorf("events:\n%s", rec.reasons())
		}
	})
	t.Run("on but not allow-listed only reports", func(t *testing.T) {
		out, _ := loop(drive.ModeOn, "lux/*").Tick(ctx)
		if len(out) != 1 || out[0].Decision.Verdict != drive.VerdictReport || out[0].Wrote != "" {
			t.Fatalf("Tick = %+v", out)
		}
		if tag, rv := tagOf(t, c, cr); tag != "v1.2.3" || rv != rv0 {
			t.Errorf("not allow-listed wrote the CR: tag %s", tag)
		}
	})
	t.Run("floating tag refused even when on and allowed", func(t *testing.T) {
		p.set("drive-gates", "latest", "v1.2.3")
		out, _ := loop(drive.ModeOn, "*").Tick(ctx)
		if len(out) != 1 || out[0].Decision.Verdict != drive.VerdictRefuse || out[0].Wrote != "" {
			t.Fatalf("Tick = %+v", out)
		}
		if tag, rv := tagOf(t, c, cr); tag != "v1.2.3" || rv != rv0 {
			t.Errorf("a floating tag was written: tag %s", tag)
		}
	})
	t.Run("on and allowed writes the CR, never the Deployment", func(t *testing.T) {
		p.set("drive-gates", "v1.3.0", "v1.2.3")
		out, _ := loop(drive.ModeOn, "hanzo/cloud").Tick(ctx)
		if len(out) != 1 || out[0].Decision.Verdict != drive.VerdictWrite || out[0].Wrote != "cr" || out[0].Err != nil || out[0].Rollout != "pending" {
			t.Fatalf("Tick = %+v", out)
		}
		if tag, _ := tagOf(t, c, cr); tag != "v1.3.0" {
			t.Errorf("CR tag = %s, want v1.3.0", tag)
		}
		live := cr.DeepCopy()
		_ = c.Get(ctx, client.ObjectKeyFromObject(cr), live)
		owned := false
		for _, mf := range live.GetManagedFields() {
			if mf.Manager == kinds.ManagerDrive && mf.Operation == metav1.ManagedFieldsOperationApply &&
				strings.Contains(mf.FieldsV1.GetRawString(), `"f:tag"`) {
				owned = true
			}
		}
		if !owned {
			t.Errorf("spec.image.tag is not owned by %s: %+v", kinds.ManagerDrive, live.GetManagedFields())
		}
		if got := depImages(t, c, "drive-gates"); got != "ghcr.io/hanzo/proxy:v9.9.9,ghcr.io/hanzo/cloud:v1.2.3" {
			t.Errorf("the Deployment was written: %s", got)
		}
		if !strings.Contains(rec.reasons(), "cloud DriveRolloutPending: ghcr.io/hanzo/cloud:v1.3.0: not rolled out") {
			t.Errorf("events:\n%s", rec.reasons())
		}
		// the next tick finds the CR at the tag and writes nothing again
		_, rv1 := tagOf(t, c, cr)
		out, _ = loop(drive.ModeOn, "hanzo/cloud").Tick(ctx)
		if _, rv2 := tagOf(t, c, cr); rv2 != rv1 || out[0].Wrote != "" {
			t.Errorf("second tick rewrote the CR (%s -> %s): %+v", rv1, rv2, out)
		}
	})
}

func TestAppsDriveGitSourced(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	p := newPlatform(t)
	rec := &recorder{}
	cr := appFixture(t, c, "drive-git", "universe-operator-gitops")
	_, rv0 := tagOf(t, c, cr)
	p.set("drive-git", "v1.3.0", "v1.2.3")
	a := &drive.Apps{Platform: p.client(t), Client: c, Cluster: "test-cluster", Mode: drive.ModeOn, Allow: drive.AllowList{"*"},
		RolloutTimeout: 200 * time.Millisecond, RolloutPoll: 100 * time.Millisecond,
		GitOpsManager: "universe-operator-gitops", Recorder: rec, Log: testr.New(t)}

	out, _ := a.Tick(ctx)
	if len(out) != 1 || out[0].Wrote != "git" || !errors.Is(out[0].Err, drive.ErrNoCommitter) {
		t.Fatalf("without a committer: %+v", out)
	}
	if !strings.Contains(rec.reasons(), "cloud DriveFailed: writing ghcr.io/hanzo/cloud:v1.3.0 failed: the CR is applied from the universe repo") {
		t.Errorf("events:\n%s", rec.reasons())
	}
	com := &committer{}
	a.Committer = com
	out, _ = a.Tick(ctx)
	if len(out) != 1 || out[0].Wrote != "git" || out[0].Err != nil {
		t.Fatalf("with a committer: %+v", out)
	}
	want := source.CRImage{APIVersion: group + "/v1", Kind: "Service", Namespace: "drive-git", Name: "cloud",
		Image: "ghcr.io/hanzo/cloud:v1.3.0"}
	if len(com.got) != 1 {
		t.Fatalf("commits %+v", com.got)
	}
	got := com.got[0]
	if !strings.Contains(got.Message, "hanzo/cloud/prod") || !strings.Contains(got.Message, "v1.2.3 -> v1.3.0") {
		t.Errorf("commit message does not name the row and the tags: %q", got.Message)
	}
	got.Message = ""
	if got != want {
		t.Errorf("CRImage = %+v, want %+v", got, want)
	}
	if tag, rv := tagOf(t, c, cr); tag != "v1.2.3" || rv != rv0 {
		t.Errorf("a git-sourced CR was patched in the cluster: tag %s", tag)
	}
}

func TestAppsDriveNoOwner(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	orgNamespace(t, c, "drive-plain", "hanzo", "cloud-api")
	labels := map[string]string{"app": "cloud"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "cloud-api", Namespace: "drive-plain"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "cloud", Image: "ghcr.io/hanzo/cloud:v1.2.3"}}}}}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	p := newPlatform(t)
	p.set("drive-plain", "v1.3.0", "v1.2.3")
	rec := &recorder{}
	a := &drive.Apps{Platform: p.client(t), Client: c, Cluster: "test-cluster", Mode: drive.ModeOn, Allow: drive.AllowList{"*"},
		Recorder: rec, Log: testr.New(t)}
	out, _ := a.Tick(ctx)
	if len(out) != 1 || out[0].Err == nil || !strings.Contains(out[0].Err.Error(), "no universe CR controls it") {
		t.Fatalf("Tick = %+v", out)
	}
	if got := depImages(t, c, "drive-plain"); got != "ghcr.io/hanzo/cloud:v1.2.3" {
		t.Errorf("a plain Deployment was written: %s", got)
	}
	if !strings.Contains(rec.reasons(), "cloud-api DriveFailed") {
		t.Errorf("events:\n%s", rec.reasons())
	}
}

// TestAppsDriveRowCannotReachAnotherOrg is the attack on the drive loop: a row of an
// allow-listed org names another org's namespace; the CR there is never written and gets no
// Event, the refusal names its reason on that row only, and the other rows are driven. A
// namespace whose org label was set by someone other than a trusted manager is no org's.
func TestAppsDriveRowCannotReachAnotherOrg(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	victim := func() *unstructured.Unstructured {
		orgNamespace(t, c, "drive-org-b", "orgb", "cloud-api")
		return appObjects(t, c, "drive-org-b", "")
	}()
	selfLabelled := func() *unstructured.Unstructured {
		orgNamespace(t, c, "drive-self-labelled", "hanzo", "kubectl-edit")
		return appObjects(t, c, "drive-self-labelled", "")
	}()
	own := appFixture(t, c, "drive-org-a", "")
	p := newPlatform(t)
	row := func(id, org, ns string) string {
		return fmt.Sprintf(`{"id": %q, "org": %q, "app": "cloud", "env": "prod", "registry": "ghcr.io/hanzo/cloud",
		  "declaredTag": "v6.6.6", "runningTag": "v1.2.3", "cluster": "test-cluster", "namespace": %q}`, id, org, ns)
	}
	p.rows = strings.Join([]string{
		row("hanzo/cloud/steal", "hanzo", "drive-org-b"),
		row("hanzo/cloud/self", "hanzo", "drive-self-labelled"),
		row("/cloud/noorg", "", "drive-org-a"),
		row("hanzo/cloud/prod", "hanzo", "drive-org-a"),
	}, ",")
	rec := &recorder{}
	a := &drive.Apps{Platform: p.client(t), Client: c, Cluster: "test-cluster", Mode: drive.ModeOn, Allow: drive.AllowList{"*"},
		RolloutTimeout: 200 * time.Millisecond, RolloutPoll: 100 * time.Millisecond,
		GitOpsManager: "universe-operator-gitops", Recorder: rec, Log: testr.New(t)}
	out, err := a.Tick(ctx)
	if err != nil || len(out) != 4 {
		t.Fatalf("Tick = %+v, %v", out, err)
	}
	reasons := map[string]string{}
	for _, o := range out {
		var te *kinds.TenancyError
		if errors.As(o.Err, &te) {
			reasons[o.Row] = te.Reason
			if o.Decision.Verdict != drive.VerdictRefuse || o.Wrote != "" || !strings.Contains(o.Decision.Reason, te.Reason) {
				t.Errorf("row %s refused as %s but %+v", o.Row, te.Reason, o)
			}
		}
	}
	want := map[string]string{"hanzo/cloud/steal": kinds.ReasonOrgMismatch, "hanzo/cloud/self": kinds.ReasonNamespaceHasNoOrg, "/cloud/noorg": kinds.ReasonInvalidOrg}
	for r, w := range want {
		if reasons[r] != w {
			t.Errorf("row %s refused with %q, want %s (all: %v)", r, reasons[r], w, reasons)
		}
	}
	for _, cr := range []*unstructured.Unstructured{victim, selfLabelled} {
		if tag, _ := tagOf(t, c, cr); tag != "v1.2.3" {
			t.Errorf("%s/%s was written across orgs: tag %s", cr.GetNamespace(), cr.GetName(), tag)
		}
	}
	if tag, _ := tagOf(t, c, own); tag != "v6.6.6" || out[3].Wrote != "cr" {
		t.Errorf("the row of its own org was not driven: tag %s, %+v", tag, out[3])
	}
	if ev := rec.reasons(); strings.Count(ev, "cloud ") != 1 || !strings.Contains(ev, "DriveRolloutPending") {
		t.Errorf("events (only the driven row's CR may get one):\n%s", ev)
	}
}
