package drive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/openuniverse/operator/source"
)

// PlatformTimeout bounds one request to the platform, as the reference does.
const PlatformTimeout = 15 * time.Second

// ErrUnauthorized: the peer answered 401; the token is re-read before the next attempt.
var ErrUnauthorized = errors.New("unauthorized (401): check the token file")

// Platform reads the apps table: GET {URL}/v1/apps with a Bearer token and, when set,
// X-Org-Id.
type Platform struct {
	URL   string
	OrgID string
	token source.Credentials
	http  *http.Client
}

// NewPlatform returns a platform client. The token is read from creds on every request;
// without it no request is sent. The token goes only to baseURL's origin, over https (plain
// http only to a loopback host).
func NewPlatform(baseURL, orgID string, creds source.Credentials) (*Platform, error) {
	c, err := newHTTPClient(baseURL, "the platform", Auth{Bearer: creds})
	if err != nil {
		return nil, fmt.Errorf("platform URL: %w", err)
	}
	return &Platform{URL: strings.TrimRight(baseURL, "/"), OrgID: orgID, token: creds, http: c}, nil
}

// envelope is the /v1/apps response. Rows are decoded one by one, so one malformed row
// costs only itself.
type envelope struct {
	Apps    []json.RawMessage `json:"apps"`
	Summary json.RawMessage   `json:"summary"`
}

// DecodeApps decodes the /v1/apps envelope leniently: a missing apps key is an empty
// table, unknown fields are ignored, and a row that does not decode is returned in bad
// (with its index) instead of failing the others.
func DecodeApps(body []byte) (rows []Row, bad []error, err error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, nil, fmt.Errorf("decode /v1/apps envelope: %w", err)
	}
	for i, raw := range env.Apps {
		var r Row
		if err := json.Unmarshal(raw, &r); err != nil {
			bad = append(bad, fmt.Errorf("apps[%d]: %w", i, err))
			continue
		}
		rows = append(rows, r)
	}
	return rows, bad, nil
}

// Apps fetches the apps table.
func (p *Platform) Apps(ctx context.Context) ([]Row, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/v1/apps", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if p.OrgID != "" {
		req.Header.Set("X-Org-Id", p.OrgID)
	}
	body, err := do(p.http, req, p.token)
	if err != nil {
		return nil, fmt.Errorf("GET %s/v1/apps: %w", p.URL, err)
	}
	rows, bad, err := DecodeApps(body)
	if err != nil {
		return nil, err
	}
	for _, e := range bad {
		logr.FromContextOrDiscard(ctx).Info("skipping an apps row that does not decode", "error", e.Error())
	}
	return rows, nil
}

// do sends req and returns the body of a 2xx response. A non-2xx is an error carrying up
// to 400 bytes of the body; a 401 is ErrUnauthorized (the client re-read the token and
// retried once already, when the file held a new one).
func do(c *http.Client, req *http.Request, token source.Credentials) ([]byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		if !source.NoCredentials(token) {
			err = token.Token().Scrub(err)
		}
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, ErrUnauthorized
	}
	return nil, &StatusError{Code: resp.StatusCode, Body: snippet(body)}
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[:400]
	}
	return s
}

// RowsFor returns the rows of cluster. A row naming no cluster belongs to none: the loop
// drives only what the platform explicitly places here.
func RowsFor(rows []Row, cluster string) []Row {
	var out []Row
	for _, r := range rows {
		if r.Cluster == cluster {
			out = append(out, r)
		}
	}
	return out
}
