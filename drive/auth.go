package drive

import (
	"net/http"
	"time"

	"github.com/openuniverse/operator/source/transport"
)

// Auth is the one credential a peer is called with: a Bearer token (platform, cloud) or
// HTTP Basic with a client id and secret (visor); see transport.Auth.
type Auth = transport.Auth

// ErrNoCredentials: the peer's credentials are not configured or empty; nothing is sent.
var ErrNoCredentials = transport.ErrNoCredentials

// newHTTPClient is the one outbound client (source/transport): the credential goes only to
// the configured origin (a redirect elsewhere is followed without it), plain http only to
// loopback, two retries on 5xx and network errors (never on 4xx), 15 s per attempt.
func newHTTPClient(base, peer string, auth Auth) (*http.Client, error) {
	c, _, err := transport.New(base, auth, transport.Options{
		Peer: peer, Timeout: PlatformTimeout, RetryMax: 2,
		RetryWaitMin: 200 * time.Millisecond, RetryWaitMax: 2 * time.Second,
	})
	return c, err
}
