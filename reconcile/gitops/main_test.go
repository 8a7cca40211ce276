package gitops

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// memSource is a Source over files held in memory; commit makes a new revision.
type memSource struct {
	mu      sync.Mutex
	rev     int
	files   map[string][]byte
	fetched map[string]string // path → content of the last snapshot served
	heads   int
	snaps   int
}

func newMemSource(files map[string][]byte) *memSource {
	m := &memSource{files: map[string][]byte{}, fetched: map[string]string{}}
	m.commit(files)
	return m
}

// calls returns how many Head and Snapshot calls were made since the last call.
func (m *memSource) calls() (heads, snaps int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	heads, snaps = m.heads, m.snaps
	m.heads, m.snaps = 0, 0
	return heads, snaps
}

// commit merges files (nil content deletes) into a new revision.
func (m *memSource) commit(files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, d := range files {
		if d == nil {
			delete(m.files, p)
			continue
		}
		m.files[p] = d
	}
	m.rev++
}

func (m *memSource) Head(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heads++
	return fmt.Sprintf("%040d", m.rev), nil
}

func (m *memSource) Snapshot(_ context.Context, rev string) (*source.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snaps++
	s := &source.Snapshot{Revision: rev}
	for _, p := range slices.Sorted(maps.Keys(m.files)) {
		d := m.files[p]
		if m.fetched[p] != string(d) {
			s.Refetched++
			m.fetched[p] = string(d)
		}
		s.Files = append(s.Files, source.File{Path: p, Data: d})
	}
	return s, nil
}

// requests counts the apiserver requests a client makes, by verb and resource.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		if r.n == nil {
			r.n = map[string]int{}
		}
		r.n[verbOf(req)]++
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// take returns the counts since the last take and resets them.
func (r *requests) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

func total(n map[string]int) int {
	t := 0
	for _, v := range n {
		t += v
	}
	return t
}

func sumVerb(n map[string]int, verb string) int {
	t := 0
	for k, v := range n {
		if strings.HasPrefix(k, verb+" ") {
			t += v
		}
	}
	return t
}

// verbOf renders a request as "VERB resource": APPLY for a server-side
// apply patch, WATCH for a watch, the method otherwise.
func verbOf(req *http.Request) string {
	verb := req.Method
	switch {
	case req.Method == http.MethodPatch && strings.Contains(req.Header.Get("Content-Type"), "apply-patch"):
		verb = "APPLY"
	case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
		verb = "WATCH"
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	res := req.URL.Path
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		res = resourceOf(parts[2:])
	case len(parts) >= 4 && parts[0] == "apis":
		res = resourceOf(parts[3:])
	}
	return verb + " " + res
}

func resourceOf(p []string) string {
	if len(p) >= 3 && p[0] == "namespaces" {
		return p[2]
	}
	return p[0]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
