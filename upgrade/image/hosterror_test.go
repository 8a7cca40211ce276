package image

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-github/v66/github"

	"github.com/openuniverse/operator/source"
)

// TestHostError: a git host's words (a GitHub error body, a server's message) never reach the
// text status, Events and logs carry; the status code and a fixed reason do, and errors.Is
// still sees the write path's errors.
func TestHostError(t *testing.T) {
	const leak = "internal: repo org-b/secret-plans at 10.0.3.7"
	gh := &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusUnprocessableEntity, Request: &http.Request{Method: "PATCH"}}, Message: leak}
	cases := []struct {
		err  error
		says string
	}{
		{gh, "answered 422"},
		{&github.ErrorResponse{Response: &http.Response{StatusCode: 404, Request: &http.Request{}}, Message: leak}, "not found (404)"},
		{&github.ErrorResponse{Response: &http.Response{StatusCode: 401, Request: &http.Request{}}, Message: leak}, "refused the credentials (401)"},
		{fmt.Errorf("push: %w: remote: %s", transport.ErrAuthorizationFailed, leak), "refused the credentials"},
		{fmt.Errorf("%s: %w", leak, source.ErrConflict), "kept moving"},
		{errors.New(leak), "could not be reached"},
	}
	for _, c := range cases {
		err := hostError("push apps/web.yaml", c.err)
		if strings.Contains(err.Error(), "10.0.3.7") || !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "push apps/web.yaml: ") {
			t.Errorf("%v -> %q, want %q", c.err, err, c.says)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%v: the chain is lost", c.err)
		}
	}
	// Our own refusals keep their words.
	ff := &ForeignFileError{Path: "f.yaml", Namespace: "org-a"}
	if err := hostError("read f.yaml", ff); !strings.Contains(err.Error(), "namespace org-a") {
		t.Errorf("own error: %v", err)
	}
}
