package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

// readFleet parses the fleet's files (testdata/luxfleet/<dir>) as the GitOps loop does.
func readFleet(t *testing.T, dir string) []source.Object {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "luxfleet", dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fleet files in %s (%v)", dir, err)
	}
	snap := &source.Snapshot{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		snap.Files = append(snap.Files, source.File{Path: p, Data: data})
	}
	objs, errs := source.Parse(snap)
	if len(errs) > 0 {
		t.Fatalf("parse the fleet: %v", errs)
	}
	return objs
}

// fleetStorage adds what the luxfi CRs claim beyond the testbed's pool: volumes of 500Gi in
// the default class (the network's 200Gi default claim) and the do-block-storage class the
// indexers' Postgres names.
func fleetStorage(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	immediate := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "do-block-storage"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &immediate}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for i := range 12 {
		class, size := testbed.StorageClass, "500Gi"
		if i >= 6 {
			class, size = "do-block-storage", "100Gi"
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fleet-pv-%02d", i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName: class, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/tmp/fleet-pv-%02d", i)}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// TestLuxFleetBecomesReady applies the Lux mainnet fleet as its CRs are written (the luxfi
// operator's own indexers, explorer, gateway and MPC, and the mainnet LuxNetwork) on the full
// control plane: every CR becomes Ready with the luxfi status fields, what `operator render`
// prints is exactly what the controllers applied (a server-side dry-run of the rendered set
// under the controllers' field manager changes nothing), and a LuxChain added later is served
// by its network.
func TestLuxFleetBecomesReady(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	installCRDs(t, cfg, c)
	installLuxNetworkCRDs(t, cfg, c)
	fleetStorage(ctx, t, cs)
	logs := startKinds(t, cfg)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	fleet := readFleet(t, "")
	var crs []*unstructured.Unstructured
	nss := map[string]bool{}
	for _, o := range fleet {
		crs = append(crs, o.Obj)
		nss[o.Obj.GetNamespace()] = true
	}
	for ns := range nss {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	gitops := &apply.Applier{Client: c, Manager: kinds.ManagerGitOps}
	for _, r := range gitops.Apply(ctx, crs) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	get := func(gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	start := time.Now()
	for _, cr := range crs {
		poll(ctx, t, fmt.Sprintf("%s %s/%s Ready", cr.GetKind(), cr.GetNamespace(), cr.GetName()), func() (bool, string) {
			live, err := get(cr.GroupVersionKind(), cr.GetNamespace(), cr.GetName())
			if err != nil {
				return false, err.Error()
			}
			cond, ok := readyCondition(live)
			return ok && cond.Status == metav1.ConditionTrue, fmt.Sprintf("Ready=%+v", cond)
		})
	}
	t.Logf("%d fleet CRs Ready in %s", len(crs), time.Since(start).Round(time.Second))

	// The luxfi status fields, as that operator reported them.
	status := func(gvk schema.GroupVersionKind, ns, name string) map[string]any {
		live, err := get(gvk, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		st, _, _ := unstructured.NestedMap(live.Object, "status")
		return st
	}
	lux := func(kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "lux.network", Version: "v1alpha1", Kind: kind}
	}
	for _, c := range []struct {
		kind, ns, name, field string
		want                  any
	}{
		{"LuxNetwork", "lux-mainnet", "luxd", "readyValidators", int64(5)},
		{"LuxNetwork", "lux-mainnet", "luxd", "phase", "Running"},
		{"LuxIndexer", "lux-mainnet", "indexer-zoo", "phase", "Ready"},
		{"LuxIndexer", "lux-mainnet", "indexer-zoo", "apiEndpoint", "http://indexer-zoo-indexer.lux-mainnet.svc:4000"},
		{"LuxExplorer", "lux-mainnet", "explorer", "url", "https://explorer.lux.network"},
		{"LuxExplorer", "lux-mainnet", "explorer", "readyReplicas", int64(2)},
		{"LuxGateway", "lux-mainnet", "api-gateway", "routeCount", int64(11)},
		{"LuxMPC", "lux-mpc", "lux-mpc", "readyNodes", int64(3)},
		{"LuxMPC", "lux-mpc", "lux-mpc", "phase", "Ready"},
	} {
		if got := status(lux(c.kind), c.ns, c.name)[c.field]; !cmp.Equal(got, c.want) {
			t.Errorf("%s %s status.%s = %v, want %v", c.kind, c.name, c.field, got, c.want)
		}
	}
	// The mainnet network as written: its seed archive has no expectedHash, which it says.
	if net, _ := get(lux("LuxNetwork"), "lux-mainnet", "luxd"); !hasCondition(net, kinds.ReasonSeedRestoreUnverified, "mainnet-node0-full.tar.gz") {
		t.Errorf("the mainnet LuxNetwork does not report SeedRestoreUnverified: %v", net.Object["status"])
	}
	// what the indexers declare and nothing reads is said, not dropped
	idx, _ := get(lux("LuxIndexer"), "lux-mainnet", "indexer-c")
	if !hasCondition(idx, reconcile.ConditionFieldsNotMaterialized, "spec.storage") {
		t.Errorf("indexer-c does not report spec.storage as not materialized: %v", idx.Object["status"])
	}

	// The indexer reaches the network on its declared port (9630 on mainnet), the gateway too.
	dep, err := get(gvkDeployment, "lux-mainnet", "indexer-zoo-indexer")
	if err != nil {
		t.Fatal(err)
	}
	if env := fmt.Sprint(dep.Object["spec"]); !strings.Contains(env, "luxd-0.luxd-headless.lux-mainnet.svc:9630/ext/bc/26QT4oQvjup5vhH5ifmwisH9MTeHquWgJDZC9GvynLthhVCDh9/rpc") {
		t.Errorf("indexer-zoo RPC endpoint is not the network's: %s", env)
	}

	t.Run("render is what was applied", func(t *testing.T) {
		// The CRs with their live uids (the children's owner references), as `operator diff`
		// renders them; then the rendered set server-side dry-run under the controllers'
		// field manager must change nothing: no field render prints is missing live, and no
		// field the controllers own is missing from render.
		objs := make([]source.Object, 0, len(fleet))
		for _, o := range fleet {
			live, err := get(o.Obj.GroupVersionKind(), o.Obj.GetNamespace(), o.Obj.GetName())
			if err != nil {
				t.Fatal(err)
			}
			o.Obj = o.Obj.DeepCopy()
			o.Obj.SetUID(live.GetUID())
			objs = append(objs, o)
		}
		rendered := render.Renderer{Registry: kinds.Builtin(), APIGroup: group}.Render(objs)
		if errs := render.Errors(rendered); len(errs) > 0 {
			t.Fatalf("render: %v", errs)
		}
		n := 0
		for _, rd := range rendered {
			if rd.Halt != nil {
				t.Errorf("%s halts in render: %v", apply.RefOf(rd.From.Obj), rd.Halt)
			}
			for _, obj := range rd.Objects {
				n++
				live, err := get(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
				if err != nil {
					t.Errorf("rendered %s was not applied: %v", apply.RefOf(obj), err)
					continue
				}
				dry := obj.DeepCopy()
				// the response is decoded into dry
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
				if diff := cmp.Diff(strip(live), strip(dry)); diff != "" {
					t.Errorf("applying the rendered %s would change it (-applied +rendered):\n%s", apply.RefOf(obj), diff)
				}
			}
		}
		t.Logf("%d rendered objects equal the applied ones", n)

		// render --from-cluster of each CR (its inputs listed from the cluster, as the
		// controllers list them) is byte for byte the render of the files
		for _, rd := range rendered {
			live, err := get(rd.From.Obj.GroupVersionKind(), rd.From.Obj.GetNamespace(), rd.From.Obj.GetName())
			if err != nil {
				t.Fatal(err)
			}
			fc := render.Renderer{Registry: kinds.Builtin(), APIGroup: group}.RenderFromCluster(ctx, c, source.Object{Obj: live, File: "cluster"})
			var want, got strings.Builder
			if err := render.WriteYAML(&want, []render.Rendered{rd}); err != nil {
				t.Fatal(err)
			}
			if err := render.WriteYAML(&got, []render.Rendered{fc}); err != nil {
				t.Fatal(err)
			}
			if fc.Err != nil || want.String() != got.String() {
				t.Errorf("render --from-cluster of %s differs from the render of its file (%v):\n%s", apply.RefOf(live), fc.Err, cmp.Diff(want.String(), got.String()))
			}
		}
	})

	t.Run("a LuxChain added later is served by its network", func(t *testing.T) {
		later := readFleet(t, "later")
		var objs []*unstructured.Unstructured
		for _, o := range later {
			objs = append(objs, o.Obj)
		}
		for _, r := range gitops.Apply(ctx, objs) {
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Object, r.Err)
			}
		}
		poll(ctx, t, "network projects the chain's config", func() (bool, string) {
			sts, err := get(gvkStatefulSet, "lux-mainnet", "luxd")
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(fmt.Sprint(sts.Object["spec"]), "luxd-chain-spc2"), "no luxd-chain-spc2 in the pod template yet"
		})
		if _, err := get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "lux-mainnet", "luxd-chain-spc2"); err != nil {
			t.Errorf("ConfigMap luxd-chain-spc2: %v", err)
		}
		poll(ctx, t, "LuxChain spc2 Active", func() (bool, string) {
			st := status(lux("LuxChain"), "lux-mainnet", "spc2")
			return st["phase"] == "Active", fmt.Sprint(st)
		})
		poll(ctx, t, "the validators rolled onto the chain's config", func() (bool, string) {
			sts, err := get(gvkStatefulSet, "lux-mainnet", "luxd")
			if err != nil {
				return false, err.Error()
			}
			st := func(f string) int64 { v, _, _ := unstructured.NestedInt64(sts.Object, "status", f); return v }
			rev, _, _ := unstructured.NestedString(sts.Object, "status", "updateRevision")
			cur, _, _ := unstructured.NestedString(sts.Object, "status", "currentRevision")
			done := st("observedGeneration") == sts.GetGeneration() && rev == cur && st("updatedReplicas") == 5 && st("readyReplicas") == 5
			return done, fmt.Sprintf("generation %d observed %d updated %d ready %d", sts.GetGeneration(), st("observedGeneration"), st("updatedReplicas"), st("readyReplicas"))
		})
		poll(ctx, t, "LuxNetwork Ready after the chain's rollout", func() (bool, string) {
			live, err := get(lux("LuxNetwork"), "lux-mainnet", "luxd")
			if err != nil {
				return false, err.Error()
			}
			cond, ok := readyCondition(live)
			return ok && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == live.GetGeneration(), fmt.Sprintf("Ready=%+v", cond)
		})
	})
}

func hasCondition(u *unstructured.Unstructured, typ, contains string) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		m, _ := r.(map[string]any)
		if m["type"] == typ && m["status"] == "True" && strings.Contains(fmt.Sprint(m["message"]), contains) {
			return true
		}
	}
	return false
}
