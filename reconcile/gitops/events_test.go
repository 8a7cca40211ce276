package gitops

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/events"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source/alert"
)

// TestEventForAKindNoAPIServes: an object whose kind no API serves fails by name and gets
// its ApplyFailed Event; the sweep (which looked up a watch for it, and crashed the
// operator, before) goes on, and the good object of the same revision is applied.
func TestEventForAKindNoAPIServes(t *testing.T) {
	const ns = "events-nokind"
	src := newMemSource(map[string][]byte{
		"ns.yaml":    []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"gizmo.yaml": []byte("apiVersion: nothing.example/v1\nkind: Gizmo\nmetadata: {name: g, namespace: " + ns + "}\n"),
		"cm.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: " + ns + "}\n"),
	})
	sw, _, _ := newTestSweeper(t, src, ns)
	rec := events.NewFakeRecorder(10)
	sw.Recorder = rec
	hook := &alertLog{}
	sw.Alerts = hook
	for i := range 2 { // the second sweep retries the unknown kind
		r := sw.Sweep(context.Background())
		if r.Error != "" || r.Summary.Errors != 1 || r.Summary.Created+r.Summary.InSync != 2 {
			t.Fatalf("sweep %d: %s %+v, want the Gizmo failed and the rest applied", i, r.Error, r.Summary)
		}
		if pub := r.Public(); !slices.ContainsFunc(pub.Results, func(res apply.Result) bool {
			return res.Object.Kind == "Gizmo" && strings.HasPrefix(res.Message, "gizmo.yaml: no API serves")
		}) {
			t.Errorf("sweep %d: GET /gitops results %+v, want the Gizmo failed by file", i, pub.Results)
		}
		select {
		case e := <-rec.Events:
			if !strings.Contains(e, EventApplyFailed) || !strings.Contains(e, "no API serves") {
				t.Errorf("sweep %d: event %q", i, e)
			}
		default:
			t.Errorf("sweep %d: no %s event for the Gizmo", i, EventApplyFailed)
		}
	}
	// the same transitions reach the alert hook: one SweepFailed for two failing sweeps
	if len(hook.got) != 1 || hook.got[0].Kind != alert.SweepFailed || !strings.Contains(strings.Join(hook.got[0].Details, "\n"), "gizmo.yaml: no API serves") {
		t.Errorf("alerts %+v, want one SweepFailed naming gizmo.yaml", hook.got)
	}
}

// TestEventRefusalMasked: the ApplyFailed Event of an object the real apiserver refuses
// carries the apiserver's words with the field path, the value it echoed masked, as GET
// /gitops has them (before, the Event printed the raw error).
func TestEventRefusalMasked(t *testing.T) {
	const ns, planted = "events-masked", "planted-hunter2-value"
	src := newMemSource(map[string][]byte{
		"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"deploy.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: leaky, namespace: " + ns + "}\n" +
			"spec:\n  selector: {matchLabels: {app: leaky}}\n  template:\n    metadata: {labels: {app: leaky}}\n" +
			"    spec: {containers: [{name: c, image: registry.example/c:1, env: [{name: \"TOKEN=" + planted + "\", value: x}]}]}\n"),
	})
	sw, _, _ := newTestSweeper(t, src, ns)
	rec := events.NewFakeRecorder(10)
	sw.Recorder = rec
	r := sw.Sweep(context.Background())
	if r.Summary.Errors != 1 {
		t.Fatalf("summary %+v, want the Deployment failed", r.Summary)
	}
	select {
	case e := <-rec.Events:
		for _, w := range []string{EventApplyFailed, "the apiserver refused the apply: 422 Invalid", "env[0].name", "Invalid value"} {
			if !strings.Contains(e, w) {
				t.Errorf("event %q lacks %q", e, w)
			}
		}
		if strings.Contains(e, planted) {
			t.Errorf("event %q carries the value the apiserver echoed", e)
		}
	default:
		t.Fatalf("no %s event for the Deployment", EventApplyFailed)
	}
}

// alertLog is an alert.Hook that keeps what it gets.
type alertLog struct{ got []alert.Event }

func (l *alertLog) Alert(e alert.Event) { l.got = append(l.got, e) }
