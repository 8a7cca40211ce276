package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/upgrade"
)

// TestUpgradeGate, on a real apiserver: with the cluster gate closed a CR that asks for a
// gated upgrade says UpgradePolicyIgnored and gets spec.image directly; with it open, an
// unsafe upgrade (stateful, no bootEnv) says UpgradeRefused and production stays on the
// running image.
func TestUpgradeGate(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	apply := func(t *testing.T, crs ...*unstructured.Unstructured) {
		for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, crs) {
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Object, r.Err)
			}
		}
	}
	state := func(name string) (upView, string) {
		v, err := view(ctx, c, name)
		if err != nil {
			return v, err.Error()
		}
		return v, fmt.Sprintf("%s conditions=%v", v, v.conditions)
	}
	asks := upgradeCR("asks", "ghcr.io/example/asks:v1", map[string]any{"enabled": true}, nil)
	t.Run("gate closed: UpgradePolicyIgnored, spec.image applied directly", func(t *testing.T) {
		startKinds(t, cfg)
		apply(t, asks)
		poll(ctx, t, "UpgradePolicyIgnored", func() (bool, string) {
			v, msg := state("asks")
			return v.conditions[reconcile.ConditionUpgradePolicyIgnored] == "True/UpgradeFSMDisabled" && v.deployImage == "ghcr.io/example/asks:v1", msg
		})
		setImage(ctx, t, c, asks, "ghcr.io/example/asks:v2")
		poll(ctx, t, "v2 applied directly", func() (bool, string) {
			v, msg := state("asks")
			return v.deployImage == "ghcr.io/example/asks:v2" && v.phase == "" && v.lastGood == "", msg
		})
	})
	t.Run("gate open: an unsafe upgrade is refused and production held", func(t *testing.T) {
		startKinds(t, cfg, reconcile.WithUpgrades(true))
		db := upgradeCR("nobootenv", "ghcr.io/example/db:v1", map[string]any{"enabled": true},
			map[string]any{"persistence": map[string]any{"enabled": true, "dataDir": "/data", "dbPath": "app.db", "bucket": "b",
				"storage": map[string]any{"size": "1Gi"}}})
		apply(t, db)
		poll(ctx, t, "created at v1", func() (bool, string) {
			v, msg := state("nobootenv")
			return v.deployImage == "ghcr.io/example/db:v1", msg
		})
		setImage(ctx, t, c, db, "ghcr.io/example/db:v2")
		poll(ctx, t, "UpgradeRefused", func() (bool, string) {
			v, msg := state("nobootenv")
			return v.conditions[reconcile.ConditionUpgradeRefused] == "True/"+upgrade.RefusedNoBootEnv, msg
		})
		time.Sleep(2 * time.Second)
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: "nobootenv"}, d); err != nil || upgrade.DeploymentImage(d) != "ghcr.io/example/db:v1" {
			t.Errorf("production moved to %s (%v)", upgrade.DeploymentImage(d), err)
		}
		// The CR that asked under the closed gate no longer says it is ignored.
		poll(ctx, t, "asks: UpgradePolicyIgnored cleared", func() (bool, string) {
			v, msg := state("asks")
			_, ignored := v.conditions[reconcile.ConditionUpgradePolicyIgnored]
			return !ignored, msg
		})
	})
}

// TestUpgradeLatchSurvivesGateOff, on a real apiserver: a CR latched Failed by the machine
// (its spec names v2, which failed; lastGood v1) stays on v1 when the operator restarts
// without --upgrade-fsm, saying UpgradeLatched, and is released onto spec.image only when
// the spec changes. The latch is seeded through the status subresource as the machine's own
// field manager (no pods run here), then the machine itself holds it before the switch.
func TestUpgradeLatchSurvivesGateOff(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const good, bad, next = "ghcr.io/example/latch:v1", "ghcr.io/example/latch:v2", "ghcr.io/example/latch:v3"
	cr := upgradeCR("latch", bad, map[string]any{"enabled": true}, nil)
	for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{cr}) {
		if r.Err != nil {
			t.Fatalf("apply %s: %v", r.Object, r.Err)
		}
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvkService)
	if err := c.Get(ctx, client.ObjectKey{Namespace: upNS, Name: "latch"}, live); err != nil {
		t.Fatal(err)
	}
	// Written as the machine writes it (server-side apply, the status field manager), so
	// the operator's later writes own these fields and can drop them.
	seed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": live.GetAPIVersion(), "kind": live.GetKind(),
		"metadata": map[string]any{"name": "latch", "namespace": upNS},
		"status": map[string]any{
			"lastGoodImage": good,
			"upgrade":       map[string]any{"targetImage": bad, "phase": "Failed", "message": "the candidate is crash-looping"},
		},
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(seed), client.FieldOwner(kinds.ManagerStatus), client.ForceOwnership); err != nil {
		t.Fatalf("seed the Failed latch: %v", err)
	}
	images := watchImages(ctx, c, "latch")
	state := func() (upView, string) {
		v, err := view(ctx, c, "latch")
		if err != nil {
			return v, err.Error()
		}
		return v, fmt.Sprintf("%s conditions=%v", v, v.conditions)
	}

	_, stop := runKinds(t, cfg, reconcile.WithUpgrades(true))
	poll(ctx, t, "machine on: the latch holds v1", func() (bool, string) {
		v, msg := state()
		return v.deployImage == good && v.phase == "Failed" && v.conditions[reconcile.ConditionUpgradeFailed] == "True/UpgradeFailed", msg
	})
	stop()

	logs := startKinds(t, cfg) // --upgrade-fsm off
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log (machine off):\n%s", logs.String())
		}
	})
	poll(ctx, t, "machine off: still v1, UpgradeLatched", func() (bool, string) {
		v, msg := state()
		_, failed := v.conditions[reconcile.ConditionUpgradeFailed]
		return v.deployImage == good && v.phase == "Failed" && !failed &&
			v.conditions[reconcile.ConditionUpgradeLatched] == "True/"+upgrade.ReasonLatchedMachineOff, msg
	})
	if v, _ := view(ctx, c, "latch"); v.conditions[reconcile.ConditionUpgradePolicyIgnored] != "" {
		t.Errorf("a held latch also says UpgradePolicyIgnored: %v", v.conditions)
	}
	setImage(ctx, t, c, cr, next)
	poll(ctx, t, "spec changed: released onto v3", func() (bool, string) {
		v, msg := state()
		_, latched := v.conditions[reconcile.ConditionUpgradeLatched]
		return v.deployImage == next && v.phase == "" && !latched &&
			v.conditions[reconcile.ConditionUpgradePolicyIgnored] == "True/UpgradeFSMDisabled", msg
	})
	if seen := images(); slices.Contains(seen, bad) {
		t.Errorf("the Deployment ran %v: the failed image %s reached production", seen, bad)
	}
}
