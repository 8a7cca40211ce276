package deploy

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type planeMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	streams  prometheus.Gauge
	dropped  prometheus.Counter
	limited  *prometheus.CounterVec
}

func newPlaneMetrics(reg prometheus.Registerer) *planeMetrics {
	m := &planeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "universe_deploy_plane_requests_total",
			Help: "Requests to the /v1/deploy plane, per route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "universe_deploy_plane_request_duration_seconds",
			Help:    "Time to answer a /v1/deploy request (streams: until the stream ends), per route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "universe_deploy_plane_streams",
			Help: "Open server-sent-event streams.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "universe_deploy_plane_stream_clients_dropped_total",
			Help: "Stream clients disconnected because they fell further behind than their buffer.",
		}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "universe_deploy_plane_limited_total",
			Help: "Requests answered 429 by a plane limit: stream (per identity or total), diff (live diffs per identity).",
		}, []string{"limit"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.duration, m.streams, m.dropped, m.limited} {
			if err := reg.Register(c); err != nil {
				if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
					switch c {
					case m.requests:
						m.requests = are.ExistingCollector.(*prometheus.CounterVec)
					case m.duration:
						m.duration = are.ExistingCollector.(*prometheus.HistogramVec)
					case m.streams:
						m.streams = are.ExistingCollector.(prometheus.Gauge)
					case m.dropped:
						m.dropped = are.ExistingCollector.(prometheus.Counter)
					case m.limited:
						m.limited = are.ExistingCollector.(*prometheus.CounterVec)
					}
				}
			}
		}
	}
	return m
}

// statusWriter records the status code and passes Flush through (the streams need it).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times every request by its route pattern (never by raw path, so
// application names do not become label values).
func (s *Server) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		route := r.Pattern
		s.metrics.requests.WithLabelValues(route, r.Method, strconv.Itoa(sw.code)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}
