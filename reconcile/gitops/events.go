package gitops

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openuniverse/operator/kinds/condition"
	"github.com/openuniverse/operator/reconcile/apply"
)

// Event reasons the sweep records on the objects it applies (declared with the others in
// reconcile/names.go).
const (
	EventDriftReverted = apply.EventDriftReverted // Warning: someone else had changed the object
	EventApplyFailed   = apply.EventApplyFailed   // Warning: the apiserver refused the object
	EventOrphaned      = condition.EventOrphaned  // Warning: applied from git, no longer declared there (never pruned)
)

// emitEvents records a Kubernetes Event on each object whose drift the sweep reverted,
// naming who had drifted it, and on each object it could not apply — what `kubectl
// describe` and `kubectl get events` show next to the object. In-sync and created objects
// get none, so an idle sweep still costs nothing. A refusal's message is the apiserver's
// with every quoted value masked (apply.PublicMessage), never a Secret's value echoed back.
// A nil Recorder records nothing.
func (s *Sweeper) emitEvents(r *Report) {
	if s.Recorder == nil {
		return
	}
	for _, e := range r.newlyOrphaned {
		m, err := s.mapper.RESTMapping(e.key().GroupKind)
		if err != nil {
			continue // no API serves the kind any more: nothing to record the Event on
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(m.GroupVersionKind)
		obj.SetNamespace(e.Namespace)
		obj.SetName(e.Name)
		obj.SetUID(types.UID(e.UID))
		s.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventOrphaned, apply.ActionApply,
			"no longer declared in git since revision %s (was in %s); never pruned: operator orphans --delete deletes it on request", short(e.RemovedIn), e.File)
	}
	items := make(map[apply.ObjRef]*item, len(s.items))
	for _, it := range s.items {
		items[apply.RefOf(it.Object)] = it
	}
	for _, res := range r.Results {
		it, ok := items[res.Object]
		if !ok {
			continue
		}
		obj := it.Object
		// The uid lets kubectl describe find the event. A kind no API serves has no
		// mapping, no watch and no live object.
		if it.mapping != nil {
			if live, _ := s.tracker.live(s.watchKey(it), it.key.Namespace, it.key.Name); live != nil {
				obj = obj.DeepCopy()
				obj.SetUID(live.GetUID())
			}
		}
		switch {
		case res.Action == apply.Updated && len(res.DriftedBy) > 0:
			s.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventDriftReverted, apply.ActionApply,
				"reverted to git revision %s (changed by %s)", short(r.Revision), strings.Join(res.DriftedBy, ", "))
		case res.Action == apply.Denied: // the grant it lacks, the sweep's own words
			s.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventApplyFailed, apply.ActionApply,
				"git revision %s not applied: %s", short(r.Revision), res.Message)
		case res.Action == apply.Failed: // the apiserver's words masked, as GET /gitops has them
			s.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventApplyFailed, apply.ActionApply,
				"git revision %s not applied: %s", short(r.Revision), apply.PublicMessage(res.Err, res.Message))
		}
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
