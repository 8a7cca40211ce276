package gitops

import (
	"context"
	"crypto/sha1" // git object ids
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openuniverse/operator/source/github"
)

// fakeGitHub serves the three REST endpoints the GitHub source reads — the
// branch head (with ETags), the recursive tree and raw blobs — and counts
// the requests GitHub would charge to the rate limit (a 304 is free).
type fakeGitHub struct {
	mu      sync.Mutex
	head    string
	files   map[string][]byte // path → content at head
	blobs   map[string][]byte // sha → content, every revision
	charged int
	free    int
}

func blobID(b []byte) string {
	h := sha1.New() // git object ids
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (f *fakeGitHub) commit(files map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files == nil {
		f.files, f.blobs = map[string][]byte{}, map[string][]byte{}
	}
	h := sha1.New() // git object ids
	fmt.Fprint(h, f.head)
	for p, d := range files {
		f.files[p] = d
		f.blobs[blobID(d)] = d
		fmt.Fprint(h, p, blobID(d))
	}
	f.head = hex.EncodeToString(h.Sum(nil))
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, _ := strings.CutPrefix(r.URL.Path, "/api/repos/o/r/")
	switch {
	case rest == "commits/main":
		etag := `"` + f.head + `"`
		if r.Header.Get("If-None-Match") == etag {
			f.free++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		f.charged++
		w.Header().Set("ETag", etag)
		_, _ = w.Write([]byte(f.head))
	case rest == "git/trees/"+f.head:
		f.charged++
		var tree []map[string]string
		for _, p := range slices.Sorted(maps.Keys(f.files)) {
			tree = append(tree, map[string]string{"path": p, "mode": "100644", "type": "blob", "sha": blobID(f.files[p])})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sha": f.head, "tree": tree, "truncated": false})
	case strings.HasPrefix(rest, "git/blobs/"):
		f.charged++
		b, ok := f.blobs[strings.TrimPrefix(rest, "git/blobs/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) take() (charged, free int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	charged, free = f.charged, f.free
	f.charged, f.free = 0, 0
	return charged, free
}

// TestIdleSweepCostsNoGitHubRateLimit: over the GitHub source, a sweep with
// nothing changed makes one conditional request, answered 304 (free of rate
// limit), and no apiserver request.
func TestIdleSweepCostsNoGitHubRateLimit(t *testing.T) {
	const ns = "github-test"
	gh := &fakeGitHub{}
	files := map[string][]byte{"crs/ns.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns)}
	for i := range 20 {
		files[fmt.Sprintf("crs/cm-%02d.yaml", i)] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: %s}\ndata: {k: v}\n", i, ns)
	}
	gh.commit(files)
	srv := httptest.NewServer(gh)
	defer srv.Close()
	o := github.DefaultOptions()
	o.BaseURL, o.Repository = srv.URL+"/api/", "o/r"
	src, err := github.New(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	sw, reqs, _ := newTestSweeper(t, nil, ns)
	sw.src = src
	ctx := context.Background()

	if r := sw.Sweep(ctx); r.Error != "" || r.Summary.Created != 21 {
		t.Fatalf("cold sweep: %s %+v", r.Error, r.Summary)
	}
	if charged, _ := gh.take(); charged != 23 {
		t.Errorf("cold sweep: %d GitHub requests, want 23 (head, tree, 21 blobs)", charged)
	}
	reqs.take()
	for i := range 3 {
		r := sw.Sweep(ctx)
		charged, free := gh.take()
		if got := reqs.take(); charged != 0 || free != 1 || len(got) != 0 || !r.Idle {
			t.Errorf("idle sweep %d: %d charged and %d free GitHub requests, apiserver %v; want 0, 1 and none", i, charged, free, got)
		}
	}
	gh.commit(map[string][]byte{"crs/cm-07.yaml": fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-07, namespace: %s}\ndata: {k: changed}\n", ns)})
	r := sw.Sweep(ctx)
	charged, _ := gh.take()
	if got := reqs.take(); charged != 3 || total(got) != 1 || r.Summary.Updated != 1 {
		t.Errorf("one changed file: %d GitHub requests (want head, tree, one blob), apiserver %v (want one apply), %+v", charged, got, r.Summary)
	}
}
