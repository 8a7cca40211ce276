package fleet

import "net/http"

// Same reports whether b and o reach their cluster through the same clients: the same
// registration (its spec's generation) and the same credential. A loop that holds a Bound
// (the Kind controllers of a registered cluster) re-reaches on a schedule and rebuilds what
// it built from the Bound when Same is false: the credential rotated or the spec changed.
func (b *Bound) Same(o *Bound) bool {
	return b != nil && o != nil && b.cluster.Name == o.cluster.Name && b.clients.http == o.clients.http
}

// WrappedRoundTripper lets client-go find the transport under the gate (to cancel a watch
// when an informer stops: a stopped cluster's cache, a disengaged registration).
func (g *gate) WrappedRoundTripper() http.RoundTripper { return g.next }
