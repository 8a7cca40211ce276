package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

const takeoverNS = "takeover"

// The previous operators' field managers: the Rust operator server-side applies as
// hanzo-operator; the Go operator (kubebuilder, CreateOrUpdate) writes as "manager".
const (
	managerRust = "hanzo-operator"
	managerGo   = "manager"
)

const takeoverLuxRuntime = `apiVersion: bootno.de/v1
kind: LuxRuntime
metadata: {name: mainnet, namespace: lux}
spec:
  networkID: 1
  validators: 5
  image: {repository: ghcr.io/luxfi/node, tag: v1.13.0}
  storage: {size: 500Gi}
`

// takeoverCRs returns the CRs of the takeover, moved into takeoverNS: a Service and a
// Datastore the Rust operator ran, a HanzoDatastore and a HanzoDNS the Go operator ran, a
// LuxRuntime.
func takeoverCRs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	docs := []string{takeoverLuxRuntime}
	for _, f := range []string{"hip-0400-service-crd.yaml", "hip-0401-datastore-crd.yaml", "hanzo_v1alpha1_hanzodatastore.yaml", "hanzo_v1alpha1_hanzodns.yaml"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "takeover", f))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(takeoverNS)
		out = append(out, u)
	}
	return out
}

// childKinds are the kinds the takeover's children have.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "ConfigMap"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, {Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
}

type seen struct {
	uid      types.UID
	rv       string
	managers []string
}

// snapshot lists every child-kind object of the namespace.
func snapshot(ctx context.Context, t *testing.T, c client.Client) map[string]seen {
	t.Helper()
	out := map[string]seen{}
	for _, gvk := range childKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, l, client.InNamespace(takeoverNS)); err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			if o.GetKind() == "Service" && o.GetName() == "kubernetes" {
				continue
			}
			var ms []string
			for _, mf := range o.GetManagedFields() {
				ms = append(ms, mf.Manager+"/"+string(mf.Operation))
			}
			out[gvk.Kind+"/"+o.GetName()] = seen{o.GetUID(), o.GetResourceVersion(), ms}
		}
	}
	return out
}

