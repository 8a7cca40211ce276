package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watch event types.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
)

// debounce is how long the hub gathers informer events before it recomputes.
var debounce = 200 * time.Millisecond

// hub turns informer events into application watch events: any event on a CR or on an object
// under one marks the fleet dirty; after debounce the hub projects every application from the
// cache again and emits ADDED, MODIFIED (the projection changed) or DELETED to each
// subscriber. Subscribers are bounded: one that falls behind by more than its buffer is
// dropped (its EventSource reconnects and gets a fresh ADDED burst).
type hub struct {
	store *store
	log   logr.Logger
	dirty chan struct{}

	mu    sync.Mutex
	subs  map[*subscriber]struct{}
	last  map[string]snapshot
	ready bool
}

type snapshot struct {
	app  Application
	org  string
	json []byte
}

type hubEvent struct {
	Type string
	App  Application
	// Org is the application's org by the tenancy rule (Observed.Org).
	Org string
}

type subscriber struct {
	// events is false for tree streams, which only need the ticks.
	events bool
	ch     chan hubEvent
	// ticks wakes tree streams after each recompute.
	ticks chan struct{}
	gone  chan struct{}
	once  sync.Once
}

func newHub(st *store, log logr.Logger) *hub {
	return &hub{store: st, log: log, dirty: make(chan struct{}, 1), subs: map[*subscriber]struct{}{}, last: map[string]snapshot{}}
}

func (h *hub) mark() {
	select {
	case h.dirty <- struct{}{}:
	default:
	}
}

func (h *hub) subscribe(buffer int, events bool) *subscriber {
	s := &subscriber{events: events, ch: make(chan hubEvent, buffer), ticks: make(chan struct{}, 1), gone: make(chan struct{})}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
	s.once.Do(func() { close(s.gone) })
}

// run registers the informer handlers and recomputes on events until ctx ends.
func (h *hub) run(ctx context.Context, informers crcache.Informers) {
	if informers != nil {
		if err := h.register(ctx, informers); err != nil {
			h.log.Error(err, "stream informers not registered; streams send their initial burst and keepalives only")
		}
	}
	h.recompute(ctx)
	t := time.NewTimer(debounce)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.dirty:
			t.Reset(debounce)
		case <-t.C:
			h.recompute(ctx)
		}
	}
}

func (h *hub) register(ctx context.Context, informers crcache.Informers) error {
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.mark() },
		UpdateFunc: func(_, _ any) { h.mark() },
		DeleteFunc: func(any) { h.mark() },
	}
	var objs []client.Object
	for _, k := range h.store.kinds {
		obj, err := h.store.scheme.New(k.gvk)
		if err != nil {
			return fmt.Errorf("no type for %s: %w", k.gvk, err)
		}
		objs = append(objs, obj.(client.Object))
	}
	for _, gvk := range h.store.children {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		objs = append(objs, u)
	}
	// a Namespace's org label moves its applications between orgs
	objs = append(objs, &corev1.Pod{}, &appsv1.ReplicaSet{}, &corev1.Namespace{})
	for _, o := range objs {
		inf, err := informers.GetInformer(ctx, o, crcache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("informer for %T: %w", o, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	return nil
}

func appKey(a Application) string { return a.Namespace + "/" + a.Name }

// recompute projects the fleet and fans the differences out.
func (h *hub) recompute(ctx context.Context) {
	all, err := h.store.observe(ctx, "", false)
	if err != nil {
		h.log.Error(err, "recompute applications for the stream")
		return
	}
	uids := make(map[string]bool, len(all))
	for _, o := range all {
		uids[string(o.CR.GetUID())] = true
	}
	h.store.revs.keep(uids)
	next := make(map[string]snapshot, len(all))
	var events []hubEvent
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range all {
		app := Project(o, h.store.opts)
		b, err := json.Marshal(app)
		if err != nil {
			continue
		}
		k := appKey(app)
		next[k] = snapshot{app: app, org: o.Org, json: b}
		prev, ok := h.last[k]
		switch {
		case !ok:
			events = append(events, hubEvent{Type: EventAdded, App: app, Org: o.Org})
		case prev.org != o.Org: // moved to another org: gone from the old one's streams
			events = append(events, hubEvent{Type: EventDeleted, App: prev.app, Org: prev.org}, hubEvent{Type: EventAdded, App: app, Org: o.Org})
		case !bytes.Equal(prev.json, b):
			events = append(events, hubEvent{Type: EventModified, App: app, Org: o.Org})
		}
	}
	for k, prev := range h.last {
		if _, ok := next[k]; !ok {
			events = append(events, hubEvent{Type: EventDeleted, App: prev.app, Org: prev.org})
		}
	}
	h.last = next
	if !h.ready { // the first projection is the baseline: streams send their own burst
		h.ready = true
		events = nil
	}
	for s := range h.subs {
		for _, ev := range events {
			if !s.events {
				break
			}
			select {
			case s.ch <- ev:
			default:
				delete(h.subs, s)
				s.once.Do(func() { close(s.gone) })
			}
		}
		select {
		case s.ticks <- struct{}{}:
		default:
		}
	}
}

// sse writes server-sent events as Argo CD's forwarder does. A stream outlives the server's
// read and write timeouts: it lifts the read deadline (a GET has no body; the server's
// background read would otherwise end the stream at ReadTimeout) and renews the write
// deadline before each frame, so a client that stops reading is dropped after writeTimeout.
type sse struct {
	w            http.ResponseWriter
	f            http.Flusher
	rc           *http.ResponseController
	writeTimeout time.Duration
}

func startSSE(w http.ResponseWriter, writeTimeout time.Duration) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeError(w, codeInternal, "streaming unsupported")
		return nil, false
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{}) // ErrNotSupported outside a real server: nothing to lift
	e := &sse{w: w, f: f, rc: rc, writeTimeout: writeTimeout}
	e.renew()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Transfer-Encoding", "chunked")
	h.Del("Content-Encoding") // never gzip a stream
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return e, true
}

