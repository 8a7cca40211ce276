package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

// TestReviewPathsReadInputs puts the luxfi mainnet LuxNetwork and a LuxChain naming it on the
// real apiserver, lets the Kind controller apply the network, and then reads the network back
// through each review path: render --from-cluster (Renderer.RenderFromCluster), the deploy
// plane's live diff (Differ.DiffFromCluster) and diff --takeover (Differ.Takeover). Each must
// build the network with its LuxChain, as the controller did: the from-cluster render equals
// the applied objects (a server-side dry-run under the controller's manager changes nothing)
// and the render of the same files byte for byte; the live diff and the takeover find every
// child in sync, the chain's ConfigMap among them. Without the chain the StatefulSet loses
// the chain's config and alias and the ConfigMap luxd-chain-spc2 is not built at all.
func TestReviewPathsReadInputs(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	installLuxNetworkCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "review-inputs"
	if err := c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns}}}); err != nil {
		t.Fatal(err)
	}
	var files []source.Object
	var crs []*unstructured.Unstructured
	for _, o := range append(readFleet(t, ""), readFleet(t, "later")...) {
		if o.Obj.GetKind() != "LuxNetwork" && o.Obj.GetKind() != "LuxChain" {
			continue
		}
		o.Obj = o.Obj.DeepCopy()
		o.Obj.SetNamespace(ns)
		files = append(files, o)
		crs = append(crs, o.Obj)
	}
	if len(crs) != 2 {
		t.Fatalf("want the mainnet LuxNetwork and LuxChain spc2, got %d CRs", len(crs))
	}
	for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, crs) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	startKinds(t, cfg)

	get := func(gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	gvkNetwork := schema.GroupVersionKind{Group: "lux.network", Version: "v1alpha1", Kind: "LuxNetwork"}
	poll(ctx, t, "the controller applies the network with its chain", func() (bool, string) {
		if _, err := get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "luxd-chain-spc2"); err != nil {
			return false, err.Error()
		}
		sts, err := get(gvkStatefulSet, "luxd")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(fmt.Sprint(sts.Object["spec"]), "luxd-chain-spc2"), "no luxd-chain-spc2 in the pod template yet"
	})
	live, err := get(gvkNetwork, "luxd")
	if err != nil {
		t.Fatal(err)
	}
	renderer := render.Renderer{Registry: kinds.Builtin(), APIGroup: group}
	d := &render.Differ{Client: c, Renderer: renderer}
	const chainCM = "ConfigMap " + ns + "/luxd-chain-spc2"

	t.Run("render --from-cluster is what the controller applied", func(t *testing.T) {
		rd := renderer.RenderFromCluster(ctx, c, source.Object{Obj: live, File: "cluster"})
		if rd.Err != nil || rd.Halt != nil {
			t.Fatalf("render from the cluster: %v %v", rd.Err, rd.Halt)
		}
		names := map[string]bool{}
		for _, obj := range rd.Objects {
			names[obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName()] = true
			applied, err := get(obj.GroupVersionKind(), obj.GetName())
			if err != nil {
				t.Errorf("rendered %s was not applied: %v", apply.RefOf(obj), err)
				continue
			}
			dry := obj.DeepCopy()
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry), client.FieldOwner(kinds.ManagerKinds), client.ForceOwnership, client.DryRunAll); err != nil {
				t.Errorf("dry-run %s: %v", apply.RefOf(obj), err)
				continue
			}
			strip := func(u *unstructured.Unstructured) map[string]any {
				m := u.DeepCopy().Object
				unstructured.RemoveNestedField(m, "metadata", "managedFields")
				unstructured.RemoveNestedField(m, "metadata", "resourceVersion")
				unstructured.RemoveNestedField(m, "status")
				return m
			}
			if diff := cmp.Diff(strip(applied), strip(dry)); diff != "" {
				t.Errorf("applying the from-cluster render of %s would change it (-applied +rendered):\n%s", apply.RefOf(obj), diff)
			}
		}
		if !names[chainCM] {
			t.Errorf("the from-cluster render has no %s (built without its LuxChain): %v", chainCM, names)
		}
		// byte for byte the render of the same files (the CR with its live uid)
		withUID := make([]source.Object, len(files))
		for i, o := range files {
			o.Obj = o.Obj.DeepCopy()
			if o.Obj.GetKind() == "LuxNetwork" {
				o.Obj.SetUID(live.GetUID())
			}
			withUID[i] = o
		}
		var fromFiles, fromCluster bytes.Buffer
		for _, r := range renderer.Render(withUID) {
			if r.From.Obj.GetKind() == "LuxNetwork" {
				if err := render.WriteYAML(&fromFiles, []render.Rendered{r}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := render.WriteYAML(&fromCluster, []render.Rendered{rd}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(fromFiles.String(), fromCluster.String()); diff != "" {
			t.Errorf("render --from-cluster differs from the render of the files (-files +cluster):\n%s", diff)
		}
		t.Logf("render --from-cluster: %d objects, %d bytes, equal to the applied objects", len(rd.Objects), fromCluster.Len())
	})

	t.Run("the plane's live diff reads the chain", func(t *testing.T) {
		n, seen := 0, false
		for _, r := range d.DiffFromCluster(ctx, source.Object{Obj: live, File: "cluster", Doc: 1}) {
			if r.Manager != kinds.ManagerKinds {
				continue
			}
			n++
			if r.Err != nil || r.Drifted() {
				t.Errorf("%s: %s %v\n%s", r.Object, r.Action, r.Err, r.Diff)
			}
			seen = seen || r.Object.Kind == "ConfigMap" && r.Object.Name == "luxd-chain-spc2"
		}
		if !seen {
			t.Errorf("the live diff of %d children has no %s", n, chainCM)
		}
	})

	t.Run("diff --takeover reads the chain", func(t *testing.T) {
		rs, err := d.Takeover(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, r := range rs {
			if r.CR.Kind != "LuxNetwork" {
				continue
			}
			if r.Err != nil || r.Halt != nil || r.Change != render.ChangeInSync {
				t.Errorf("takeover of %s: %s %v %v\n%s", r.Object, r.Change, r.Err, r.Halt, r.Diff)
			}
			seen = seen || r.Object.Kind == "ConfigMap" && r.Object.Name == "luxd-chain-spc2"
		}
		if !seen {
			t.Errorf("the takeover has no %s", chainCM)
		}
	})
}

// TestBuildContextReachesBuilds runs the Kind controllers with the operator's build settings
// (operator run --static-server-image, --allow-unverified-seed through WithBuildContext) on
// the real apiserver: a Static serving a ConfigMap runs the configured server image, not the
// default.
func TestBuildContextReachesBuilds(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns, image = "build-context", "registry.example/static-server:9.9.9"
	if err := c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns}}}); err != nil {
		t.Fatal(err)
	}
	startKinds(t, cfg, reconcile.WithBuildContext(kinds.Context{StaticServerImage: image, AllowUnverifiedSeed: true}))
	static := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Static",
		"metadata": map[string]any{"name": "docs", "namespace": ns}, "spec": map[string]any{"configMap": "docs-site", "ingress": map[string]any{"enabled": false}}}}
	if err := c.Create(ctx, static); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "the Static's Deployment runs the configured server image", func() (bool, string) {
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, dep); err != nil {
			return false, err.Error()
		}
		cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		if len(cs) == 0 {
			return false, "no containers"
		}
		got, _ := cs[0].(map[string]any)["image"].(string)
		return got == image, "image " + got
	})
}
