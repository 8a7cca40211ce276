package gitops

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/reconcile/apply"
)

// applyOrder records the names of the objects applied, in request order.
type applyOrder struct {
	mu    sync.Mutex
	names []string
}

func (a *applyOrder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if verbOf(req) == "APPLY configmaps" && strings.Contains(req.URL.Path, "/namespaces/paths-test/") {
			parts := strings.Split(req.URL.Path, "/")
			a.mu.Lock()
			a.names = append(a.names, parts[len(parts)-1])
			a.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (a *applyOrder) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.names
	a.names = nil
	return n
}

func pathCM(name, data string, annotations ...string) []byte {
	ann := ""
	if len(annotations) > 0 {
		ann = "\n  annotations: {" + strings.Join(annotations, ", ") + "}"
	}
	return fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: paths-test%s\ndata: {%s}\n", name, ann, data)
}

func resultOf(t *testing.T, r Report, name string) apply.Result {
	t.Helper()
	for _, res := range r.Results {
		if res.Object.Name == name {
			return res
		}
	}
	t.Fatalf("no result for %s in %+v", name, r.Results)
	return apply.Result{}
}

// TestSweepPaths, on the apiserver: a dependsOn chain and a sync wave apply in order, a
// failing dependency holds its dependent (named), a file removed from git shows its
// object Orphaned with the commit and nothing is deleted, a new sweeper (operator up)
// finds everything in sync from the inventory with zero applies, a suspended path is not
// applied but reports its drift, and every idle sweep is 0 requests.
func TestSweepPaths(t *testing.T) {
	const ns, stateNS = "paths-test", "paths-state"
	cfg := testbed.APIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{ns, stateNS} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	src := newMemSource(map[string][]byte{
		"infra/db/.universe.yaml":  []byte("{}\n"),
		"infra/db/db.yaml":         pathCM("db", `"bad key!": x`), // the apiserver refuses the key
		"apps/web/.universe.yaml":  []byte("dependsOn: [infra/db]\n"),
		"apps/web/web.yaml":        pathCM("web", "a: b"),
		"apps/web/late.yaml":       pathCM("late", "a: b", `"argocd.argoproj.io/sync-wave": "1"`),
		"apps/web/early.yaml":      pathCM("early", "a: b", `"argocd.argoproj.io/sync-wave": "-2"`),
		"apps/other/loose.yaml":    pathCM("loose", "a: b"), // root path: depends on nothing
		"apps/other/.not-a-path.x": []byte("ignored"),
	})
	state := State{Namespace: stateNS, Inventory: "inv", Suspend: "suspend"}
	newSweeper := func() (*Sweeper, *requests, *applyOrder) {
		reqs, order := &requests{}, &applyOrder{}
		counted := rest.CopyConfig(cfg)
		counted.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return reqs.wrap(order.wrap(rt)) }
		scope, err := NewScope([]string{ns}, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		opts.State = state
		sw, err := NewSweeper(counted, src, scope, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sw.Close)
		return sw, reqs, order
	}
	sw, reqs, order := newSweeper()
	sweep := func(step string) (Report, map[string]int) {
		t.Helper()
		reqs.take()
		order.take()
		r := sw.Sweep(ctx)
		got := reqs.take()
		t.Logf("%s: %+v, requests %v", step, r.Summary, got)
		if r.Error != "" || len(r.StateErrors) > 0 {
			t.Fatalf("%s: %s %v", step, r.Error, r.StateErrors)
		}
		return r, got
	}
	idle := func(step string) {
		t.Helper()
		if r, got := sweep(step); len(got) != 0 || !r.Idle {
			t.Errorf("%s: %d requests %v, want 0", step, total(got), got)
		}
	}

	// 1. The dependency fails: its dependents are held, named; the root path goes on.
	r, _ := sweep("failing dependency")
	if res := resultOf(t, r, "db"); res.Action != apply.Failed || res.Path != "infra/db" {
		t.Errorf("db: %+v, want ERROR in path infra/db", res)
	}
	for _, n := range []string{"web", "late", "early"} {
		if res := resultOf(t, r, n); res.Action != Held || res.Reason != string(ReasonDependencyNotReady) || !strings.Contains(res.Message, "path infra/db is not ready") {
			t.Errorf("%s: %+v, want HELD DependencyNotReady naming infra/db", n, res)
		}
	}
	if res := resultOf(t, r, "loose"); res.Action != apply.Created {
		t.Errorf("loose: %+v, want CREATE (its path depends on nothing)", res)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.ConfigMap{}); err == nil {
		t.Errorf("web exists although its dependency failed")
	}
	if r.Summary.Held != 3 {
		t.Errorf("summary held %d, want 3", r.Summary.Held)
	}

	// 2. Fixed: the chain applies in order — db, then web's waves -2, 0, 1.
	src.commit(map[string][]byte{"infra/db/db.yaml": pathCM("db", "ok: fine")})
	r, _ = sweep("fixed dependency")
	for _, n := range []string{"db", "web", "late", "early"} {
		if res := resultOf(t, r, n); res.Action != apply.Created {
			t.Errorf("%s: %+v, want CREATE", n, res)
		}
	}
	idle("idle after the chain")

	// The order of the applies, seen again from a fresh chain.
	src.commit(map[string][]byte{
		"infra/db/db.yaml": pathCM("db", "ok: again"), "apps/web/web.yaml": pathCM("web", "a: c"),
		"apps/web/late.yaml":  pathCM("late", "a: c", `"argocd.argoproj.io/sync-wave": "1"`),
		"apps/web/early.yaml": pathCM("early", "a: c", `"argocd.argoproj.io/sync-wave": "-2"`),
	})
	reqs.take()
	sw.Sweep(ctx)
	if got, want := strings.Join(order.take(), ","), "db,early,web,late"; got != want {
		t.Errorf("apply order %s, want %s (dependency, then waves -2, 0, 1)", got, want)
	}
	idle("idle after the update")

	// 3. A file removed from git: its object is Orphaned with that commit, never deleted.
	src.commit(map[string][]byte{"apps/web/late.yaml": nil})
	removed, _ := src.Head(ctx)
	r, _ = sweep("late removed from git")
	if len(r.Orphans) != 1 || r.Orphans[0].Object.Name != "late" || r.Orphans[0].RemovedIn != removed || !r.Orphans[0].Created || r.Orphans[0].File != "apps/web/late.yaml" {
		t.Fatalf("orphans %+v, want late, created by the sweep, removed in %s", r.Orphans, removed)
	}
	if r.Summary.Orphaned != 1 {
		t.Errorf("summary orphaned %d", r.Summary.Orphaned)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("late was deleted (or not readable): %v; the sweep never prunes", err)
	}
	var inv corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: stateNS, Name: "inv"}, &inv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(inv.Data[InventoryKey], "late") || !strings.Contains(inv.Data[InventoryKey], removed) {
		t.Errorf("inventory ConfigMap does not list late removed in %s:\n%s", removed, inv.Data[InventoryKey])
	}
	idle("idle with an orphan")

	// 4. A new process (operator up's no-op): in sync from the inventory, zero applies.
	sw2, reqs2, _ := newSweeper()
	reqs2.take()
	r2 := sw2.Sweep(ctx)
	got := reqs2.take()
	t.Logf("restart: %+v, requests %v", r2.Summary, got)
	if sumVerb(got, "APPLY") != 0 || r2.Summary.Applied != 0 || r2.Summary.InSync != 4 {
		t.Errorf("restart: %d applies (%v), %d in sync; want 0 applies and all 4 in sync", sumVerb(got, "APPLY"), got, r2.Summary.InSync)
	}
	if len(r2.Orphans) != 1 || r2.Orphans[0].RemovedIn != removed {
		t.Errorf("restart: orphans %+v, want late removed in %s", r2.Orphans, removed)
	}
	sw2.Close()

	// 5. Suspend apps/web: an out-of-band edit is reported, not reverted, until resume.
	susp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: stateNS, Name: "suspend"}, Data: map[string]string{SuspendKey: "apps/web\n"}}
	drainFired(sw)
	if err := admin.Create(ctx, susp); err != nil {
		t.Fatal(err)
	}
	waitFired(t, sw, "the suspend ConfigMap")
	var web corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	web.Data["a"] = "edited"
	drainFired(sw)
	if err := admin.Update(ctx, &web, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	waitFired(t, sw, "the edit")
	r, _ = sweep("suspended")
	if res := resultOf(t, r, "web"); res.Action != Suspended || !strings.Contains(res.Message, suspendedDrift) || len(res.DriftedBy) != 1 || res.DriftedBy[0] != "kubectl-edit" {
		t.Errorf("web: %+v, want SUSPENDED with its drift by kubectl-edit", res)
	}
	if len(r.Suspended) != 1 || r.Suspended[0] != "apps/web" {
		t.Errorf("report suspended %v, want [apps/web]", r.Suspended)
	}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &web); err != nil || web.Data["a"] != "edited" {
		t.Errorf("suspended web was reverted: %v %v", web.Data, err)
	}
	if r.Summary.Applied != 0 {
		t.Errorf("a suspended sweep applied %d objects", r.Summary.Applied)
	}
	// resume: the drift is reverted
	susp.Data[SuspendKey] = ""
	drainFired(sw)
	if err := admin.Update(ctx, susp); err != nil {
		t.Fatal(err)
	}
	waitFired(t, sw, "resume")
	r, _ = sweep("resumed")
	if res := resultOf(t, r, "web"); res.Action != apply.Updated {
		t.Errorf("web after resume: %+v, want UPDATE (drift reverted)", res)
	}
	idle("idle after resume")
}

// drainFired drops a pending request (a health change settling an earlier sweep fires
// one), so the next waitFired waits for the action that follows.
func drainFired(sw *Sweeper) {
	select {
	case <-sw.Trigger().C():
	default:
	}
}

func waitFired(t *testing.T, sw *Sweeper, what string) {
	t.Helper()
	select {
	case <-sw.Trigger().C():
	case <-t.Context().Done():
	case <-timeAfter(10):
		t.Fatalf("%s did not fire the trigger", what)
	}
}

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }
