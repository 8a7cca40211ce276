package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// nsRequests counts the requests the Kind controllers send about one namespace, by
// what they are: "APPLY deployments", "DRYRUN services", "GET deployments",
// "STATUS services" (a write of a CR's status), "POST events" …
type nsRequests struct {
	ns string
	mu sync.Mutex
	n  map[string]int
}

func (r *nsRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if strings.Contains(req.URL.Path, "/namespaces/"+r.ns+"/") {
			r.mu.Lock()
			if r.n == nil {
				r.n = map[string]int{}
			}
			r.n[kindOfRequest(req)]++
			r.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func kindOfRequest(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	resource, sub := "", ""
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			resource = parts[i+2]
			if i+4 < len(parts) {
				sub = parts[i+4]
			}
		}
	}
	verb := req.Method
	switch {
	case sub == "status":
		verb = "STATUS"
	case req.URL.Query().Has("dryRun"):
		verb = "DRYRUN"
	case req.Method == http.MethodPatch && strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch"):
		verb = "APPLY"
	}
	return verb + " " + resource
}

// take returns the counts since the last take.
func (r *nsRequests) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

func tally(n map[string]int) string {
	var keys []string
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s=%d", k, n[k]))
	}
	return strings.Join(out, " ")
}

// TestKindControllerRequests counts, on the real apiserver with pods Ready on kwok, what
// the Kind controllers send for a few Service CRs: on the way to Ready one apply per
// child (no get, no dry-run) and at most two status writes per CR; a reconcile of every
// CR with nothing changed sends nothing; drift on a child costs one apply, which reverts it.
func TestKindControllerRequests(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	const ns = "ctrl-requests"
	reqs := &nsRequests{ns: ns}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	logs, stop := runKinds(t, counted)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	names := []string{"req-a", "req-b", "req-c"}
	objs := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}}
	children := 0
	for i, name := range names {
		cr := serviceCR(name, i == 1, nil) // req-b autoscales: a third child
		cr.SetNamespace(ns)
		objs = append(objs, cr)
		children += 2
		if i == 1 {
			children++
		}
	}
	applier := &apply.Applier{Client: c, Manager: kinds.ManagerGitOps}
	for _, batch := range [][]*unstructured.Unstructured{objs[:1], objs[1:]} { // the Namespace first
		for _, r := range applier.Apply(ctx, batch) {
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Object, r.Err)
			}
		}
	}
	allReady := func(what string) {
		poll(ctx, t, what, func() (bool, string) {
			for _, name := range names {
				cr := &unstructured.Unstructured{}
				cr.SetGroupVersionKind(gvkService)
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cr); err != nil {
					return false, err.Error()
				}
				cond, ok := readyCondition(cr)
				if !ok || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != cr.GetGeneration() {
					return false, fmt.Sprintf("%s Ready=%+v", name, cond)
				}
			}
			// req-b's HPA scales its Deployment up to minReplicas after the first
			// rollout: a rollout of its own, not the controller's, to wait out
			d := &unstructured.Unstructured{}
			d.SetGroupVersionKind(gvkDeployment)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "req-b"}, d); err != nil {
				return false, err.Error()
			}
			if ready, _, _ := unstructured.NestedInt64(d.Object, "status", "readyReplicas"); ready < 2 {
				return false, fmt.Sprintf("req-b's Deployment has %d ready replicas, waiting for the HPA's 2", ready)
			}
			return true, ""
		})
	}
	allReady("every CR Ready")
	time.Sleep(2 * time.Second) // let the last reconciles, woken by the last status writes, finish

	t.Run("on the way to Ready: one apply per child, at most two status writes per CR", func(t *testing.T) {
		n := reqs.take()
		t.Logf("requests: %s", tally(n))
		applies := n["APPLY deployments"] + n["APPLY services"] + n["APPLY horizontalpodautoscalers"]
		if applies != children {
			t.Errorf("%d applies for %d children, want one each: %s", applies, children, tally(n))
		}
		for k, v := range n {
			if strings.HasPrefix(k, "DRYRUN ") || (strings.HasPrefix(k, "GET ") && v > 0) {
				t.Errorf("%d %s: a child this process applied is read from its cache, never dry-run", v, k)
			}
		}
		// two per CR (the first look, Ready), and two more for req-b's second rollout
		if st := n["STATUS services"]; st > 2*len(names)+2 || st < len(names) {
			t.Errorf("%d status writes for %d CRs, want one or two each (and two for the HPA's rollout)", st, len(names))
		}
	})

	reconciled := func() int {
		n := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"msg":"Reconciled"`) && strings.Contains(line, `"namespace":"`+ns+`"`) {
				n++
			}
		}
		return n
	}
	t.Run("a reconcile of unchanged CRs sends nothing", func(t *testing.T) {
		before := reconciled()
		for _, name := range names {
			cr := &unstructured.Unstructured{}
			cr.SetGroupVersionKind(gvkService)
			cr.SetNamespace(ns)
			cr.SetName(name)
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.openuniverse.dev/touched":"%d"}}}`, time.Now().UnixNano())
			if err := c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
		poll(ctx, t, "a reconcile of each touched CR", func() (bool, string) {
			now := reconciled()
			return now >= before+len(names), fmt.Sprintf("%d reconciles since", now-before)
		})
		time.Sleep(2 * time.Second)
		if n := reqs.take(); len(n) > 0 {
			t.Errorf("reconciling unchanged CRs sent %s, want nothing", tally(n))
		}
	})

	t.Run("drift on a child is reverted with one apply", func(t *testing.T) {
		d := &unstructured.Unstructured{}
		d.SetGroupVersionKind(gvkDeployment)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "req-a"}, d); err != nil {
			t.Fatal(err)
		}
		want, _, _ := unstructured.NestedInt64(d.Object, "spec", "minReadySeconds")
		if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"minReadySeconds":77}}`)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
		poll(ctx, t, "minReadySeconds reverted", func() (bool, string) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(gvkDeployment)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "req-a"}, live); err != nil {
				return false, err.Error()
			}
			got, _, _ := unstructured.NestedInt64(live.Object, "spec", "minReadySeconds")
			return got == want, fmt.Sprintf("minReadySeconds=%d", got)
		})
		allReady("every CR Ready after the revert")
		time.Sleep(2 * time.Second)
		n := reqs.take()
		t.Logf("requests: %s", tally(n))
		if n["APPLY deployments"] != 1 || n["APPLY services"]+n["APPLY horizontalpodautoscalers"] != 0 || n["DRYRUN deployments"] != 0 {
			t.Errorf("reverting one Deployment sent %s, want one apply of it", tally(n))
		}
		poll(ctx, t, "drift log line naming kubectl-edit", func() (bool, string) {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, `"Reverted drift"`) && strings.Contains(line, "Deployment/"+ns+"/req-a") && strings.Contains(line, "kubectl-edit") {
					return true, ""
				}
			}
			return false, "no drift line"
		})
	})

	t.Run("a restart compares each child from the cache: one dry-run, no get, no write", func(t *testing.T) {
		stop()
		reqs.take()
		logs, stop = runKinds(t, counted)
		poll(ctx, t, "a reconcile of each CR by the new process", func() (bool, string) {
			now := reconciled()
			return now >= len(names), fmt.Sprintf("%d reconciles", now)
		})
		time.Sleep(2 * time.Second)
		n := reqs.take()
		t.Logf("requests: %s", tally(n))
		dry := n["DRYRUN deployments"] + n["DRYRUN services"] + n["DRYRUN horizontalpodautoscalers"]
		if dry != children {
			t.Errorf("%d dry-runs for %d children after a restart, want one each: %s", dry, children, tally(n))
		}
		for k, v := range n {
			if strings.HasPrefix(k, "GET ") || strings.HasPrefix(k, "APPLY ") || strings.HasPrefix(k, "STATUS ") {
				t.Errorf("%d %s after a restart with every child in sync, want none", v, k)
			}
		}
	})
}
