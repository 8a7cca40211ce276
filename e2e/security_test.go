package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestWebhookSignature: with a webhook secret configured, a push with a bad signature or
// none gets 401 and starts no sweep; a correctly signed GitHub push gets 202 and sweeps.
func TestWebhookSignature(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns, secret = "e2e-webhook", "hook-secret-5f1e"
	deleteNamespaceAfter(t, cl, ns)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns, "--gitops-webhook-secret-file", secretFile)
	op.sweptAt(t, sha, pushed)
	// Each CR turning Current (its first status) fires a sweep while the report settles:
	// once nothing is rolling out any more, no sweep starts but a trigger's.
	waitFor(t, "the universe settled: nothing InProgress", 2*time.Minute, func() (bool, string) {
		r, err := op.report()
		if err != nil {
			return false, err.Error()
		}
		return r.Summary.Health.InProgress == 0, fmt.Sprintf("%+v", r.Summary.Health)
	})
	time.Sleep(2 * time.Second) // the sweep the last of them fired
	first, err := op.report()
	if err != nil {
		t.Fatal(err)
	}

	sha, pushed = repo.push(t, "bump web", map[string][]byte{"apps/note.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note, namespace: " + ns + "}\ndata: {k: v}\n")})
	body := `{"ref":"refs/heads/main","after":"` + sha + `"}`
	post := func(headers map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, op.hook+"/reconcile", strings.NewReader(body))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, h := range map[string]map[string]string{
		"unsigned":        {"X-GitHub-Event": "push"},
		"wrong secret":    {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("not-the-secret", body)},
		"other body":      {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(secret, body+" ")},
		"generic, forged": {"X-Signature-256": "sha256=00"},
	} {
		if code := post(h); code != http.StatusUnauthorized {
			t.Errorf("%s: POST /reconcile = %d, want 401", name, code)
		}
	}
	time.Sleep(2 * time.Second) // an accepted trigger sweeps within milliseconds
	if r, err := op.report(); err != nil || !r.Started.Equal(first.Started) {
		t.Fatalf("a rejected webhook started a sweep: %+v (err %v)", r, err)
	}

	if code := post(map[string]string{"X-GitHub-Event": "push", "Content-Type": "application/json", "X-Hub-Signature-256": sign(secret, body)}); code != http.StatusAccepted {
		t.Fatalf("signed push: POST /reconcile = %d, want 202", code)
	}
	rep := op.sweptAt(t, sha, pushed)
	if rep.Summary.Created != 1 {
		t.Errorf("signed push sweep: %+v, want the new ConfigMap created", rep.Summary)
	}
	if strings.Contains(op.logs(), secret) {
		t.Error("the operator log contains the webhook secret")
	}
}

// TestTokenRotation: the git host rotates its credential; sweeps fail (without ever
// printing a token) until the token file holds the new one, and the next sweep uses it
// with no restart.
func TestTokenRotation(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-rotation"
	deleteNamespaceAfter(t, cl, ns)
	oldToken := repo.srv.Password
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	op := startOperator(t, cl, repo, ns, "--leader-elect=false", "--gitops-namespaces", ns)
	op.sweptAt(t, sha, pushed)

	const newToken = "rotated-7c2d9e41b0"
	noteSecret(newToken)
	repo.srv.SetPassword(newToken)
	sha, pushed = repo.push(t, "after rotation", map[string][]byte{"apps/note.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: note, namespace: " + ns + "}\ndata: {k: v}\n")})
	op.reconcileNow(t)
	waitFor(t, "a sweep refused by the git host", 30*time.Second, func() (bool, string) {
		r, err := op.report()
		if err != nil {
			return false, err.Error()
		}
		return r.Error != "" && r.Started.After(pushed), r.Error
	})

	if err := os.WriteFile(repo.tokenFile, []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	op.reconcileNow(t)
	rep := op.sweptAt(t, sha, rotated)
	if rep.Summary.Created != 1 || rep.Error != "" {
		t.Errorf("sweep after the token file rotated: %+v error %q", rep.Summary, rep.Error)
	}
	t.Logf("new token in use %s after the file changed", time.Since(rotated).Round(time.Millisecond))

	logs := op.logs()
	for _, tok := range []string{oldToken, newToken} {
		if strings.Contains(logs, tok) {
			t.Errorf("the operator log contains a token (%d chars)", len(tok))
		}
		if r, _ := op.report(); r != nil && strings.Contains(r.Error, tok) {
			t.Error("the /gitops report contains a token")
		}
	}
}
