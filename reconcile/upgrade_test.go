package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/upgrade"
)

const upNS = "upgrade-test"

var gvkSnapshot = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshot"}

// installSnapshotCRDs installs the external-snapshotter CRDs (upgrade/testdata, with provenance).
func installSnapshotCRDs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{"../upgrade/testdata/snapshot-crds"}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install the VolumeSnapshot CRDs: %v", err)
	}
}

func upgradeCR(name, image string, policy map[string]any, extra map[string]any) *unstructured.Unstructured {
	repo, tag := kinds.ImageSpecParts(image)
	spec := map[string]any{
		"image":         map[string]any{"repository": repo, "tag": tag},
		"replicas":      int64(1),
		"ports":         []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
		"upgradePolicy": policy,
	}
	for k, v := range extra {
		spec[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": upNS},
		"spec":     spec,
	}}
}

type upView struct {
	lastGood, phase, target, deployImage string
	rv                                   string   // the CR's resourceVersion when read
	history                              []string // results
	conditions                           map[string]string
}

func (v upView) String() string {
	return fmt.Sprintf("lastGood=%s phase=%s target=%s deployment=%s history=%v", v.lastGood, v.phase, v.target, v.deployImage, v.history)
}

func view(ctx context.Context, c client.Client, name string) (upView, error) {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(gvkService)
	if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: name}, cr); err != nil {
		return upView{}, err
	}
	v := upView{conditions: map[string]string{}, rv: cr.GetResourceVersion()}
	v.lastGood, _, _ = unstructured.NestedString(cr.Object, "status", "lastGoodImage")
	v.phase, _, _ = unstructured.NestedString(cr.Object, "status", "upgrade", "phase")
	v.target, _, _ = unstructured.NestedString(cr.Object, "status", "upgrade", "targetImage")
	hist, _, _ := unstructured.NestedSlice(cr.Object, "status", "upgradeHistory")
	for _, h := range hist {
		v.history = append(v.history, h.(map[string]any)["result"].(string))
	}
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, x := range conds {
		m := x.(map[string]any)
		v.conditions[m["type"].(string)] = m["status"].(string) + "/" + fmt.Sprint(m["reason"])
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: name}, d); err == nil {
		v.deployImage = upgrade.DeploymentImage(d)
	}
	return v, nil
}

func setImage(ctx context.Context, t *testing.T, c client.Client, cr *unstructured.Unstructured, image string) {
	t.Helper()
	repo, tag := kinds.ImageSpecParts(image)
	cr = cr.DeepCopy()
	if err := unstructured.SetNestedMap(cr.Object, map[string]any{"repository": repo, "tag": tag}, "spec", "image"); err != nil {
		t.Fatal(err)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{cr}) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
}

// watchImages records every image the Deployment's template named, polled, until stop.
func watchImages(ctx context.Context, c client.Client, name string) (stop func() []string) {
	var mu sync.Mutex
	var seen []string
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: name}, d); err == nil {
				img := upgrade.DeploymentImage(d)
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1] != img {
					seen = append(seen, img)
				}
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() []string { cancel(); <-done; mu.Lock(); defer mu.Unlock(); return seen }
}

func preflightObjects(ctx context.Context, t *testing.T, c client.Client, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, gvk := range []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
		gvkSnapshot, {Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, l, client.InNamespace(upNS), client.MatchingLabels{upgrade.LabelPreflightOf: name}); err != nil {
			t.Fatalf("list %s: %v", gvk.Kind, err)
		}
		for _, o := range l.Items {
			if o.GetDeletionTimestamp() == nil {
				out[gvk.Kind]++
			}
		}
	}
	return out
}

// TestUpgradeMachine drives the upgrade machine in the Service controller on the full control
// plane (kwok makes pods Ready, and pods of testbed.CrashLoopImage crash-loop) with the
// VolumeSnapshot CRDs installed: a happy upgrade through pre-flight and soak; a failing
// pre-flight that never touches the Deployment; a crash loop during the rollout rolled back to
// lastGood and latched Failed, then superseded by a new image; a stateful pre-flight whose
// snapshot and clone are really created and then collected.
func TestUpgradeMachine(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	installSnapshotCRDs(t, cfg)
	cloneRoot := testbed.CloneStorage(t, cfg)
	logs := startKinds(t, cfg, reconcile.WithUpgrades(true))
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upNS}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The live data claim of the stateful app (the operator references it, never creates it),
	// of the testbed's clone storage class, so its snapshot and the clone from it are real.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-app-db", Namespace: upNS}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(testbed.CloneClass),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := c.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	fast := func(preflight bool) map[string]any {
		return map[string]any{"enabled": true, "preflight": preflight, "soakSeconds": int64(3),
			"rolloutDeadlineSeconds": int64(60), "preflightDeadlineSeconds": int64(60)}
	}
	const v1, v2, v3 = "ghcr.io/example/up:v1", "ghcr.io/example/up:v2", "ghcr.io/example/up:v3"
	crs := map[string]*unstructured.Unstructured{
		"happy":  upgradeCR("happy", v1, fast(true), nil),
		"pffail": upgradeCR("pffail", v1, fast(true), nil),
		"crash":  upgradeCR("crash", v1, fast(false), nil),
		"db": upgradeCR("db", v1, map[string]any{"enabled": true, "soakSeconds": int64(3), "preflightDeadlineSeconds": int64(30),
			"bootEnv": []any{map[string]any{"name": "MODE", "value": "preflight"}}},
			map[string]any{"persistence": map[string]any{"enabled": true, "dataDir": "/data", "dbPath": "app.db", "bucket": "b",
				"storage": map[string]any{"storageClassName": testbed.CloneClass, "size": "1Gi"}}}),
	}
	var objs []*unstructured.Unstructured
	for _, cr := range crs {
		objs = append(objs, cr)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, objs) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	await := func(t *testing.T, name, what string, ok func(upView) bool) upView {
		t.Helper()
		var last upView
		poll(ctx, t, name+": "+what, func() (bool, string) {
			v, err := view(ctx, c, name)
			if err != nil {
				return false, err.Error()
			}
			last = v
			return ok(v), v.String()
		})
		return last
	}
	for name := range crs {
		await(t, name, "adopts v1 as the baseline", func(v upView) bool { return v.lastGood == v1 && v.phase == "" })
	}

	t.Run("scenarios", func(t *testing.T) { scenarios(ctx, t, c, crs, await, cloneRoot) })
	// Every transition left an Event on its CR.
	poll(ctx, t, "upgrade events", func() (bool, string) {
		evs := &eventsv1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(upNS)); err != nil {
			return false, err.Error()
		}
		got := map[string]bool{}
		for _, e := range evs.Items {
			got[e.Regarding.Name+"/"+e.Reason] = true
		}
		var missing []string
		for _, want := range []string{"happy/UpgradeBaselineAdopted", "happy/UpgradeStarted", "happy/UpgradePreflightPassed", "happy/UpgradeSucceeded",
			"pffail/UpgradePreflightFailed", "crash/UpgradeRollingBack", "crash/UpgradeRolledBack"} {
			if !got[want] {
				missing = append(missing, want)
			}
		}
		return len(missing) == 0, strings.Join(missing, ", ")
	})
}

