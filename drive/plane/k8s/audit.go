package k8s

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_k8s_plane_operations_total",
		Help: "Operations of the /v1/k8s cluster plane, per op and outcome (ok or the error code).",
	}, []string{"op", "outcome"})
	limited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "universe_k8s_plane_limited_total",
		Help: "Operations refused by a plane limit (rate: per identity).",
	}, []string{"limit"})
)

// Metrics are the plane's collectors, registered once by cmd/operator's registerMetrics.
func Metrics() []prometheus.Collector { return []prometheus.Collector{operations, limited} }

// Record is one mutating op: who (token subject and name), which org, which cluster, what.
type Record struct {
	Op, Subject, Who, Org, Cluster, Namespace, Object, Outcome, Message string
}

func (r Record) String() string {
	where := r.Cluster
	if r.Namespace != "" {
		where += "/" + r.Namespace
	}
	s := fmt.Sprintf("%s by %s (%s) of org %s on cluster %s", r.Op, r.Who, r.Subject, r.Org, where)
	if r.Object != "" {
		s += ": " + r.Object
	}
	s += ": " + r.Outcome
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

// Auditor records a mutating op.
type Auditor interface {
	Record(ctx context.Context, r Record)
}

// EventAuditor writes each record as an Event of the home cluster about the Cluster
// registration (ClusterAPIVersion Cluster/<name>), in Namespace (the operator's), and logs
// a failure to write one.
type EventAuditor struct {
	Client            client.Client
	Namespace         string
	ClusterAPIVersion string
	Log               logr.Logger
	Now               func() metav1.Time
}

// Record writes the Event.
func (a EventAuditor) Record(ctx context.Context, r Record) {
	now := metav1.Now()
	if a.Now != nil {
		now = a.Now()
	}
	typ, reason := corev1.EventTypeNormal, "Operation"
	if r.Outcome != "ok" {
		typ, reason = corev1.EventTypeWarning, "OperationRefused"
	}
	msg := r.String()
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "k8s-plane.", Namespace: a.Namespace,
			Labels: map[string]string{"k8s-plane.openuniverse.dev/op": labelValue(r.Op), "k8s-plane.openuniverse.dev/org": labelValue(r.Org)}},
		InvolvedObject: corev1.ObjectReference{APIVersion: a.ClusterAPIVersion, Kind: "Cluster", Name: r.Cluster},
		Reason:         reason, Message: msg, Type: typ, Action: r.Op,
		Source:         corev1.EventSource{Component: "universe-operator-k8s-plane"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if err := a.Client.Create(ctx, ev); err != nil {
		a.Log.Error(err, "write the audit Event", "op", r.Op, "org", r.Org, "cluster", r.Cluster)
	}
}

// labelValue is s as a label value (ops are group.member, orgs valid: both fit; anything
// else is cut).
func labelValue(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}
