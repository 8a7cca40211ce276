package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/e2e/testbed"
)

// chromium runs headless Chromium (the Debian package; hack/install-chromium.sh) on url with
// a fresh profile and returns its output.
func chromium(t *testing.T, url string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (hack/install-chromium.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
		"--disable-extensions", "--disable-sync", "--no-first-run", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=15000"}
	out, err := exec.CommandContext(ctx, bin, append(append(base, args...), url)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestDeployPlaneUI signs in to the built-in page with headless Chromium (the code flow with
// PKCE against the in-test issuer, the session cookie, then the page's own API calls and
// stream) and keeps a screenshot of the demo universe's applications.
func TestDeployPlaneUI(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium is not installed (hack/install-chromium.sh installs it)")
	}
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
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns,
		"--deploy-plane-bind-address", addr, "--deploy-plane-oidc-issuer", iss.URL, "--deploy-plane-oidc-audience", planeAudience,
		"--deploy-plane-public-url", "http://"+addr, "--deploy-plane-oidc-client-id", planeAudience, "--deploy-plane-admin-org", "platform")
	op.reconcileNow(t)
	op.sweptAt(t, sha, time.Now().Add(-time.Minute))
	api := planeAPI{base: "http://" + addr + "/v1/deploy", bodies: &bytes.Buffer{}}
	token := iss.Token(map[string]any{"sub": "admin", "aud": planeAudience, "org": "platform", "groups": []string{"admin"}})
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

	login := "http://" + addr + "/v1/deploy/auth/login?return_url=" + url.QueryEscape("/v1/deploy/ui/?live=0")
	dom := chromium(t, login, "--dump-dom")
	for _, want := range []string{">web<", ">worker<", ">sql<", ">edge<", ">api<", ">Healthy<", ">Synced<", "admin@example.test"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the signed-in page lacks %q:\n%s", want, dom)
		}
	}
	if strings.Count(dom, `class="badge Healthy"`) != 4 || strings.Count(dom, `class="badge Synced"`) != 5 || !strings.Contains(dom, ">Progressing<") {
		t.Errorf("badges: want four Healthy, one Progressing, five Synced:\n%s", dom)
	}
	shot := filepath.Join(driftLogDir(t), "..", "deploy-plane", "applications.png")
	if err := os.MkdirAll(filepath.Dir(shot), 0o755); err != nil {
		t.Fatal(err)
	}
	chromium(t, login, "--window-size=1280,640", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("screenshot %s: %v %v", shot, err, img.Bounds())
	}
	t.Logf("screenshot of the demo universe's applications: %s", shot)
	if iss.Exchanges < 2 {
		t.Errorf("%d code exchanges: the page was not reached through sign-in", iss.Exchanges)
	}
}
