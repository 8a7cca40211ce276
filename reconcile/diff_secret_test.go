package reconcile_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

// TestDiffNeverPrintsSecretValues: on the real apiserver, a Secret that kubectl
// client-side applied carries its data again in last-applied-configuration; the diff of
// a change to it shows neither the old nor the new value, anywhere.
func TestDiffNeverPrintsSecretValues(t *testing.T) {
	const old, next = "b2xkLXBhc3N3b3JkLTQx", "bmV3LXBhc3N3b3JkLTQy" // base64 of the values
	cfg := testbed.APIServer(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", Annotations: map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Secret","data":{"password":"` + old + `"},"metadata":{"name":"db","namespace":"default"}}`,
	}}, Data: map[string][]byte{"password": []byte("old-password-41")}}
	if err := c.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "default"},
		"data":     map[string]any{"password": next},
	}}
	d := &render.Differ{Client: c, Renderer: render.Renderer{Registry: kinds.Builtin(), APIGroup: kinds.DefaultAPIGroup}}
	rs := d.Diff(ctx, []source.Object{{File: "secret.yaml", Doc: 1, Obj: desired}})
	if len(rs) != 1 || rs[0].Err != nil || rs[0].Action != apply.Updated {
		t.Fatalf("diff: %+v", rs)
	}
	t.Logf("diff:\n%s", rs[0].Diff)
	for _, v := range []string{old, next, "old-password-41", "new-password-42"} {
		if strings.Contains(rs[0].Diff, v) {
			t.Errorf("the diff prints a Secret value (%s)", v)
		}
	}
}
