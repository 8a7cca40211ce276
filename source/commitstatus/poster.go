package commitstatus

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// maxCommits is how many commits (per context) the poster remembers the last status of.
const maxCommits = 256

// Prometheus collectors; cmd/operator registers them (Metrics).
var metricStatuses = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "universe_operator_commit_status_total",
	Help: "Commit statuses by outcome: posted, failed (the host refused or did not answer), dropped (the full queue dropped the oldest), duplicate (equal to the last one enqueued for its commit, not posted) or invalid (no commit SHA).",
}, []string{"result"})

// Metrics returns the package's collectors, for registration by the caller.
func Metrics() []prometheus.Collector { return []prometheus.Collector{metricStatuses} }

type key struct {
	state       State
	description string
}

// Poster posts statuses asynchronously (see the package doc). Enqueue is safe for
// concurrent use; Run is the one goroutine that posts.
type Poster struct {
	prov Provider
	now  func() time.Time
	lim  *rate.Limiter
	max  int
	wake chan struct{}

	mu    sync.Mutex
	queue []Status
	// want is the last status enqueued for each commit and context (slot; forgotten when its
	// post fails or is dropped, so the next sweep's equal status is posted); commits lists
	// want's keys, oldest first.
	want    map[string]key
	commits []string
	failing bool
}

// NewPoster returns a poster through prov, paced by o.PerMinute (bursts of o.Burst) and
// queueing at most o.Queue statuses; zero values take DefaultOptions'. now is the clock of
// the token bucket (time.Now outside tests).
func NewPoster(prov Provider, o Options, now func() time.Time) *Poster {
	d := DefaultOptions()
	if o.PerMinute < 1 {
		o.PerMinute = d.PerMinute
	}
	if o.Burst < 1 {
		o.Burst = d.Burst
	}
	if o.Queue < 1 {
		o.Queue = d.Queue
	}
	return &Poster{
		prov: prov, now: now, max: o.Queue, wake: make(chan struct{}, 1),
		lim:  rate.NewLimiter(rate.Limit(float64(o.PerMinute)/60), o.Burst),
		want: map[string]key{},
	}
}

// Enqueue queues st unless it equals the last status enqueued for its commit in its context,
// and returns whether it did. It never blocks: when the queue is full its oldest status is dropped.
func (p *Poster) Enqueue(st Status) bool {
	st.Description = Clip(st.Description)
	if !shaRE.MatchString(st.SHA) {
		metricStatuses.WithLabelValues("invalid").Inc()
		return false
	}
	k := key{st.State, st.Description}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.want[st.slot()]; ok && w == k {
		metricStatuses.WithLabelValues("duplicate").Inc()
		return false
	}
	p.remember(st.slot(), k)
	if len(p.queue) >= p.max {
		p.forget(p.queue[0])
		p.queue = p.queue[1:]
		metricStatuses.WithLabelValues("dropped").Inc()
	}
	p.queue = append(p.queue, st)
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// slot is what a status replaces on the host: its commit's status of its context.
func (st Status) slot() string { return st.SHA + " " + st.Context }

// remember records k as the last status of slot; the oldest is forgotten beyond
// maxCommits. Call with mu held.
func (p *Poster) remember(slot string, k key) {
	if _, ok := p.want[slot]; !ok {
		p.commits = append(p.commits, slot)
		if len(p.commits) > maxCommits {
			delete(p.want, p.commits[0])
			p.commits = p.commits[1:]
		}
	}
	p.want[slot] = k
}

// forget drops st as its commit's last status, if it still is, so an equal one is posted
// again. Call with mu held.
func (p *Poster) forget(st Status) {
	if p.want[st.slot()] == (key{st.State, st.Description}) {
		delete(p.want, st.slot())
	}
}

// next takes the oldest queued status if the token bucket has a token at now; else it says
// how long until it will (0 with nothing queued).
func (p *Poster) next(now time.Time) (Status, time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return Status{}, 0, false
	}
	r := p.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Status{}, d, false
	}
	st := p.queue[0]
	p.queue = p.queue[1:]
	return st, 0, true
}

// In is p posting under context (Status.Context): a fleet cluster sweep's statuses, through
// p's one queue and token bucket (one repository, however many clusters).
func (p *Poster) In(context string) Contexted { return Contexted{p: p, context: context} }

// Contexted enqueues on a Poster under one context (Poster.In).
type Contexted struct {
	p       *Poster
	context string
}

// Enqueue is Poster.Enqueue of st under the context.
func (c Contexted) Enqueue(st Status) bool {
	st.Context = c.context
	return c.p.Enqueue(st)
}

// Pending returns how many statuses wait.
func (p *Poster) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// Run posts queued statuses until ctx is done. A failed post is logged when posting starts
// failing (then at debug level until one succeeds again); its status is not retried, but
// the next sweep enqueues it again.
func (p *Poster) Run(ctx context.Context, log logr.Logger) {
	for {
		st, wait, ok := p.next(p.now())
		switch {
		case ok:
			p.done(log, st, p.prov.Post(ctx, st))
			continue
		case wait > 0:
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		default:
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
			}
		}
	}
}

// done records the outcome of posting st.
func (p *Poster) done(log logr.Logger, st Status, err error) {
	p.mu.Lock()
	was := p.failing
	p.failing = err != nil
	if err != nil {
		p.forget(st)
	}
	p.mu.Unlock()
	kv := []any{"commit", st.SHA, "state", st.State}
	switch {
	case err != nil:
		metricStatuses.WithLabelValues("failed").Inc()
		if !was {
			log.Error(err, "Posting commit status failed; later failures are logged at debug level until one succeeds", kv...)
		} else {
			log.V(1).Info("Posting commit status failed", append(kv, "error", err.Error())...)
		}
	default:
		metricStatuses.WithLabelValues("posted").Inc()
		if was {
			log.Info("Posting commit statuses again", kv...)
		}
		log.V(1).Info("Posted commit status", append(kv, "description", st.Description)...)
	}
}