func scenarios(ctx context.Context, t *testing.T, c client.Client, crs map[string]*unstructured.Unstructured, await func(*testing.T, string, string, func(upView) bool) upView, cloneRoot string) {
	const v1, v2, v3 = "ghcr.io/example/up:v1", "ghcr.io/example/up:v2", "ghcr.io/example/up:v3"
	t.Run("happy upgrade: pre-flight, flip, soak, lastGood advances", func(t *testing.T) {
		t.Parallel()
		images := watchImages(ctx, c, "happy")
		setImage(ctx, t, c, crs["happy"], v2)
		v := await(t, "happy", "pre-flighting", func(v upView) bool { return v.phase == "Preflighting" || v.phase == "Rolling" || v.lastGood == v2 })
		if v.phase == "Preflighting" && v.deployImage != v1 {
			// The reconcile that ends pre-flight applies the Deployment first and writes
			// status (phase Rolling) last, so a reader can land between the two writes.
			// Production moving under a status that stays Preflighting is the violation.
			time.Sleep(2 * time.Second)
			if again, err := view(ctx, c, "happy"); err == nil && again.rv == v.rv {
				t.Errorf("production moved to %s while pre-flighting (status unchanged for 2s: %s)", v.deployImage, again)
			}
		}
		await(t, "happy", "succeeded", func(v upView) bool { return v.lastGood == v2 && v.phase == "" })
		v = await(t, "happy", "history", func(v upView) bool { return slices.Equal(v.history, []string{"Succeeded"}) && v.deployImage == v2 })
		if seen := images(); !slices.Equal(seen, []string{v1, v2}) {
			t.Errorf("the Deployment ran %v, want v1 then v2", seen)
		}
		poll(ctx, t, "pre-flight resources removed", func() (bool, string) {
			left := preflightObjects(ctx, t, c, "happy")
			return len(left) == 0, fmt.Sprint(left)
		})
	})

	t.Run("pre-flight failure never touches the Deployment", func(t *testing.T) {
		t.Parallel()
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: "pffail"}, d); err != nil {
			t.Fatal(err)
		}
		gen := d.Generation
		images := watchImages(ctx, c, "pffail")
		setImage(ctx, t, c, crs["pffail"], testbed.CrashLoopImage)
		await(t, "pffail", "pre-flight failed", func(v upView) bool {
			return v.phase == "Failed" && slices.Equal(v.history, []string{"PreflightFailed"})
		})
		time.Sleep(3 * time.Second) // the latch holds
		v := await(t, "pffail", "still failed", func(v upView) bool { return v.phase == "Failed" })
		if seen := images(); !slices.Equal(seen, []string{v1}) || v.lastGood != v1 {
			t.Errorf("the Deployment ran %v (lastGood %s), want v1 only", seen, v.lastGood)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: "pffail"}, d); err != nil || d.Generation != gen {
			t.Errorf("the Deployment was written: generation %d → %d (%v)", gen, d.Generation, err)
		}
	})

	t.Run("crash loop during rollout: rollback, Failed latch, superseded by a new image", func(t *testing.T) {
		t.Parallel()
		images := watchImages(ctx, c, "crash")
		setImage(ctx, t, c, crs["crash"], testbed.CrashLoopImage)
		await(t, "crash", "rolled back and latched", func(v upView) bool {
			return v.phase == "Failed" && slices.Equal(v.history, []string{"RolledBack"}) && v.deployImage == v1
		})
		time.Sleep(3 * time.Second)
		v := await(t, "crash", "latched", func(v upView) bool { return v.phase == "Failed" })
		if v.conditions[reconcile.ConditionUpgradeFailed] != "True/UpgradeFailed" {
			t.Errorf("conditions %v, want UpgradeFailed", v.conditions)
		}
		if seen := images(); !slices.Equal(seen, []string{v1, testbed.CrashLoopImage, v1}) || v.lastGood != v1 {
			t.Errorf("the Deployment ran %v (lastGood %s), want v1, the candidate, v1", seen, v.lastGood)
		}
		setImage(ctx, t, c, crs["crash"], v3)
		await(t, "crash", "v3 supersedes the failed attempt", func(v upView) bool {
			return v.lastGood == v3 && v.phase == "" && slices.Equal(v.history, []string{"RolledBack", "Succeeded"})
		})
		if v, _ := view(ctx, c, "crash"); v.conditions[reconcile.ConditionUpgradeFailed] != "" {
			t.Errorf("UpgradeFailed stays after a successful upgrade: %v", v.conditions)
		}
	})

	t.Run("stateful pre-flight: the candidate boots over a clone of the live data, then clone and snapshot are collected", func(t *testing.T) {
		t.Parallel()
		statefulPreflight(ctx, t, c, await, crs["db"], cloneRoot)
	})

}

