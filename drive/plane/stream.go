package plane

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
	json []byte
}

type hubEvent struct {
	Type string
	App  Application
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
	objs = append(objs, &corev1.Pod{}, &appsv1.ReplicaSet{})
	for _, o := range objs {
		inf, err := informers.GetInformer(ctx, o)
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
		next[k] = snapshot{app: app, json: b}
		prev, ok := h.last[k]
		switch {
		case !ok:
			events = append(events, hubEvent{Type: EventAdded, App: app})
		case !bytes.Equal(prev.json, b):
			events = append(events, hubEvent{Type: EventModified, App: app})
		}
	}
	for k, prev := range h.last {
		if _, ok := next[k]; !ok {
			events = append(events, hubEvent{Type: EventDeleted, App: prev.app})
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

// sse writes server-sent events as Argo CD's forwarder does.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeError(w, codeInternal, "streaming unsupported")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Transfer-Encoding", "chunked")
	h.Del("Content-Encoding") // never gzip a stream
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
}

// data writes one message: "data: <json> \n\n" plus the gateway's "\n" delimiter.
func (e *sse) data(b []byte) error {
	if _, err := fmt.Fprintf(e.w, "data: %s \n\n\n", b); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

func (e *sse) keepalive() error {
	if _, err := e.w.Write([]byte(":\n")); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

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
	sub := s.hub.subscribe(s.c.Options.StreamBuffer, true)
	defer s.hub.unsubscribe(sub)
	out, ok := startSSE(w)
	if !ok {
		return
	}
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	lastSent := map[string][]byte{}
	send := func(ev hubEvent) error {
		if !CanSeeApp(id, ev.App.Labels, s.store.opts.OrgLabel) || !matchApp(ev.App, q, sel) {
			return nil
		}
		if minRV > 0 {
			if n, err := strconv.ParseInt(ev.App.ResourceVersion, 10, 64); err == nil && n < minRV {
				return nil
			}
		}
		v, err := fields.apply(map[string]any{"result": ApplicationWatchEvent{Type: ev.Type, Application: ev.App}})
		if err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		k := appKey(ev.App)
		if bytes.Equal(lastSent[k], b) {
			return nil
		}
		lastSent[k] = b
		return out.data(b)
	}
	if q.resourceVersion == "" || q.name != "" {
		apps, err := s.visible(r.Context(), id, q)
		if err != nil {
			return // headers are sent; the client reconnects
		}
		for _, a := range apps {
			if err := send(hubEvent{Type: EventAdded, App: a}); err != nil {
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
	sub := s.hub.subscribe(1, false)
	defer s.hub.unsubscribe(sub)
	out, ok := startSSE(w)
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
		case <-sub.gone:
			return
		case <-sub.ticks:
			o, err := s.store.find(r.Context(), ns, name, true)
			if err != nil || o == nil || !CanSeeApp(id, o.CR.GetLabels(), s.store.opts.OrgLabel) {
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
