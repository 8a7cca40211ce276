package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/e2e/testbed"
)

// browserRequired is true under `make test` (which exports DEPLOY_PLANE_UI_REQUIRED=1) and in
// CI ($CI set): there a missing or broken Chromium fails the page test instead of skipping it.
// Run by hand (`go test -run TestDeployPlaneUI ./e2e/`) without Chromium, it skips; `make
// chromium` installs it.
func browserRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv("DEPLOY_PLANE_UI_REQUIRED") == "1"
}

// browser starts headless Chromium (the Debian package, hack/install-chromium.sh) under
// chromedp with a fresh profile, at 1280 x 800.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if bin, err = exec.LookPath("chromium-browser"); err != nil {
			if browserRequired() {
				t.Fatal("chromium is not installed and this run requires the browser test (CI or make test): run `make chromium` (hack/install-chromium.sh, apt)")
			}
			t.Skip("chromium is not installed (make chromium installs it); under make test or CI this test fails instead")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800), chromedp.Flag("hide-scrollbars", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("chromium %s does not run: %v", bin, err)
	}
	return ctx
}

// shotDir is where the page's screenshots go: $DEPLOY_PLANE_SHOTS (docs/deploy-plane to
// refresh the README's), else .cache/deploy-plane.
func shotDir(t *testing.T) string {
	dir := os.Getenv("DEPLOY_PLANE_SHOTS")
	if dir == "" {
		dir = filepath.Join(driftLogDir(t), "..", "deploy-plane")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shot captures the viewport as a PNG and checks it decodes at the expected width.
func shot(t *testing.T, ctx context.Context, name string, width int) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // the last frame painted
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil || img.Bounds().Dx() != width {
		t.Fatalf("screenshot %s: %v %v", name, err, boundsOf(img))
	}
	path := filepath.Join(shotDir(t), name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(buf))
}

func boundsOf(img image.Image) string {
	if img == nil {
		return "no image"
	}
	return img.Bounds().String()
}

// run runs browser actions or fails with what the page said.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(actx, actions...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main') ? document.querySelector('main').innerText.slice(0, 3000) : ''`))
		t.Fatalf("%s: %v\npage:\n%s", what, err, body)
	}
}

// dispatch fires the input event a filter listens to.
func dispatch(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`document.getElementById('`+id+`').dispatchEvent(new Event('input'))`)(ctx, t)
		return err
	})
}