// statefulPreflight upgrades the stateful app db from v1 to v2 over the testbed's clone
// storage. The live claim's volume holds a marker file the test writes as the app would; with
// kwok no container runs, so the candidate "seeing" the data is observed on the host: the
// volume the clone claim is bound to is a different directory holding the same marker, and the
// candidate pod's spec mounts that claim (and no volume of it names the live claim) while kwok
// runs it. After the upgrade the snapshot, the clone, its volume and both copies are gone, and
// the live data is untouched.
func statefulPreflight(ctx context.Context, t *testing.T, c client.Client, await func(*testing.T, string, string, func(upView) bool) upView,
	cr *unstructured.Unstructured, cloneRoot string) {
	const v1, v2 = "ghcr.io/example/up:v1", "ghcr.io/example/up:v2"
	var liveDir string
	poll(ctx, t, "db: the live claim bound", func() (bool, string) {
		d, err := testbed.ClaimDir(ctx, c, upNS, "db-app-db")
		liveDir = d
		return d != "" && err == nil, fmt.Sprint(err)
	})
	marker := fmt.Sprintf("live data of db at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(liveDir, "marker"), []byte(marker), 0o600); err != nil {
		t.Fatal(err)
	}
	n := upgrade.NamesOf("db", v2)
	images := watchImages(ctx, c, "db")
	seen := watchPreflight(ctx, c, n)
	setImage(ctx, t, c, cr, v2)
	await(t, "db", "succeeded over the clone", func(v upView) bool { return v.lastGood == v2 && v.phase == "" })
	pf := seen()
	switch {
	case pf.snapSource != "db-app-db" || !pf.snapReady:
		t.Errorf("the snapshot: source %q, ready %v; want db-app-db, ready", pf.snapSource, pf.snapReady)
	case pf.cloneDir == "":
		t.Errorf("the clone was never seen bound")
	case pf.cloneDir == liveDir:
		t.Errorf("the clone is bound to the live volume %s", liveDir)
	case pf.cloneMarker != marker:
		t.Errorf("the clone's volume %s held marker %q, want the live data's %q", pf.cloneDir, pf.cloneMarker, marker)
	}
	if !slices.Equal(pf.podClaims, []string{n.Clone}) || !pf.podRunning {
		t.Errorf("the candidate mounted the claims %v (running: %v), want the clone %s only, running (never db-app-db)", pf.podClaims, pf.podRunning, n.Clone)
	}
	snapUID, cloneDir, cloneVolume := pf.snapUID, pf.cloneDir, pf.cloneVolume

	poll(ctx, t, "db: pre-flight resources removed", func() (bool, string) {
		left := preflightObjects(ctx, t, c, "db")
		return len(left) == 0, fmt.Sprint(left)
	})
	poll(ctx, t, "db: the clone's volume and both copies collected", func() (bool, string) {
		var left []string
		if err := c.Get(ctx, client.ObjectKey{Name: cloneVolume}, &corev1.PersistentVolume{}); cloneVolume != "" && !apierrors.IsNotFound(err) {
			left = append(left, "volume "+cloneVolume)
		}
		for _, d := range []string{cloneDir, testbed.SnapshotDir(cloneRoot, snapUID)} {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				left = append(left, d)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	if got, err := os.ReadFile(filepath.Join(liveDir, "marker")); err != nil || string(got) != marker {
		t.Errorf("the live data changed: %q (%v)", got, err)
	}
	if seen := images(); !slices.Equal(seen, []string{v1, v2}) {
		t.Errorf("the Deployment ran %v, want v1 then v2", seen)
	}
}

// preflightSeen is what watchPreflight saw of a stateful pre-flight while it ran.
type preflightSeen struct {
	snapReady             bool
	snapSource            string
	snapUID               types.UID
	cloneDir, cloneVolume string
	cloneMarker           string   // the marker file of the clone's volume when first seen bound
	podClaims             []string // every claim a volume of the candidate pod named
	podRunning            bool
}

// watchPreflight samples the pre-flight resources of n every 50ms until stopped: they live
// for as long as the candidate takes to become Ready, which on kwok is about a second.
func watchPreflight(ctx context.Context, c client.Client, n upgrade.Names) (stop func() preflightSeen) {
	var mu sync.Mutex
	var seen preflightSeen
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			snap := &unstructured.Unstructured{}
			snap.SetGroupVersionKind(gvkSnapshot)
			snapErr := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: n.Snapshot}, snap)
			dir, _ := testbed.ClaimDir(ctx, c, upNS, n.Clone)
			var marker []byte
			if dir != "" {
				marker, _ = os.ReadFile(filepath.Join(dir, "marker"))
			}
			pvc := &corev1.PersistentVolumeClaim{}
			pvcErr := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: n.Clone}, pvc)
			mu.Lock()
			if snapErr == nil {
				seen.snapSource, _, _ = unstructured.NestedString(snap.Object, "spec", "source", "persistentVolumeClaimName")
				seen.snapUID = snap.GetUID()
				if ok, _, _ := unstructured.NestedBool(snap.Object, "status", "readyToUse"); ok {
					seen.snapReady = true
				}
			}
			if dir != "" && seen.cloneDir == "" && pvcErr == nil {
				seen.cloneDir, seen.cloneMarker, seen.cloneVolume = dir, string(marker), pvc.Spec.VolumeName
			}
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// The candidate pod is watched, not sampled: the machine deletes it once it is Ready,
	// and a loaded machine's sampling once missed the moment it ran.
	podDone := make(chan struct{})
	go func() {
		defer close(podDone)
		wc, ok := c.(client.WithWatch)
		if !ok {
			return
		}
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(upNS), client.MatchingFields{"metadata.name": n.Pod})
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				mu.Lock()
				for _, v := range p.Spec.Volumes {
					if v.PersistentVolumeClaim != nil && !slices.Contains(seen.podClaims, v.PersistentVolumeClaim.ClaimName) {
						seen.podClaims = append(seen.podClaims, v.PersistentVolumeClaim.ClaimName)
					}
				}
				seen.podRunning = seen.podRunning || p.Status.Phase == corev1.PodRunning
				mu.Unlock()
			}
			w.Stop()
		}
	}()
	return func() preflightSeen {
		cancel()
		<-done
		<-podDone
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}
