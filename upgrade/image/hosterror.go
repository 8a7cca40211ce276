package image

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-github/v66/github"

	"github.com/openuniverse/operator/source"
)

// HostError is a failure of a git host (a fetch, a push, an API call) as status, Events and
// logs may say it: a fixed reason and the status code when there was one. The host's own
// words (an API error body, a server's "remote:" lines) stay in Err, which is never printed;
// errors.Is and errors.As see through it (source.ErrConflict, ...).
type HostError struct {
	// Op says what was attempted ("read apps/web.yaml", "commit Service x/y to f.yaml").
	Op  string
	Err error
}

func (e *HostError) Unwrap() error { return e.Err }

func (e *HostError) Error() string { return e.Op + ": " + hostReason(e.Err) }

// hostError wraps err of a git host, keeping the errors of this package and of the write
// path's own checks (edits, missing files), whose text is ours.
func hostError(op string, err error) error {
	if err == nil {
		return nil
	}
	var nm *NoMatchError
	var ff *ForeignFileError
	var ee *source.EditError
	if errors.As(err, &nm) || errors.As(err, &ff) || errors.As(err, &ee) || errors.Is(err, ErrCRNotFound) || errors.Is(err, ErrCRAmbiguous) ||
		errors.Is(err, ErrRepositoryChange) || errors.Is(err, source.ErrSnapshotTooLarge) || errors.Is(err, source.ErrTooManyFiles) || errors.Is(err, source.ErrTooLarge) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &HostError{Op: op, Err: err}
}

// hostReason is the fixed text of a git host's failure.
func hostReason(err error) string {
	code := 0
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		code = ge.Response.StatusCode
	}
	var rl *github.RateLimitError
	var arl *github.AbuseRateLimitError
	switch {
	case errors.Is(err, source.ErrConflict):
		return "the branch kept moving while writing (" + source.ErrConflict.Error() + ")"
	case errors.Is(err, source.ErrFileNotFound):
		return "the file is not on the branch"
	case errors.Is(err, source.ErrSigningUnsupported):
		return source.ErrSigningUnsupported.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "timed out"
	case errors.As(err, &rl) || errors.As(err, &arl) || code == http.StatusTooManyRequests:
		return "the git host rate-limited the request"
	case errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) || code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("the git host refused the credentials%s: check credentialsSecret", codeSuffix(code))
	case errors.Is(err, transport.ErrRepositoryNotFound) || code == http.StatusNotFound:
		return fmt.Sprintf("repository or branch not found%s", codeSuffix(code))
	case code != 0:
		return fmt.Sprintf("the git host answered %d", code)
	}
	return "the git host could not be reached or refused the request"
}

func codeSuffix(code int) string {
	if code == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d)", code)
}
