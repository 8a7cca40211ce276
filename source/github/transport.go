package github

import (
	"io"
	"net/http"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/source"
)

// authTransport sets the token on each request to the configured host, in
// the Authorization header only, and re-reads it once when the host answers
// 401. A request to any other host (a redirect to a CDN, an object store, a
// hostile mirror) goes without it: the check is per hop, here, so redirects
// are covered too.
type authTransport struct {
	creds source.Credentials // nil: anonymous
	host  string             // the API's host[:port]
	base  http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.creds == nil || req.URL.Host != t.host {
		r := req.Clone(req.Context())
		r.Header.Del("Authorization")
		return t.base.RoundTrip(r)
	}
	tok := t.creds.Token()
	resp, err := t.base.RoundTrip(withToken(req, tok))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable(req) {
		return resp, tok.Scrub(err)
	}
	// Perhaps the token was rotated since it was last read.
	log := logr.FromContextOrDiscard(req.Context())
	fresh, rerr := t.creds.Reload()
	if rerr != nil {
		log.Error(rerr, "Re-reading the token after a 401")
		return resp, nil
	}
	if fresh == tok {
		log.Info("GitHub refused the token and the token file holds no other", "path", req.URL.Path)
		return resp, nil
	}
	log.Info("GitHub refused the token, retrying with the re-read one", "path", req.URL.Path)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = body
	}
	resp, err = t.base.RoundTrip(withToken(req, fresh))
	return resp, fresh.Scrub(err)
}

func withToken(req *http.Request, tok source.Token) *http.Request {
	r := req.Clone(req.Context())
	if !tok.IsZero() {
		r.Header.Set("Authorization", "Bearer "+tok.Reveal())
	}
	return r
}

// replayable reports whether req can be sent a second time.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}
