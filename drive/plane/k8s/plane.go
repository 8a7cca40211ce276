// Package k8s is the /v1/k8s cluster plane: the 36 operations of package ops over the
// registered clusters, each one handler, served as HTTP (OIDC, the org from the validated
// token), on a 0600 unix socket, in a generated OpenAPI 3 document, as MCP tools and as
// `operator k8s <group> <op>`. Every op reaches its cluster through Fleet (reconcile/fleet's
// Reach and Bound, wired in cmd/operator), so a name outside the caller's org is "no such
// cluster" and a namespace outside a registration's bound is refused, never narrowed.
package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// Fleet is what the plane needs of reconcile/fleet, for the org of a validated caller
// (never an argument a request can set): the org's registrations, registration, and Reach.
type Fleet interface {
	List(ctx context.Context, org string) ([]ops.Cluster, error)
	Get(ctx context.Context, org, name string) (ops.Cluster, error)
	Register(ctx context.Context, org string, req ops.ClustersRegisterRequest) (ops.Cluster, error)
	Deregister(ctx context.Context, org, name string) error
	Reach(ctx context.Context, org, name string) (Bound, error)
	// Refusal classifies an error of the fleet or of a Bound's clients: CodeNotFound for
	// "no such cluster", CodeOutOfBound for a namespace outside the bound, CodeForbidden for
	// a registration without a credential, "" otherwise.
	Refusal(err error) string
}

// Bound is one registered cluster behind its namespace gate (reconcile/fleet.Bound).
type Bound interface {
	Cluster() ops.Cluster
	Bounded() bool
	// Admits refuses a namespace outside the bound.
	Admits(ns string) error
	// One is a client limited to namespace ns.
	One(ns string) (client.Client, error)
	// Whole refuses a bounded registration; else the cluster's clients.
	Whole() (client.Client, error)
	// Typed and Dynamic are transport-gated: outside the bound nothing leaves.
	Typed() kubernetes.Interface
	Dynamic() dynamic.Interface
	// Status probes /version.
	Status() (string, error)
}

// Error codes (ops.Error.Code).
const (
	CodeBadRequest      = "BadRequest"
	CodeUnauthenticated = "Unauthenticated"
	CodeNotFound        = "NotFound"
	CodeOutOfBound      = "OutOfBound"
	CodeForbidden       = "Forbidden"
	CodeConflict        = "Conflict"
	CodeTooLarge        = "TooLarge"
	CodeRateLimited     = "RateLimited"
	CodeTimeout         = "Timeout"
	CodeFailed          = "Failed"
)

// Error is a refusal or failure of an op, with its code.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func badf(format string, args ...any) *Error { return errorf(CodeBadRequest, format, args...) }