// pageWait polls a JavaScript condition in the page until it is true.
func pageWait(t *testing.T, ctx context.Context, what, cond string, timeout time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+cond+`)`))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText.slice(0, 3000)`))
			t.Fatalf("the page: %s: not within %s (%s)\npage:\n%s", what, timeout, last, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestDeployPlaneUI drives the built-in page in headless Chromium as an operator would:
// sign-in (the code flow with PKCE against the in-test issuer, then the session cookie),
// the fleet list with its filters and keyboard, the application's resource tree as a graph,
// the live diff naming the field manager of an out-of-band `kubectl scale`, and a rollback
// from the history with its confirmation: the rollback commit lands in git, and once the
// controllers run again the page — without a reload, through the stream — shows the app on
// the rolled-back image and Healthy. The plane runs alone (`operator deploy-plane`) so the
// drift stays visible while the controllers are stopped. It also checks the page at phone
// width (no horizontal overflow) and keeps screenshots of the list, the tree, the diff and
// the rollback.
func TestDeployPlaneUI(t *testing.T) {
	ctx := browser(t)
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-plane-ui"
	deleteNamespaceAfter(t, cl, ns)
	sha, _ := repo.push(t, "the demo universe", universeFiles(t, ns))
	iss, err := testbed.NewOIDCIssuer(planeAudience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	iss.Login = map[string]any{"sub": "admin", "email": "admin@example.test", "org": "platform", "groups": []string{"admin"}}
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op.reconcileNow(t)
	op.sweptAt(t, sha, time.Now().Add(-time.Minute))

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startDeployPlane(t, "--kubeconfig", cl.kubeconfig, "--namespace", ns, "--metrics-bind-address", "0",
		"--deploy-plane-bind-address", addr, "--deploy-plane-oidc-issuer", iss.URL, "--deploy-plane-oidc-audience", planeAudience,
		"--deploy-plane-public-url", "http://"+addr, "--deploy-plane-oidc-client-id", planeAudience, "--deploy-plane-admin-org", "platform",
		"--git-url", repo.srv.HTTPURL(repo.name), "--git-username", repo.srv.Username, "--gitops-token-file", repo.tokenFile,
		"--git-cache-dir", t.TempDir())
	api := planeAPI{base: "http://" + addr + "/v1/deploy", bodies: &bytes.Buffer{}}
	token := iss.Token(map[string]any{"sub": "admin", "aud": planeAudience, "org": "platform", "groups": []string{"admin"}})
	noteSecret(token)
	waitFor(t, "the standalone plane", 30*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/v1/deploy/api/version")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusOK, resp.Status
	})
	waitFor(t, "the demo universe Synced, Healthy but the Ingress (no load balancer here)", 2*time.Minute, func() (bool, string) {
		var l deploy.ApplicationList
		api.get(t, "/api/v1/applications?appNamespace="+ns, token, &l)
		ok := 0
		for _, a := range l.Items {
			want := deploy.HealthHealthy
			if a.Name == "edge" {
				want = deploy.HealthProgressing
			}
			if a.Status.Health.Status == want && a.Status.Sync.Status == deploy.SyncSynced {
				ok++
			}
		}
		return ok == 5, fmt.Sprintf("%d of %d as expected", ok, len(l.Items))
	})

	// an older image in web's upgrade history (as the upgrade machine records it), to roll back to
	bg := context.Background()
	webCR, err := getObj(bg, cl.c, universeGVK("Service"), ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	hist := []byte(`{"status":{"upgradeHistory":[{"image":"ghcr.io/hanzoai/example:v1.2.0","result":"Succeeded","at":"2026-11-30T09:00:00Z"}]}}`)
	if err := cl.c.Status().Patch(bg, webCR, client.RawPatch(types.MergePatchType, hist)); err != nil {
		t.Fatal(err)
	}
	// the controllers stop; an out-of-band `kubectl scale` stays as drift for the diff to show
	op.stop(syscall.SIGTERM)
	dep, err := getObj(bg, cl.c, gvkDeployment, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	scaleOpts := &client.SubResourcePatchOptions{PatchOptions: client.PatchOptions{FieldManager: "kubectl-scale"}}
	if err := cl.c.SubResource("scale").Patch(bg, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`)), scaleOpts); err != nil {
		t.Fatal(err)
	}

	login := "http://" + addr + "/v1/deploy/auth/login?return_url=" + url.QueryEscape("/v1/deploy/ui/")
	row := func(name string) string { return fmt.Sprintf(`#apps tbody tr[data-key="%s/%s"]`, ns, name) }

	// the list: five applications, badges, the signed-in user; a filter narrows it
	run(t, ctx, "sign in and open the list", chromedp.Navigate(login), chromedp.WaitVisible(chromedp.CSS(row("web"))))
	// the rows of this test's namespace: the plane lists every namespace it may read, and
	// another test's namespace may still be on its way out
	mine := `[...document.querySelectorAll('#apps tbody tr')].filter((r) => r.dataset.key.startsWith('` + ns + `/'))`
	pageWait(t, ctx, "five rows, the live stream open, the user named",
		mine+`.length === 5 && document.getElementById('live').textContent === 'live' && document.getElementById('who').textContent === 'admin@example.test'`, 30*time.Second)
	pageWait(t, ctx, "four Healthy, one Progressing",
		mine+`.filter((r) => r.querySelector('.badge.Healthy')).length === 4 && `+mine+`.filter((r) => r.querySelector('.badge.Progressing')).length === 1`, 30*time.Second)
	shot(t, ctx, "list.png", 1280)
	run(t, ctx, "filter health=Progressing", chromedp.SetValue(chromedp.ID("f-health"), "Progressing"),
		dispatch("f-health"))
	pageWait(t, ctx, "only edge under health=Progressing", mine+`.length === 1 && `+mine+`[0].dataset.key.endsWith('/edge') && ![...document.querySelectorAll('#apps tbody tr .badge')].some((b) => b.classList.contains('Healthy'))`, 5*time.Second)
	run(t, ctx, "clear the filter", chromedp.SetValue(chromedp.ID("f-health"), ""),
		dispatch("f-health"))

	// the keyboard opens an application: focus web's row, Enter
	run(t, ctx, "open web with the keyboard", chromedp.Focus(chromedp.CSS(row("web"))), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.ID("#app")))
	pageWait(t, ctx, "web's tree: Service CR -> Deployment -> ReplicaSet -> Pod, with health colours",
		`document.querySelector('.gnode[data-kind="Deployment"][data-name="web"]') && document.querySelector('.gnode[data-kind="Pod"]') &&
		 document.querySelector('path[data-edge^="Deployment/web->ReplicaSet/"]') && document.querySelector('.gnode.root') &&
		 document.querySelector('.gnode[data-kind="Deployment"][data-name="web"]').classList.length > 1`, time.Minute)
	run(t, ctx, "a node's live manifest", chromedp.Click(chromedp.CSS(`.gnode[data-kind="Deployment"][data-name="web"]`)))
	pageWait(t, ctx, "the Deployment's manifest shown", `document.getElementById('node-body').textContent.includes('kind: Deployment')`, 30*time.Second)
	shot(t, ctx, "tree.png", 1280)

	// the diff: the replicas kubectl-scale changed, attributed to it
	run(t, ctx, "the Diff tab", chromedp.Click(chromedp.ID("#tab-diff")))
	pageWait(t, ctx, "the diff names kubectl-scale as the changer of spec.replicas",
		`[...document.querySelectorAll('.diff-item[data-kind="Deployment"][data-name="web"] .attribution li')].some(li => li.dataset.path === 'spec.replicas' && li.textContent.includes('kubectl-scale'))`, time.Minute)
	diffText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.diff-item[data-kind="Deployment"][data-name="web"] pre`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diffText, "-  replicas: 4") || !strings.Contains(diffText, "+  replicas: 2") {
		t.Errorf("web's Deployment diff lacks the replicas change:\n%s", diffText)
	}
	shot(t, ctx, "diff.png", 1280)

	// the rollback: History, the older row's button, the confirmation; a commit in git
	before, _ := repo.head(t, "apps/web.yaml")
	run(t, ctx, "the History tab", chromedp.Click(chromedp.ID("#tab-history")), chromedp.WaitVisible(chromedp.CSS(`button[data-rollback="0"]`)))
	run(t, ctx, "cancel a rollback", chromedp.Click(chromedp.CSS(`button[data-rollback="0"]`)), chromedp.WaitVisible(chromedp.ID("#confirm")),
		chromedp.Click(chromedp.ID("#confirm-cancel")), chromedp.WaitNotVisible(chromedp.ID("#confirm")))
	if head, _ := repo.head(t, "apps/web.yaml"); head.Hash != before.Hash {
		t.Fatalf("a cancelled rollback committed %s", head.Hash)
	}
	run(t, ctx, "confirm a rollback", chromedp.Click(chromedp.CSS(`button[data-rollback="0"]`)), chromedp.WaitVisible(chromedp.ID("#confirm")),
		chromedp.Click(chromedp.ID("#confirm-ok")))
	pageWait(t, ctx, "the rollback answered with its commit", `(document.getElementById('app-note').dataset.rollback || '').length === 40`, 30*time.Second)
	commit, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('app-note').dataset.rollback`))
	if err != nil {
		t.Fatal(err)
	}
	head, file := repo.head(t, "apps/web.yaml")
	if head.Hash.String() != commit || len(head.ParentHashes) != 1 || head.ParentHashes[0] != before.Hash ||
		!strings.Contains(file, "    tag: v1.2.0\n") || !strings.Contains(head.Message, "rollback Service "+ns+"/web to ghcr.io/hanzoai/example:v1.2.0") ||
		!strings.Contains(head.Message, "admin@example.test") {
		t.Fatalf("the page's rollback %s; git head %s (parents %v, before %s) %q, file\n%s", commit, head.Hash, head.ParentHashes, before.Hash, head.Message, file)
	}

	// the controllers run again: the sweep applies the commit; the page follows through its stream
	op2 := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op2.reconcileNow(t)
	pageWait(t, ctx, "web on v1.2.0, Synced and Healthy, without a reload",
		`document.getElementById('app-image').textContent === 'ghcr.io/hanzoai/example:v1.2.0' && document.querySelector('#app-health .badge.Healthy') && document.querySelector('#app-sync .badge.Synced')`, 2*time.Minute)
	waitFor(t, "web's Deployment on the rolled-back image with its 2 replicas back", time.Minute, func() (bool, string) {
		d, err := getObj(bg, cl.c, gvkDeployment, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return cs[0].(map[string]any)["image"] == "ghcr.io/hanzoai/example:v1.2.0" && r == 2, fmt.Sprint(cs[0].(map[string]any)["image"], " replicas ", r)
	})
	run(t, ctx, "the tree after the rollback", chromedp.Click(chromedp.ID("#tab-tree")))
	shot(t, ctx, "rollback.png", 1280)

	// a phone's width: the list fits without horizontal scrolling
	run(t, ctx, "phone width", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate("http://"+addr+"/v1/deploy/ui/#/"),
		chromedp.WaitVisible(chromedp.CSS(row("web"))))
	pageWait(t, ctx, "no horizontal overflow at 390 px", `document.documentElement.scrollWidth <= 391`, 10*time.Second)
	if iss.Exchanges < 1 {
		t.Errorf("%d code exchanges: the page was not reached through sign-in", iss.Exchanges)
	}
}