// TestTakeover takes over a namespace from the Rust and Go operators on a real apiserver:
// the children are pre-created as those operators left them (names, labels, selectors, owner
// references, their field managers), with a Go-era HanzoDatastore whose StatefulSet serves
// through <cr>-headless. `diff --takeover` reports them and writes nothing; the controllers'
// first reconcile deletes and recreates nothing, adopts the children, keeps the immutable
// serviceName and reports the leftover Service; a second reconcile writes nothing.
func TestTakeover(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": takeoverNS}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	renderer := render.Renderer{Registry: kinds.Builtin(), APIGroup: group}
	crs := takeoverCRs(t)
	for _, cr := range crs {
		if err := c.Create(ctx, cr, client.FieldOwner("kubectl-create")); err != nil {
			t.Fatalf("create %s: %v", cr.GetName(), err)
		}
		rd := renderer.RenderOne(source.Object{Obj: cr, File: "test"})
		if rd.Err != nil || rd.Halt != nil || len(rd.Objects) == 0 {
			t.Fatalf("render %s: %v %v", cr.GetName(), rd.Err, rd.Halt)
		}
		for _, child := range rd.Objects {
			switch cr.GetKind() {
			case "HanzoDatastore": // Go era: served through <cr>-headless
				if child.GetKind() == "StatefulSet" {
					if err := unstructured.SetNestedField(child.Object, cr.GetName()+"-headless", "spec", "serviceName"); err != nil {
						t.Fatal(err)
					}
				}
				if child.GetKind() == "Service" && child.GetName() == cr.GetName()+"-hs" {
					child.SetName(cr.GetName() + "-headless")
				}
				fallthrough
			case "HanzoDNS":
				err = c.Create(ctx, child, client.FieldOwner(managerGo))
			default:
				err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(child), client.FieldOwner(managerRust), client.ForceOwnership)
			}
			if err != nil {
				t.Fatalf("pre-create %s %s: %v", child.GetKind(), child.GetName(), err)
			}
		}
	}
	before := snapshot(ctx, t, c)
	if len(before) < 15 {
		t.Fatalf("only %d children pre-created: %v", len(before), before)
	}

	t.Run("diff --takeover reports the children and writes nothing", func(t *testing.T) {
		rs, err := (&render.Differ{Client: c, Renderer: renderer}).Takeover(ctx, takeoverNS)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]render.TakeoverResult{}
		for _, r := range rs {
			got[r.Object.Kind+"/"+r.Object.Name] = r
			if r.Err != nil {
				t.Errorf("%s: %v", r.Object, r.Err)
			}
		}
		for name := range before {
			r, ok := got[name]
			switch {
			case name == "Service/main-db-headless":
				if r.Change != render.ChangeLeftover || !slices.Contains(r.Writers, managerGo) {
					t.Errorf("%s: %s by %v, want leftover by %s", name, r.Change, r.Writers, managerGo)
				}
			case !ok:
				t.Errorf("%s is not reported", name)
			case r.Change != render.ChangeOwnership:
				t.Errorf("%s: %s, want field ownership only\n%s", name, r.Change, r.Diff)
			}
		}
		if r := got["Service/main-db-hs"]; r.Change != render.ChangeCreate {
			t.Errorf("Service/main-db-hs: %q, want create", r.Change)
		}
		sts := got["StatefulSet/main-db"]
		if len(sts.Kept) != 1 || sts.Kept[0].Field != "spec.serviceName" || sts.Kept[0].Live != `"main-db-headless"` || sts.Kept[0].Built != `"main-db-hs"` {
			t.Errorf("StatefulSet/main-db kept %+v, want spec.serviceName main-db-headless over main-db-hs", sts.Kept)
		}
		s := render.CountTakeover(rs)
		if s.ExitCode() != 1 || s[render.ChangeCreate] != 1 || s[render.ChangeDelete] != 0 || s[render.ChangeConfigure] != 0 {
			t.Errorf("summary %s, exit %d; want one create (main-db-hs), nothing else", s, s.ExitCode())
		}
		var out strings.Builder
		if err := render.WriteTakeover(&out, rs); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"► bootno.de/v1/LuxRuntime/takeover/mainnet", "field ownership  StatefulSet/takeover/mainnet (from hanzo-operator)",
			`kept immutable   StatefulSet/takeover/main-db spec.serviceName: kept "main-db-headless" (built "main-db-hs")`,
			"leftover         Service/takeover/main-db-headless (written by manager; not applied by universe-operator, left in place)"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the report lacks %q:\n%s", want, out.String())
			}
		}
		t.Logf("operator diff --takeover:\n%s", out.String())
		if after := snapshot(ctx, t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("diff --takeover wrote:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("render --from-cluster reads the CR and builds what was pre-created", func(t *testing.T) {
		mapper, err := render.KindMapper(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reg := kinds.Builtin()
		for arg, kind := range map[string]string{"hanzodns/hanzodns-sample": "HanzoDNS", "hanzodatastores/main-db": "HanzoDatastore",
			"hsvc/example": "Service", "luxruntime/mainnet": "LuxRuntime", "LuxRuntime.bootno.de/mainnet": "LuxRuntime", "datastore/datastore": "Datastore"} {
			cr, err := render.FetchCR(ctx, c, mapper, reg, group, takeoverNS, arg)
			if err != nil {
				t.Errorf("%s: %v", arg, err)
				continue
			}
			if cr.GetKind() != kind || cr.GetUID() == "" {
				t.Errorf("%s: got %s %s uid %q", arg, cr.GetKind(), cr.GetName(), cr.GetUID())
			}
			rd := renderer.RenderOne(source.Object{Obj: cr, File: "cluster"})
			for _, o := range rd.Objects {
				if _, ok := before[o.GetKind()+"/"+o.GetName()]; !ok && o.GetName() != "main-db-hs" {
					t.Errorf("%s renders %s %s, which the previous operator did not make", arg, o.GetKind(), o.GetName())
				}
				if refs := o.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != cr.GetUID() {
					t.Errorf("%s: %s %s owner %v, want the live CR's uid", arg, o.GetKind(), o.GetName(), refs)
				}
			}
		}
		if _, err := render.FetchCR(ctx, c, mapper, reg, group, takeoverNS, "configmap/x"); err == nil || !strings.Contains(err.Error(), "no Kind of universe") {
			t.Errorf("a core kind: %v", err)
		}
		if _, err := render.FetchCR(ctx, c, mapper, reg, group, takeoverNS, "hanzodns/absent"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("an absent CR: %v", err)
		}
		net, err := render.FetchNetwork(ctx, c, reg, group, takeoverNS, "mainnet")
		if err != nil || net.GetKind() != "LuxRuntime" || net.GroupVersionKind().Group != "bootno.de" {
			t.Errorf("<ns> <name>: %v %v", net, err)
		}
		if after := snapshot(ctx, t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Error("render --from-cluster wrote")
		}
	})

	logs := startKinds(t, cfg)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})

	t.Run("first reconcile: nothing deleted or recreated, children adopted, immutable kept, leftover reported", func(t *testing.T) {
		poll(ctx, t, "every child applied by universe-operator", func() (bool, string) {
			now := snapshot(ctx, t, c)
			for name, s := range now {
				if name != "Service/main-db-headless" && !slices.Contains(s.managers, kinds.ManagerKinds+"/Apply") {
					return false, name + " not adopted: " + strings.Join(s.managers, ",")
				}
			}
			return len(now) == len(before)+1, fmt.Sprintf("%d objects", len(now))
		})
		after := snapshot(ctx, t, c)
		for name, b := range before {
			a, ok := after[name]
			if !ok {
				t.Errorf("%s was deleted", name)
				continue
			}
			if a.uid != b.uid {
				t.Errorf("%s was recreated (uid %s -> %s)", name, b.uid, a.uid)
			}
		}
		if _, ok := after["Service/main-db-hs"]; !ok {
			t.Error("the headless Service main-db-hs the build adds is missing")
		}
		sts, err := get(ctx, c, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "main-db")
		if err == nil {
			if n, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName"); n != "main-db-headless" {
				t.Errorf("serviceName %q", n)
			}
		}
		poll(ctx, t, "HanzoDatastore main-db reports the kept field and the leftover", func() (bool, string) {
			cr, err := getIn(ctx, c, schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: "HanzoDatastore"}, "main-db")
			if err != nil {
				return false, err.Error()
			}
			kept, left := condition(cr, reconcile.ConditionImmutableFieldsKept), condition(cr, reconcile.ConditionLeftoverChildren)
			ok := kept["reason"] == reconcile.ReasonImmutableFieldKept &&
				strings.Contains(fmt.Sprint(kept["message"]), `StatefulSet/takeover/main-db spec.serviceName: kept "main-db-headless" (built "main-db-hs")`) &&
				left["status"] == "True" && strings.Contains(fmt.Sprint(left["message"]), "Service/takeover/main-db-headless")
			return ok, fmt.Sprintf("kept %v left %v", kept, left)
		})
		for _, name := range []string{"example", "datastore", "hanzodns-sample", "mainnet"} {
			for _, cr := range crs {
				if cr.GetName() != name {
					continue
				}
				live, err := getIn(ctx, c, cr.GroupVersionKind(), name)
				if err != nil {
					t.Fatal(err)
				}
				if k := condition(live, reconcile.ConditionImmutableFieldsKept); k != nil {
					t.Errorf("%s reports kept fields: %v", name, k)
				}
				if l := condition(live, reconcile.ConditionLeftoverChildren); l != nil {
					t.Errorf("%s reports leftovers: %v", name, l)
				}
			}
		}
		poll(ctx, t, "Events AdoptedChildren, ImmutableFieldKept, LeftoverChildren", func() (bool, string) {
			evs := &eventsv1.EventList{}
			if err := c.List(ctx, evs, client.InNamespace(takeoverNS)); err != nil {
				return false, err.Error()
			}
			reasons := map[string]bool{}
			for _, e := range evs.Items {
				reasons[e.Regarding.Name+"/"+e.Reason] = true
			}
			ok := reasons["main-db/"+reconcile.EventAdopted] && reasons["main-db/"+reconcile.EventImmutableFieldKept] &&
				reasons["main-db/"+reconcile.EventLeftover] && reasons["hanzodns-sample/"+reconcile.EventAdopted]
			return ok, fmt.Sprint(reasons)
		})
		// this operator watches every namespace: count the deletes of its own only (another
		// test's CRs, e.g. TestTerminalPhaseErrorStalls's in stall-test, reconcile here too)
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `"Deleted child`) && strings.Contains(line, `"namespace":"`+takeoverNS+`"`) {
				t.Errorf("the first reconcile deleted a child: %s", line)
			}
		}
	})

	t.Run("second reconcile writes nothing", func(t *testing.T) {
		settled := snapshot(ctx, t, c)
		mark := len(logs.String())
		counts := func() map[string]int {
			n := map[string]int{}
			for _, line := range strings.Split(logs.String()[mark:], "\n") {
				var l struct {
					Msg  string `json:"msg"`
					Name string `json:"name"`
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Reconciled" {
					n[l.Name]++
				}
			}
			return n
		}
		for _, cr := range crs {
			live, err := getIn(ctx, c, cr.GroupVersionKind(), cr.GetName())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/touch":"1"}}}`))); err != nil {
				t.Fatal(err)
			}
		}
		poll(ctx, t, "every CR reconciled again", func() (bool, string) {
			n := counts()
			for _, cr := range crs {
				if n[cr.GetName()] == 0 {
					return false, fmt.Sprint(n)
				}
			}
			return true, ""
		})
		if after := snapshot(ctx, t, c); fmt.Sprint(after) != fmt.Sprint(settled) {
			t.Errorf("the second reconcile wrote:\nbefore %v\nafter  %v", settled, after)
		}
		for _, msg := range []string{`"Applied child"`, `"Updated child"`, `"Reverted drift"`, `"Adopted child"`, `"Deleted child`} {
			if strings.Contains(logs.String()[mark:], msg) {
				t.Errorf("the second reconcile logged %s", msg)
			}
		}
	})
}

func getIn(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, c.Get(ctx, client.ObjectKey{Namespace: takeoverNS, Name: name}, u)
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		if m, ok := r.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}
