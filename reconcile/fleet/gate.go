package fleet

import (
	"net/http"
	"slices"
	"strings"
)

// gate is the transport of a bounded registration's clients: every request is checked
// against the bound before it leaves, so no client built from the Bound's config (typed,
// dynamic, controller-runtime, a sweep's own) can read or write outside it.
type gate struct {
	next    http.RoundTripper
	cluster string
	bound   []string
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if ns, ok := admitPath(r.Method, r.URL.Path, g.bound); !ok {
		return nil, &OutOfBoundError{Cluster: g.cluster, Namespace: ns, Object: strings.ToUpper(r.Method) + " " + r.URL.Path, Bound: g.bound}
	}
	return g.next.RoundTrip(r)
}

// admitPath decides whether a request to path is inside bound: discovery and /version
// reads, and anything under /namespaces/<ns>/ of a bounded namespace. Cluster-scoped
// resources, lists across namespaces, the legacy /watch/ paths and writes of a Namespace
// object itself are outside. It returns the namespace the path names, if any.
func admitPath(method, path string, bound []string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	read := method == http.MethodGet || method == http.MethodHead
	var rest []string
	switch {
	case path == "/version" || path == "/api" || path == "/apis" || strings.HasPrefix(path, "/openapi/"):
		return "", read
	case parts[0] == "api" && len(parts) >= 2:
		rest = parts[2:]
	case parts[0] == "apis" && len(parts) >= 3:
		rest = parts[3:]
	case parts[0] == "apis" && len(parts) == 2: // /apis/<group>
		return "", read
	default:
		return "", false
	}
	switch {
	case len(rest) == 0: // /api/v1, /apis/<group>/<version>: discovery
		return "", read
	case rest[0] != "namespaces" || len(rest) < 2:
		return "", false // cluster-scoped, across namespaces, or /watch/
	}
	ns := rest[1]
	if !slices.Contains(bound, ns) {
		return ns, false
	}
	if len(rest) == 2 { // the Namespace object itself: readable, never written
		return ns, read
	}
	return ns, true
}