// Status is the HTTP status of a code.
func Status(code string) int {
	switch code {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeUnauthenticated:
		return http.StatusUnauthorized
	case CodeNotFound:
		return http.StatusNotFound
	case CodeOutOfBound, CodeForbidden:
		return http.StatusForbidden
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// Caller is who asks: the validated token's subject and org.
type Caller struct {
	Subject string
	Name    string
	Org     string
}

// Options are the plane's switches and limits.
type Options struct {
	// AllowNamespaceDelete turns namespaces.delete on; it is off by default, the one op
	// gated apart (it deletes every object of the namespace, claims included).
	AllowNamespaceDelete bool
	// MaxBodyBytes bounds a request body (kubeconfigs, objects); OpTimeout bounds one op
	// (a watch: its wait and 10 s more); Rate and Burst bound each identity's ops.
	MaxBodyBytes int64
	OpTimeout    time.Duration
	Rate         float64
	Burst        int
	// MaxReplicas bounds workloads.scale.
	MaxReplicas int32
}

// DefaultOptions are the defaults.
func DefaultOptions() Options {
	return Options{MaxBodyBytes: 1 << 20, OpTimeout: 30 * time.Second, Rate: 10, Burst: 20, MaxReplicas: 1000}
}

// Plane holds the registry of handlers; every face calls Call.
type Plane struct {
	fleet    Fleet
	opts     Options
	kinds    []ops.Kind
	audit    Auditor
	limits   *limits
	handlers map[string]handler
	now      func() time.Time
}

// Config builds a Plane.
type Config struct {
	Fleet Fleet
	// APIGroup is the operator's API group: the universe Kinds (KMSSecret among them) join
	// resources.*'s closed set at it. Empty: the core kinds only.
	APIGroup string
	Options  Options
	// Audit records every mutating op (an Event and a metric); nil records the metric only.
	Audit Auditor
	Now   func() time.Time
}

// New returns the plane.
func New(c Config) (*Plane, error) {
	if c.Fleet == nil {
		return nil, errors.New("k8s plane: no fleet")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	d := DefaultOptions()
	o := c.Options
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = d.OpTimeout
	}
	if o.Rate <= 0 {
		o.Rate, o.Burst = d.Rate, d.Burst
	}
	if o.MaxReplicas <= 0 {
		o.MaxReplicas = d.MaxReplicas
	}
	kinds, err := ClosedKinds(c.APIGroup)
	if err != nil {
		return nil, err
	}
	p := &Plane{fleet: c.Fleet, opts: o, kinds: kinds, audit: c.Audit, now: c.Now,
		limits: newLimits(o.Rate, o.Burst, c.Now)}
	p.handlers = handlers()
	for _, op := range ops.All {
		if _, ok := p.handlers[op.Name]; !ok {
			return nil, fmt.Errorf("k8s plane: op %s has no handler", op.Name)
		}
	}
	if len(p.handlers) != len(ops.All) {
		return nil, errors.New("k8s plane: a handler of no op")
	}
	return p, nil
}

// handler runs one op on a decoded request.
type handler struct {
	decode func(raw []byte) (any, error)
	run    func(ctx context.Context, p *Plane, c Caller, req any) (any, error)
}

// handle makes the handler of an op from its typed function.
func handle[Req, Rep any](f func(ctx context.Context, p *Plane, c Caller, req Req) (Rep, error)) handler {
	return handler{
		decode: func(raw []byte) (any, error) {
			var req Req
			if len(bytes.TrimSpace(raw)) == 0 {
				raw = []byte("{}")
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				return nil, badf("request: %v", err)
			}
			if dec.More() {
				return nil, badf("request: one JSON object, not several")
			}
			return req, nil
		},
		run: func(ctx context.Context, p *Plane, c Caller, req any) (any, error) {
			return f(ctx, p, c, req.(Req))
		},
	}
}

// target is the cluster and namespace a request names, for the audit record.
type target struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Claim     string `json:"claim"`
	Job       string `json:"job"`
	CronJob   string `json:"cronJob"`
}

func (t target) object() string {
	for _, s := range []string{t.Name, t.Node, t.Claim, t.Job, t.CronJob} {
		if s != "" {
			if t.Kind != "" {
				return t.Kind + "/" + s
			}
			return s
		}
	}
	return ""
}

// Call runs op name for caller c on the JSON request raw: the one path of every face. The
// reply is the op's typed reply; a refusal or failure is an *Error.
func (p *Plane) Call(ctx context.Context, c Caller, name string, raw []byte) (any, error) {
	op, ok := ops.Lookup(name)
	if !ok {
		return nil, errorf(CodeNotFound, "no op %q", name)
	}
	if c.Org == "" {
		return nil, errorf(CodeForbidden, "the token names no org: every op acts for one")
	}
	if int64(len(raw)) > p.opts.MaxBodyBytes {
		return nil, errorf(CodeTooLarge, "request of %d bytes, at most %d", len(raw), p.opts.MaxBodyBytes)
	}
	if wait, ok := p.limits.allow("sub:" + c.Subject); !ok {
		limited.WithLabelValues("rate").Inc()
		return nil, errorf(CodeRateLimited, "more than %g ops per second of %s: retry in %s", p.opts.Rate, c.Subject, wait.Round(time.Second))
	}
	h := p.handlers[name]
	req, err := h.decode(raw)
	if err != nil {
		return nil, p.finish(ctx, op, c, raw, err)
	}
	timeout := p.opts.OpTimeout
	if w, ok := req.(ops.ResourcesWatchRequest); ok {
		timeout = time.Duration(watchWait(w.WaitSeconds))*time.Second + 10*time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rep, err := h.run(ctx, p, c, req)
	if err != nil && ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = errorf(CodeTimeout, "%s took more than %s", name, timeout)
	}
	return rep, p.finish(ctx, op, c, raw, err)
}

// finish classifies err and records the op (mutating ops: an Event and a metric).
func (p *Plane) finish(ctx context.Context, op ops.Op, c Caller, raw []byte, err error) error {
	err = p.classify(err)
	outcome := "ok"
	var e *Error
	if errors.As(err, &e) {
		outcome = e.Code
	}
	operations.WithLabelValues(op.Name, outcome).Inc()
	if op.Mutating && p.audit != nil {
		var t target
		_ = json.Unmarshal(raw, &t)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		p.audit.Record(context.WithoutCancel(ctx), Record{Op: op.Name, Subject: c.Subject, Who: c.Name, Org: c.Org,
			Cluster: t.Cluster, Namespace: t.Namespace, Object: t.object(), Outcome: outcome, Message: msg})
	}
	if err != nil {
		return err
	}
	return nil
}

// classify turns any error into an *Error with its code.
func (p *Plane) classify(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if code := p.fleet.Refusal(err); code != "" {
		return errorf(code, "%v", err)
	}
	switch {
	case apierrors.IsNotFound(err):
		return errorf(CodeNotFound, "%v", err)
	case apierrors.IsForbidden(err):
		return errorf(CodeForbidden, "%v", err)
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return errorf(CodeConflict, "%v", err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return errorf(CodeBadRequest, "%v", err)
	case apierrors.IsTooManyRequests(err):
		return errorf(CodeRateLimited, "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(CodeTimeout, "%v", err)
	}
	return errorf(CodeFailed, "%v", err)
}

// reach returns the bound of cluster for c, with ns admitted (ns "" for home and
// whole-cluster ops).
func (p *Plane) reach(ctx context.Context, c Caller, cluster, ns string) (Bound, error) {
	if cluster == "" {
		return nil, badf("cluster is required")
	}
	b, err := p.fleet.Reach(ctx, c.Org, cluster)
	if err != nil {
		return nil, err
	}
	if ns != "" {
		if err := b.Admits(ns); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// namespaced reaches cluster with namespace ns, which is required.
func (p *Plane) namespaced(ctx context.Context, c Caller, cluster, ns string) (Bound, error) {
	if ns == "" {
		return nil, badf("namespace is required")
	}
	return p.reach(ctx, c, cluster, ns)
}

// whole reaches cluster for a cluster-wide op: a bounded registration refuses it.
func (p *Plane) whole(ctx context.Context, c Caller, cluster string) (Bound, client.Client, error) {
	b, err := p.reach(ctx, c, cluster, "")
	if err != nil {
		return nil, nil, err
	}
	cl, err := b.Whole()
	if err != nil {
		return nil, nil, err
	}
	return b, cl, nil
}

func required(pairs ...string) error {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			missing = append(missing, pairs[i])
		}
	}
	if len(missing) > 0 {
		return badf("%s required", strings.Join(missing, ", "))
	}
	return nil
}
