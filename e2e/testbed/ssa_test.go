package testbed_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

const workload = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0.0
        ports:
        - containerPort: 8080
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// TestSSAApplyAllDetectsDrift proves on a real apiserver what a fake client cannot show:
// fluxcd/pkg/ssa reports created, then unchanged, then configured after another field
// manager edited a field we own.
func TestSSAApplyAllDetectsDrift(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: "universe-operator", Group: "openuniverse.dev"})
	objs := func() []*unstructured.Unstructured {
		o, err := ssautil.ReadObjects(strings.NewReader(workload))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	actions := func(cs *ssa.ChangeSet) map[string]ssa.Action {
		m := map[string]ssa.Action{}
		for _, e := range cs.Entries {
			m[e.ObjMetadata.GroupKind.Kind] = e.Action
		}
		return m
	}
	passes := []struct {
		name  string
		edit  func()
		wants map[string]ssa.Action
	}{
		{name: "first apply creates", wants: map[string]ssa.Action{"Deployment": ssa.CreatedAction, "Service": ssa.CreatedAction}},
		{name: "second apply is a no-op", wants: map[string]ssa.Action{"Deployment": ssa.UnchangedAction, "Service": ssa.UnchangedAction}},
		{
			name: "out-of-band edit is reverted",
			edit: func() {
				patch := []byte(`{"spec":{"replicas":5}}`)
				d := &unstructured.Unstructured{}
				d.SetAPIVersion("apps/v1")
				d.SetKind("Deployment")
				d.SetNamespace("default")
				d.SetName("web")
				if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-edit")); err != nil {
					t.Fatal(err)
				}
			},
			wants: map[string]ssa.Action{"Deployment": ssa.ConfiguredAction, "Service": ssa.UnchangedAction},
		},
	}
	for _, p := range passes {
		if p.edit != nil {
			p.edit()
		}
		cs, err := rm.ApplyAll(ctx, objs(), ssa.DefaultApplyOptions())
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		got := actions(cs)
		for kind, want := range p.wants {
			if got[kind] != want {
				t.Errorf("%s: %s action = %q, want %q", p.name, kind, got[kind], want)
			}
		}
	}
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas after the corrective apply = %d, want 2", r)
	}
}
