package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Leader-election timings of TestLeaderElection: short enough for a test, in the ratios
// client-go requires (lease > renew deadline > 1.2 × retry period).
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// TestLeaderElection runs the operator at replicas > 1, as separate processes sharing one
// Lease (issue 5 item 5, issue 7 "two replicas elect one leader; killing it hands over"):
//
//   - of two processes exactly one is elected, and only it writes: an out-of-band edit is
//     reverted with a drift line in the leader's log and none in the standby's, and only the
//     leader serves a sweep report;
//   - SIGKILL of the leader (no release) hands over once the lease expires, not before
//     (no split brain) and within the lease duration plus the retry jitter (client-go waits
//     up to 2.2 × retry period between attempts);
//   - SIGTERM of the leader releases the Lease, so the standby takes over at its next retry,
//     within half the lease duration (without the release it could not before the lease
//     expires), and the released process exits 0;
//   - a leader that loses its Lease (another holder takes it) stops writing by exiting
//     non-zero within the renew deadline, so its Deployment restarts it clean.
func TestLeaderElection(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	const ns = "e2e-leader"
	ctx := context.Background()
	ensureNamespace(t, cl.c, ns) // holds the Lease, so it must exist before any replica starts
	deleteNamespaceAfter(t, cl, ns)
	sha, pushed := repo.push(t, "universe", universeFiles(t, ns))
	flags := []string{"--gitops-namespaces", ns,
		"--lease-duration", leaseDuration.String(), "--renew-deadline", renewDeadline.String(), "--retry-period", retryPeriod.String()}

	a := startOperator(t, cl, repo, ns, flags...)
	waitElected(t, a, 30*time.Second)
	b := startOperator(t, cl, repo, ns, flags...)
	holderA := leaseHolder(t, cl.c, ns)
	a.sweptAt(t, sha, pushed)
	waitFor(t, "Deployment web", time.Minute, func() (bool, string) {
		_, err := getObj(ctx, cl.c, gvkDeployment, ns, "web")
		return err == nil, fmt.Sprint(err)
	})

	// Exactly one writes: the standby neither sweeps nor corrects drift.
	scaleOutOfBand(t, cl.c, ns, "web", 5, "kubectl-scale-1")
	waitReplicas(t, cl.c, ns, "web", 2)
	waitFor(t, "the leader's drift line", 10*time.Second, func() (bool, string) {
		return hasLine(a.logs(), "Reverted drift", "Deployment/"+ns+"/web", "kubectl-scale-1"), "not yet"
	})
	if hasLine(b.logs(), "elected leader") || hasLine(b.logs(), "Reverted drift") || hasLine(b.logs(), "Applied child") || hasLine(b.logs(), "Updated child") || hasLine(b.logs(), "Sweep complete") {
		t.Fatalf("the standby wrote or was elected while the leader held the Lease:\n%s", b.logs())
	}
	if rep, err := b.report(); err != nil || rep.Revision != "" {
		t.Fatalf("the standby serves a sweep report %+v (err %v); only the leader sweeps", rep, err)
	}
	if h := leaseHolder(t, cl.c, ns); h != holderA {
		t.Fatalf("Lease holder moved from %q to %q with the leader alive", holderA, h)
	}

	// SIGKILL: no release; the standby waits for the lease to expire.
	killed := time.Now()
	a.stop(syscall.SIGKILL)
	waitElected(t, b, leaseDuration+3*retryPeriod+5*time.Second)
	afterKill := time.Since(killed)
	// The standby takes over at its first retry after the lease, counted from when it last
	// saw a renewal, expires: after the lease duration less one leader renewal and one
	// standby poll (at most 2.2 × retry period each, client-go's jitter), and before the
	// lease duration plus those, with a second for a loaded machine.
	poll := retryPeriod * 22 / 10
	if early := leaseDuration - 2*poll; afterKill < early {
		t.Errorf("handover after SIGKILL took %s: the standby took a lease still valid (want at least %s)", afterKill, early)
	}
	if limit := leaseDuration + 2*poll + time.Second; afterKill > limit {
		t.Errorf("handover after SIGKILL took %s, want within the lease duration plus retry jitter (%s)", afterKill, limit)
	}
	holderB := leaseHolder(t, cl.c, ns)
	if holderB == holderA {
		t.Fatalf("Lease still held by the killed leader %q", holderA)
	}
	scaleOutOfBand(t, cl.c, ns, "web", 6, "kubectl-scale-2")
	waitReplicas(t, cl.c, ns, "web", 2)
	waitFor(t, "the new leader's drift line", 10*time.Second, func() (bool, string) {
		return hasLine(b.logs(), "Reverted drift", "Deployment/"+ns+"/web", "kubectl-scale-2"), "not yet"
	})

	// SIGTERM: the leader releases the Lease and the next standby takes it at once.
	c := startOperator(t, cl, repo, ns, flags...)
	if hasLine(c.logs(), "elected leader") {
		t.Fatal("a third replica was elected while the second held the Lease")
	}
	termed := time.Now()
	b.stop(syscall.SIGTERM)
	waitElected(t, c, leaseDuration+5*time.Second)
	afterTerm := time.Since(termed)
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the leader exited %d after SIGTERM, want 0", code)
	}
	// Without the release the standby, which saw the last renewal, could not take over
	// before a full lease duration; half of it leaves room for a loaded machine.
	if limit := leaseDuration / 2; afterTerm > limit {
		t.Errorf("handover after SIGTERM took %s, want within %s (well before the lease expires): the Lease was not released", afterTerm, limit)
	}

	// Losing the Lease: another holder takes it; the leader must stop writing by exiting.
	stolen := time.Now()
	stealLease(t, cl.c, ns, "intruder")
	select {
	case <-c.done:
	case <-time.After(renewDeadline + 10*time.Second):
		t.Fatalf("the leader kept running %s after losing its Lease", time.Since(stolen))
	}
	lost := time.Since(stolen)
	if code := c.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the leader exited 0 after losing its Lease; want non-zero so it restarts clean")
	}
	if !hasLine(c.logs(), "leader election lost") {
		t.Errorf("the leader's log does not say it lost the election")
	}
	t.Logf("handover after SIGKILL %s (lease %s), after SIGTERM %s; a leader that lost its Lease exited after %s (renew deadline %s)",
		afterKill.Round(time.Millisecond), leaseDuration, afterTerm.Round(time.Millisecond), lost.Round(time.Millisecond), renewDeadline)
	fmt.Printf("e2e leader election: handover after SIGKILL %s, after SIGTERM %s, exit after losing the lease %s\n",
		afterKill.Round(time.Millisecond), afterTerm.Round(time.Millisecond), lost.Round(time.Millisecond))
}

