package gitops

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openuniverse/operator/reconcile/apply"
)

// TestPublicErrorFromTheAPIServer: a Deployment with a negative replica count,
// refused by the real apiserver's validation, reaches GET /gitops with the
// field path and the apiserver's words, not a bare status code.
func TestPublicErrorFromTheAPIServer(t *testing.T) {
	const ns = "public-error"
	src := newMemSource(map[string][]byte{
		"ns.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"deploy.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad, namespace: " + ns + "}\n" +
			"spec:\n  replicas: -1\n  selector: {matchLabels: {app: bad}}\n  template:\n    metadata: {labels: {app: bad}}\n" +
			"    spec: {containers: [{name: c, image: registry.example/c:1}]}\n"),
	})
	sw, _, _ := newTestSweeper(t, src, ns)
	r := sw.Sweep(context.Background())
	pub := r.Public()
	i := slices.IndexFunc(pub.Results, func(res apply.Result) bool { return res.Object.Kind == "Deployment" })
	if i < 0 || pub.Results[i].Action != apply.Failed {
		t.Fatalf("results %+v, want the Deployment failed", pub.Results)
	}
	msg := pub.Results[i].Message
	for _, w := range []string{"deploy.yaml: ", "spec.replicas", "greater than or equal to 0"} {
		if !strings.Contains(msg, w) {
			t.Errorf("GET /gitops message %q lacks %q", msg, w)
		}
	}
}
