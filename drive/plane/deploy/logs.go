package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PodLogSource opens a pod's log (the apiserver's pods/{name}/log), wired in cmd/operator.
type PodLogSource interface {
	PodLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)
}

// The logs route's bounds (Argo CD's max pods to render is 10; the others are the plane's).
const (
	maxLogPods         = 10
	defaultTailLines   = 1000
	maxTailLines       = 10000
	maxLogBytesPerPod  = 1 << 20
	defaultLogDeadline = 10 * time.Minute
)

// logQuery is ApplicationPodLogsQuery as far as the plane honours it.
type logQuery struct {
	pod, container, kind, group, resource, namespace, filter string
	tail, since                                              int64
	follow, previous, matchCase                              bool
}

func readLogQuery(r *http.Request) (logQuery, error) {
	q := r.URL.Query()
	lq := logQuery{pod: q.Get("podName"), container: q.Get("container"), kind: q.Get("kind"), group: q.Get("group"),
		resource: q.Get("resourceName"), namespace: q.Get("namespace"), filter: q.Get("filter"),
		follow: q.Get("follow") == "true", previous: q.Get("previous") == "true", matchCase: q.Get("matchCase") == "true",
		tail: defaultTailLines}
	if p := r.PathValue("pod"); p != "" {
		lq.pod = p
	}
	for k, dst := range map[string]*int64{"tailLines": &lq.tail, "sinceSeconds": &lq.since} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return lq, fmt.Errorf("%s must be a non-negative integer", k)
			}
			*dst = n
		}
	}
	if lq.tail <= 0 || lq.tail > maxTailLines {
		lq.tail = maxTailLines
	}
	return lq, nil
}