// ensureNamespace creates ns unless it exists.
func ensureNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitElected waits for o to log that it was elected.
func waitElected(t *testing.T, o *operator, timeout time.Duration) {
	t.Helper()
	waitFor(t, "elected leader", timeout, func() (bool, string) {
		return hasLine(o.logs(), "elected leader"), "not elected"
	})
}

// leaseHolder returns the holder of the operator's Lease in ns (default name for hanzo.ai).
func leaseHolder(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "universe-operator.hanzo.ai"}, l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// stealLease makes holder the Lease holder, freshly renewed for a minute.
func stealLease(t *testing.T, c client.Client, ns, holder string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "universe-operator.hanzo.ai"}, l); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		secs := int32(60)
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime, l.Spec.LeaseDurationSeconds = &holder, &now, &now, &secs
		return c.Update(context.Background(), l)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// scaleOutOfBand sets a Deployment's replicas under another field manager.
func scaleOutOfBand(t *testing.T, c client.Client, ns, name string, replicas int, manager string) {
	t.Helper()
	dep := &unstructured.Unstructured{}
	dep.SetGroupVersionKind(gvkDeployment)
	dep.SetNamespace(ns)
	dep.SetName(name)
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
	if err := c.Patch(context.Background(), dep, patch, client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// waitReplicas waits for a Deployment's spec.replicas to be want.
func waitReplicas(t *testing.T, c client.Client, ns, name string, want int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("Deployment %s back to %d replicas", name, want), time.Minute, func() (bool, string) {
		d, err := getObj(context.Background(), c, gvkDeployment, ns, name)
		if err != nil {
			return false, err.Error()
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		return r == want, fmt.Sprintf("replicas %d", r)
	})
}