func (e *sse) renew() {
	if e.writeTimeout > 0 {
		_ = e.rc.SetWriteDeadline(time.Now().Add(e.writeTimeout))
	}
}

// data writes one message: "data: <json> \n\n" plus the gateway's "\n" delimiter.
func (e *sse) data(b []byte) error {
	e.renew()
	if _, err := fmt.Fprintf(e.w, "data: %s \n\n\n", b); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

func (e *sse) keepalive() error {
	e.renew()
	if _, err := e.w.Write([]byte(":\n")); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

//nolint:funlen // one SSE loop: the burst, the events, the keepalive and the token's expiry in one select
func (s *Server) streamApplications(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	q := readAppQuery(r)
	sel, err := parseSelector(q.selector)
	if err != nil {
		writeError(w, codeInvalidArgument, err.Error())
		return
	}
	var minRV int64
	if q.resourceVersion != "" {
		if minRV, err = strconv.ParseInt(q.resourceVersion, 10, 64); err != nil {
			writeError(w, codeInvalidArgument, "resourceVersion must be an integer")
			return
		}
	}
	fields := parseFields(r.URL.Query().Get("fields"))
	release, expired, ok := s.openStream(w, id)
	if !ok {
		return
	}
	defer release()
	sub := s.hub.subscribe(s.c.Options.StreamBuffer, true)
	defer s.hub.unsubscribe(sub)
	out, ok := startSSE(w, s.c.Options.WriteTimeout)
	if !ok {
		return
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	lastSent := map[string][]byte{}
	send := func(ev hubEvent) error {
		if !CanSeeApp(id, ev.Org) || !matchApp(ev.App, q, sel) {
			return nil
		}
		if minRV > 0 {
			if n, err := strconv.ParseInt(ev.App.ResourceVersion, 10, 64); err == nil && n < minRV {
				return nil
			}
		}
		k := appKey(ev.App)
		typ := ev.Type
		if typ == EventAdded && lastSent[k] != nil { // new to the hub, not to this stream
			typ = EventModified
		}
		v, err := fields.apply(map[string]any{"result": ApplicationWatchEvent{Type: typ, Application: ev.App}})
		if err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if bytes.Equal(lastSent[k], b) {
			return nil
		}
		lastSent[k] = b
		return out.data(b)
	}
	if q.resourceVersion == "" || q.name != "" {
		evs, err := s.visibleEvents(r.Context(), id, q)
		if err != nil {
			return // headers are sent; the client reconnects
		}
		for _, ev := range evs {
			if err := send(ev); err != nil {
				return
			}
		}
	}
	tick := time.NewTicker(s.c.Options.Keepalive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-expired:
			return // the token that opened the stream is no longer valid
		case <-sub.gone:
			s.metrics.dropped.Inc()
			return
		case ev := <-sub.ch:
			if err := send(ev); err != nil {
				return
			}
		case <-tick.C:
			if err := out.keepalive(); err != nil {
				return
			}
		}
	}
}

// streamTree sends the whole tree first and again each time it changes.
func (s *Server) streamTree(w http.ResponseWriter, r *http.Request) {
	o, id, ok := s.app(w, r, true)
	if !ok {
		return
	}
	ns, name := o.CR.GetNamespace(), r.PathValue("name")
	release, expired, ok := s.openStream(w, id)
	if !ok {
		return
	}
	defer release()
	sub := s.hub.subscribe(1, false)
	defer s.hub.unsubscribe(sub)
	out, ok := startSSE(w, s.c.Options.WriteTimeout)
	if !ok {
		return
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	var last []byte
	send := func(o *Observed) error {
		b, err := json.Marshal(map[string]any{"result": Tree(*o)})
		if err != nil || bytes.Equal(b, last) {
			return err
		}
		last = b
		return out.data(b)
	}
	if err := send(o); err != nil {
		return
	}
	tick := time.NewTicker(s.c.Options.Keepalive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-expired:
			return
		case <-sub.gone:
			return
		case <-sub.ticks:
			o, err := s.store.find(r.Context(), ns, name, true, func(o *Observed) bool { return CanSeeApp(id, o.Org) })
			if err != nil || o == nil {
				return
			}
			if err := send(o); err != nil {
				return
			}
		case <-tick.C:
			if err := out.keepalive(); err != nil {
				return
			}
		}
	}
}

// openStream admits one more stream of id within the per-identity and total bounds (else 429
// with Retry-After), and returns when it must end: when the token that opened it expires.
func (s *Server) openStream(w http.ResponseWriter, id Identity) (release func(), expired <-chan time.Time, ok bool) {
	free, ok := s.limits.openStream(limitKey(id))
	if !ok {
		s.metrics.limited.WithLabelValues("stream").Inc()
		w.Header().Set("Retry-After", "10")
		writeError(w, codeResourceExhausted, fmt.Sprintf("too many open streams (at most %d per identity, %d in all)",
			s.c.Options.MaxStreamsPerIdentity, s.c.Options.MaxStreams))
		return nil, nil, false
	}
	if id.Expiry.IsZero() {
		return free, nil, true // a token without exp never verifies; nothing to wait for
	}
	t := time.NewTimer(id.Expiry.Sub(s.c.Now()))
	return func() { t.Stop(); free() }, t.C, true
}
