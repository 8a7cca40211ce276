package e2e

import (
	"crypto/sha1" // git object ids are SHA-1
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub is an httptest GitHub REST API for one repository o/r, speaking the wire
// shapes the GitHub source reads — the branch head as application/vnd.github.sha with an
// ETag (304 on If-None-Match, free of rate limit), the recursive tree, raw blobs — with
// GitHub's rate-limit headers on every answer and its JSON error bodies. Faults are
// queued per endpoint: each request of that kind takes the next one.
type fakeGitHub struct {
	t     *testing.T
	token string

	mu        sync.Mutex
	head      string
	files     map[string][]byte // path → content at head
	blobs     map[string][]byte // sha → content, every revision
	truncated bool              // the tree answer says truncated: true
	remaining int
	faults    map[string][]ghFault // endpoint kind (head, tree, blob) → queued answers
	requests  []ghRequest
}

// ghFault is one error answer.
type ghFault struct {
	status  int
	headers map[string]string
	message string
}

type ghRequest struct {
	kind   string
	status int
	at     time.Time
}

func newFakeGitHub(t *testing.T, token string) (*fakeGitHub, *httptest.Server) {
	f := &fakeGitHub{t: t, token: token, files: map[string][]byte{}, blobs: map[string][]byte{}, remaining: 5000, faults: map[string][]ghFault{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func gitBlobID(b []byte) string {
	h := sha1.New() // git object ids
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// commit merges files into a new head and returns its sha.
func (f *fakeGitHub) commit(files map[string][]byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := sha1.New() // git object ids
	fmt.Fprint(h, f.head)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f.files[p] = files[p]
		f.blobs[gitBlobID(files[p])] = files[p]
		fmt.Fprint(h, p, gitBlobID(files[p]))
	}
	f.head = hex.EncodeToString(h.Sum(nil))
	return f.head
}

// fail queues n answers of a fault for requests of kind.
func (f *fakeGitHub) fail(kind string, n int, fault ghFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults[kind] = append(f.faults[kind], fault)
	}
}

func (f *fakeGitHub) setTruncated(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.truncated = v
}

// take returns the requests since the last call.
func (f *fakeGitHub) take() []ghRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kind, status := f.serve(w, r)
	f.requests = append(f.requests, ghRequest{kind: kind, status: status, at: time.Now()})
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) (string, int) {
	rest, _ := strings.CutPrefix(r.URL.Path, "/api/repos/o/r/")
	kind := "other"
	switch {
	case strings.HasPrefix(rest, "commits/"):
		kind = "head"
	case strings.HasPrefix(rest, "git/trees/"):
		kind = "tree"
	case strings.HasPrefix(rest, "git/blobs/"):
		kind = "blob"
	}
	h := w.Header()
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("E2E:%d", len(f.requests)))
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	errorBody := func(status int, msg string) (string, int) {
		h.Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)})
		return kind, status
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		return errorBody(http.StatusUnauthorized, "Bad credentials")
	}
	if q := f.faults[kind]; len(q) > 0 {
		fault := q[0]
		f.faults[kind] = q[1:]
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.remaining))
		for k, v := range fault.headers {
			h.Set(k, v)
		}
		return errorBody(fault.status, fault.message)
	}
	if r.Method != http.MethodGet {
		return errorBody(http.StatusNotFound, "Not Found")
	}
	switch kind {
	case "head":
		etag := `"` + f.head + `"`
		if r.Header.Get("If-None-Match") == etag {
			h.Set("X-RateLimit-Remaining", strconv.Itoa(f.remaining))
			w.WriteHeader(http.StatusNotModified)
			return kind, http.StatusNotModified
		}
		if r.Header.Get("Accept") != "application/vnd.github.sha" || rest != "commits/main" {
			return errorBody(http.StatusUnprocessableEntity, "No commit found for SHA: "+strings.TrimPrefix(rest, "commits/"))
		}
		f.remaining--
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.remaining))
		h.Set("ETag", etag)
		h.Set("Content-Type", "application/vnd.github.sha; charset=utf-8")
		_, _ = w.Write([]byte(f.head))
	case "tree":
		if rest != "git/trees/"+f.head || r.URL.Query().Get("recursive") == "" {
			return errorBody(http.StatusNotFound, "Not Found")
		}
		f.remaining--
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.remaining))
		var tree []map[string]any
		for _, p := range slices.Sorted(maps.Keys(f.files)) {
			id := gitBlobID(f.files[p])
			tree = append(tree, map[string]any{"path": p, "mode": "100644", "type": "blob", "sha": id, "size": len(f.files[p]),
				"url": "http://" + r.Host + "/api/repos/o/r/git/blobs/" + id})
		}
		h.Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": f.head, "url": "http://" + r.Host + r.URL.Path, "tree": tree, "truncated": f.truncated})
	case "blob":
		b, ok := f.blobs[strings.TrimPrefix(rest, "git/blobs/")]
		if !ok {
			return errorBody(http.StatusNotFound, "Not Found")
		}
		f.remaining--
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.remaining))
		h.Set("Content-Type", "application/vnd.github.raw; charset=utf-8")
		_, _ = w.Write(b)
	default:
		return errorBody(http.StatusNotFound, "Not Found")
	}
	return kind, http.StatusOK
}
