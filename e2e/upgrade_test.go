package e2e

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/upgrade"
)

// TestUpgradeResumesAfterSIGKILL runs the built operator with --upgrade-fsm, SIGKILLs it
// mid-Preflighting and again mid-Rolling (during the soak), and restarts it each time: the
// restarted operator re-derives the same decision from the CR's status and the cluster — the
// same pre-flight pod (not recreated), the same soak anchor — and the upgrade ends with one
// Succeeded record, production having run v1 then v2 only. v2 is testbed.SlowBootImage: its
// pods boot for 10 s, so the pre-flight lasts long enough to be killed in (a pod Ready at once
// passed pre-flight within ~40 ms of the CR waking on its status).
func TestUpgradeResumesAfterSIGKILL(t *testing.T) {
	cl := getCluster(t)
	const ns, name = "e2e-upgrade-resume", "resume"
	const v1, v2 = "testbed.invalid/slow-boot:v1", testbed.SlowBootImage
	deleteNamespaceAfter(t, cl, ns)
	ensureNamespace(t, cl.c, ns)
	repo := newGitRepo(t)
	run := func() *operator {
		return startOperator(t, cl, repo, ns, "--controllers", "kinds", "--upgrade-fsm", "--leader-elect=false")
	}
	op := run()
	ctx := context.Background()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hanzo.ai/v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"image": map[string]any{"repository": "testbed.invalid/slow-boot", "tag": "v1"},
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
			"upgradePolicy": map[string]any{"enabled": true, "preflight": true, "soakSeconds": int64(25),
				"preflightDeadlineSeconds": int64(120), "rolloutDeadlineSeconds": int64(120)},
		},
	}}
	apply := func() {
		for _, r := range (&apply.Applier{Client: cl.c, Manager: kinds.ManagerGitOps}).Apply(ctx, []*unstructured.Unstructured{cr}) {
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Object, r.Err)
			}
		}
	}
	apply()
	status := func() (map[string]any, error) {
		u := cr.DeepCopy()
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(cr), u); err != nil {
			return nil, err
		}
		s, _, _ := unstructured.NestedMap(u.Object, "status")
		return s, nil
	}
	str := func(s map[string]any, path ...string) string {
		v, _, _ := unstructured.NestedString(s, path...)
		return v
	}
	waitFor(t, "v1 adopted", 2*time.Minute, func() (bool, string) {
		s, err := status()
		if err != nil {
			return false, err.Error()
		}
		return str(s, "lastGoodImage") == v1, fmt.Sprint(s["lastGoodImage"])
	})

	// Every image the Deployment named (v1 read before the change, then polled), and every uid
	// the pre-flight pod had.
	d0 := &appsv1.Deployment{}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d0); err != nil {
		t.Fatalf("the adopted Deployment: %v", err)
	}
	images := []string{upgrade.DeploymentImage(d0)}
	podUIDs := map[types.UID]bool{}
	stop := make(chan struct{})
	done := make(chan struct{})
	pf := upgrade.NamesOf(name, v2).Pod
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			d := &appsv1.Deployment{}
			if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err == nil {
				if img := upgrade.DeploymentImage(d); images[len(images)-1] != img {
					images = append(images, img)
				}
			}
			p := &corev1.Pod{}
			if err := cl.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pf}, p); err == nil && p.DeletionTimestamp == nil {
				podUIDs[p.UID] = true
			}
		}
	}()

	unstructured.SetNestedField(cr.Object, "v2", "spec", "image", "tag") //nolint:errcheck // a literal path
	apply()
	waitFor(t, "Preflighting", time.Minute, func() (bool, string) {
		s, _ := status()
		return str(s, "upgrade", "phase") == "Preflighting", str(s, "upgrade", "phase")
	})
	op.stop(syscall.SIGKILL)
	killedPreflighting := time.Now()
	op = run()

	var anchor string
	waitFor(t, "Rolling, soaking", 2*time.Minute, func() (bool, string) {
		s, _ := status()
		anchor = str(s, "upgrade", "stableSince")
		return str(s, "upgrade", "phase") == "Rolling" && anchor != "", fmt.Sprint(s["upgrade"])
	})
	op.stop(syscall.SIGKILL)
	run() // the restarted operator; its cleanup stops it
	// The restarted operator keeps the soak anchor it finds (never re-soaks from scratch nor
	// credits time it did not see healthy).
	time.Sleep(3 * time.Second)
	if s, _ := status(); str(s, "upgrade", "phase") == "Rolling" && str(s, "upgrade", "stableSince") != anchor {
		t.Errorf("soak anchor moved across the restart: %s → %s", anchor, str(s, "upgrade", "stableSince"))
	}
	waitFor(t, "succeeded", 2*time.Minute, func() (bool, string) {
		s, _ := status()
		return str(s, "lastGoodImage") == v2 && s["upgrade"] == nil, fmt.Sprint(s["upgrade"])
	})
	close(stop)
	<-done
	s, _ := status()
	hist, _, _ := unstructured.NestedSlice(s, "upgradeHistory")
	var results []string
	for _, h := range hist {
		results = append(results, h.(map[string]any)["result"].(string))
	}
	if !slices.Equal(results, []string{"Succeeded"}) {
		t.Errorf("history %v, want one Succeeded", results)
	}
	if !slices.Equal(images, []string{v1, v2}) {
		t.Errorf("the Deployment ran %v, want v1 then v2", images)
	}
	if len(podUIDs) != 1 {
		t.Errorf("the pre-flight pod had %d uids: it was recreated across the restart", len(podUIDs))
	}
	fmt.Printf("e2e upgrade resume: v1→v2 with two SIGKILLs in %s\n", time.Since(killedPreflighting).Round(time.Second))
}