// podsOf are the pods of o's tree that q selects: one by name, the pods under one resource
// (kind, group, resourceName), or all of them; in name order.
func podsOf(o *Observed, q logQuery) []*unstructured.Unstructured {
	all := append(append([]*unstructured.Unstructured{}, o.Children...), o.Descendants...)
	byUID := map[string]*unstructured.Unstructured{}
	for _, u := range all {
		byUID[string(u.GetUID())] = u
	}
	under := func(p *unstructured.Unstructured) bool { // p is q's resource or below it
		for u, hops := p, 0; u != nil && hops < 4; hops++ {
			gvk := u.GroupVersionKind()
			if gvk.Kind == q.kind && gvk.Group == q.group && u.GetName() == q.resource && (q.namespace == "" || u.GetNamespace() == q.namespace) {
				return true
			}
			ref := metav1.GetControllerOfNoCopy(u)
			if ref == nil {
				return false
			}
			u = byUID[string(ref.UID)]
		}
		return false
	}
	var out []*unstructured.Unstructured
	for _, u := range all {
		if u.GetKind() != "Pod" || u.GroupVersionKind().Group != "" {
			continue
		}
		switch {
		case q.pod != "" && (u.GetName() != q.pod || (q.namespace != "" && u.GetNamespace() != q.namespace)):
			continue
		case q.pod == "" && q.resource != "" && !under(u):
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// logs answers GET applications/{name}/logs and .../pods/{pod}/logs: the log lines of the
// application's pods, as Argo CD's stream of {"result":LogEntry} (server-sent events when the
// client asks for them, else one JSON object a line), ending with a last entry. Bounded:
// tailLines (default 1000, at most 10000), 1 MiB per pod, at most 10 pods, and a follow
// ends at the deadline (10 min) or when the token expires. Only pods of the tree the caller
// may see; a Secret is never a pod.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	o, id, ok := s.app(w, r, true)
	if !ok {
		return
	}
	if s.c.Logs == nil {
		writeError(w, codeUnimplemented, "pod logs are not wired in this process")
		return
	}
	q, err := readLogQuery(r)
	if err != nil {
		writeError(w, codeInvalidArgument, err.Error())
		return
	}
	pods := podsOf(o, q)
	switch {
	case len(pods) == 0:
		writeError(w, codeNotFound, "no pod of this application matches")
		return
	case len(pods) > maxLogPods:
		writeError(w, codeInvalidArgument, fmt.Sprintf("%d pods match; at most %d: name a pod or a resource", len(pods), maxLogPods))
		return
	}
	ctx := r.Context()
	if q.follow {
		release, ok := s.limits.openStream(limitKey(id))
		if !ok {
			s.metrics.limited.WithLabelValues("stream").Inc()
			writeError(w, codeResourceExhausted, "too many open streams")
			return
		}
		defer release()
		deadline := s.c.Now().Add(defaultLogDeadline)
		if !id.Expiry.IsZero() && id.Expiry.Before(deadline) {
			deadline = id.Expiry
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	out := newLogWriter(w, r, s.c.Options.WriteTimeout)
	entries := make(chan LogEntry, 64)
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func(p *unstructured.Unstructured) {
			defer wg.Done()
			s.readPodLog(ctx, p, q, entries)
		}(p)
	}
	go func() { wg.Wait(); close(entries) }()
	var batch []LogEntry
	for e := range entries {
		if q.follow {
			if err := out.write(e); err != nil {
				break
			}
			continue
		}
		batch = append(batch, e)
	}
	if !q.follow { // all read: in time order, as Argo CD merges them
		slices.SortStableFunc(batch, func(a, b LogEntry) int { return a.TimeStamp.Compare(b.TimeStamp.Time) })
		for _, e := range batch {
			if out.write(e) != nil {
				return
			}
		}
	}
	now := metav1.NewTime(s.c.Now())
	_ = out.write(LogEntry{Last: true, TimeStamp: now, TimeStampStr: now.Format(time.RFC3339Nano)})
}

// readPodLog streams one pod's log lines (timestamped by the apiserver) into entries.
func (s *Server) readPodLog(ctx context.Context, pod *unstructured.Unstructured, q logQuery, entries chan<- LogEntry) {
	opts := &corev1.PodLogOptions{Container: q.container, Follow: q.follow, Previous: q.previous, Timestamps: true,
		TailLines: &q.tail, LimitBytes: ptrInt64(maxLogBytesPerPod)}
	if q.since > 0 {
		opts.SinceSeconds = &q.since
	}
	if opts.Container == "" { // the first container, as kubectl logs does without -c
		cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
		if len(cs) > 1 {
			if m, ok := cs[0].(map[string]any); ok {
				opts.Container, _ = m["name"].(string)
			}
		}
	}
	rc, err := s.c.Logs.PodLogs(ctx, pod.GetNamespace(), pod.GetName(), opts)
	if err != nil {
		s.send(ctx, entries, LogEntry{Content: "error: " + err.Error(), PodName: pod.GetName()}, s.c.Now())
		return
	}
	defer rc.Close()
	go func() { <-ctx.Done(); rc.Close() }() // a follow ends at the deadline
	sc := bufio.NewScanner(io.LimitReader(rc, maxLogBytesPerPod))
	sc.Buffer(make([]byte, 64<<10), maxLogBytesPerPod)
	for sc.Scan() {
		line := sc.Text()
		ts, content, _ := strings.Cut(line, " ")
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t, content = s.c.Now(), line
		}
		if !q.keep(content) {
			continue
		}
		if !s.send(ctx, entries, LogEntry{Content: content, PodName: pod.GetName()}, t) {
			return
		}
	}
}

func (s *Server) send(ctx context.Context, entries chan<- LogEntry, e LogEntry, t time.Time) bool {
	e.TimeStamp, e.TimeStampStr = metav1.NewTime(t), t.UTC().Format(time.RFC3339Nano)
	select {
	case entries <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// keep is Argo CD's filter: a substring, or with a leading "!" its absence.
func (q logQuery) keep(line string) bool {
	f, negate := q.filter, false
	if strings.HasPrefix(f, "!") {
		f, negate = f[1:], true
	}
	if f == "" {
		return true
	}
	hay := line
	if !q.matchCase {
		hay, f = strings.ToLower(hay), strings.ToLower(f)
	}
	return strings.Contains(hay, f) != negate
}

func ptrInt64(n int64) *int64 { return &n }

// logWriter writes the gateway's stream envelope {"result":...}: server-sent event frames
// when the client asked for them, else newline-delimited JSON; never gzipped.
type logWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	sse     bool
	timeout time.Duration
	started bool
}

func newLogWriter(w http.ResponseWriter, r *http.Request, timeout time.Duration) *logWriter {
	return &logWriter{w: w, rc: http.NewResponseController(w), sse: strings.Contains(r.Header.Get("Accept"), "text/event-stream"), timeout: timeout}
}

func (l *logWriter) write(e LogEntry) error {
	if !l.started {
		l.started = true
		h := l.w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if l.sse {
			h.Set("Content-Type", "text/event-stream")
		} else {
			h.Set("Content-Type", "application/json")
		}
		_ = l.rc.SetReadDeadline(time.Time{})
	}
	b, err := json.Marshal(map[string]any{"result": e})
	if err != nil {
		return err
	}
	_ = l.rc.SetWriteDeadline(time.Now().Add(l.timeout))
	if l.sse {
		_, err = fmt.Fprintf(l.w, "data: %s \n\n\n", b)
	} else {
		_, err = fmt.Fprintf(l.w, "%s\n", b)
	}
	if err != nil {
		return err
	}
	return l.rc.Flush()
}
