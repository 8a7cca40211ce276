package gitops

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// FuzzWebhookVerify: whatever the headers and body, a request is accepted only when it
// carries a correct HMAC-SHA256 of its body under the secret (or GitLab's token), and the
// handler never panics. Seeds: testdata/fuzz/FuzzWebhookVerify.
func FuzzWebhookVerify(f *testing.F) {
	f.Add("X-Hub-Signature-256", "sha256="+sign(hookSecret, "{}"), "{}")
	f.Add("X-Hub-Signature-256", "sha1=00", "{}")
	f.Add("X-Gitea-Signature", sign(hookSecret, "x"), "x")
	f.Add("X-Gitlab-Token", hookSecret, "")
	f.Add("X-Signature-256", "sha256=", "")
	f.Fuzz(func(t *testing.T, header, value, body string) {
		req := httptest.NewRequest(http.MethodPost, "/reconcile", strings.NewReader(body))
		if http.CanonicalHeaderKey(header) == "" || strings.ContainsAny(header, "\r\n:\x00 ") || strings.ContainsAny(value, "\r\n\x00") {
			return
		}
		req.Header.Set(header, value)
		trig := NewTrigger()
		rec := httptest.NewRecorder()
		(&Webhook{Trigger: trig, Secret: staticSecret(hookSecret), Log: logr.Discard()}).ServeHTTP(rec, req)
		accepted := rec.Code == http.StatusAccepted
		h := http.CanonicalHeaderKey(header)
		valid := false
		switch h {
		case HeaderGitHub, HeaderGeneric:
			valid = value == "sha256="+sign(hookSecret, body) || strings.EqualFold(strings.TrimSpace(strings.TrimPrefix(value, "sha256=")), sign(hookSecret, body)) && strings.HasPrefix(value, "sha256=")
		case HeaderGitea, HeaderForgejo:
			valid = strings.EqualFold(strings.TrimSpace(value), sign(hookSecret, body))
		case HeaderGitLab:
			valid = value == hookSecret
		}
		if accepted != valid {
			t.Fatalf("%s: %q over %q: accepted=%v, a valid signature=%v", h, value, body, accepted, valid)
		}
		if accepted != (len(trig.C()) == 1) {
			t.Fatal("accepted without queueing, or queued without accepting")
		}
	})
}
