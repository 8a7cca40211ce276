package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
)

const shardLeases = "shard-leases"

// startShard runs the Kind controllers of one shard in-process, as `operator run
// --watch-namespaces --watch-label-selector` wires them: the shard's cache options and its
// own Lease. It returns the Lease name and the shard's log.
func startShard(t *testing.T, cfg *rest.Config, shard reconcile.Shard) (string, *syncBuffer) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, group); err != nil {
		t.Fatal(err)
	}
	direct, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cacheOpts, err := shard.CacheOptions(kinds.Builtin(), group, direct.RESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	lease := shard.LeaseID("universe-operator." + group)
	logs := &syncBuffer{}
	log := zap.New(zap.WriteTo(logs), zap.JSONEncoder(), zap.Level(zapcore.DebugLevel))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}}, Cache: cacheOpts,
		NewCache:       reconcile.TypedChildren(kinds.Builtin(), group),
		LeaderElection: true, LeaderElectionID: lease, LeaderElectionNamespace: shardLeases, LeaderElectionReleaseOnCancel: true,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reconcile.SetupKinds(mgr, kinds.Builtin(), group, log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager %s: %v", lease, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return lease, logs
}

// TestShards runs two shards on one apiserver, split by namespace and by label: each
// reconciles exactly its CRs, never another shard's or one no shard selects, and each elects
// its own leader through its own Lease.
func TestShards(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range []string{"shard-a", "shard-b", shardLeases} {
		if err := c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	// shard 1: namespace shard-a, label shard1; shard 2: namespaces shard-a and shard-b, label shard2
	one := reconcile.Shard{Namespaces: []string{"shard-a"}, LabelSelector: apply.ShardLabel + "=shard1"}
	two := reconcile.Shard{Namespaces: []string{"shard-a", "shard-b"}, LabelSelector: apply.ShardLabel + "=shard2"}
	cr := func(ns, name, shard string) *unstructured.Unstructured {
		u := serviceCR(name, false, nil)
		u.SetNamespace(ns)
		if shard != "" {
			u.SetLabels(map[string]string{apply.ShardLabel: shard})
		}
		return u
	}
	owner := map[string]string{ // CR -> the shard that must reconcile it ("" none)
		"shard-a/a1": "1", "shard-a/a2": "2", "shard-b/b2": "2",
		"shard-b/b1": "", // label shard1, but shard 1 does not watch shard-b
		"shard-a/a0": "", // no shard label
	}
	for _, u := range []*unstructured.Unstructured{cr("shard-a", "a1", "shard1"), cr("shard-a", "a2", "shard2"), cr("shard-b", "b2", "shard2"),
		cr("shard-b", "b1", "shard1"), cr("shard-a", "a0", "")} {
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	lease1, logs1 := startShard(t, cfg, one)
	lease2, logs2 := startShard(t, cfg, two)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("shard 1 log:\n%s\nshard 2 log:\n%s", logs1.String(), logs2.String())
		}
	})
	if lease1 == lease2 {
		t.Fatalf("both shards use the Lease %s", lease1)
	}
	deployment := func(key string) (*unstructured.Unstructured, error) {
		ns, name, _ := strings.Cut(key, "/")
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkDeployment)
		return u, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	poll(ctx, t, "the selected CRs' children", func() (bool, string) {
		for key, shard := range owner {
			if shard == "" {
				continue
			}
			if _, err := deployment(key); err != nil {
				return false, key + ": " + err.Error()
			}
		}
		return true, ""
	})
	t.Run("each elects its own leader", func(t *testing.T) {
		for _, name := range []string{lease1, lease2} {
			l := &coordinationv1.Lease{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: shardLeases, Name: name}, l); err != nil {
				t.Fatalf("Lease %s: %v", name, err)
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				t.Errorf("Lease %s has no holder", name)
			}
		}
	})
	time.Sleep(3 * time.Second) // a reconcile of an unselected CR would have run by now
	t.Run("no shard touches a CR it does not select", func(t *testing.T) {
		for key, shard := range owner {
			if shard != "" {
				continue
			}
			if _, err := deployment(key); !apierrors.IsNotFound(err) {
				t.Errorf("%s, selected by no shard, has a Deployment (err %v)", key, err)
			}
		}
	})
	t.Run("each shard's log names only its CRs", func(t *testing.T) {
		for shard, logs := range map[string]*syncBuffer{"1": logs1, "2": logs2} {
			names := map[string]bool{}
			for _, line := range strings.Split(logs.String(), "\n") {
				var l struct {
					Msg       string `json:"msg"`
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "Reconciled" {
					names[l.Namespace+"/"+l.Name] = true
				}
			}
			for key, want := range owner {
				if names[key] != (want == shard) {
					t.Errorf("shard %s reconciled %s: %v, want %v", shard, key, names[key], want == shard)
				}
			}
			if len(names) == 0 {
				t.Errorf("shard %s reconciled nothing", shard)
			}
			fmt.Fprintf(os.Stderr, "shard %s reconciled %v\n", shard, names)
		}
	})
}

func TestShardLeaseID(t *testing.T) {
	base := "universe-operator.hanzo.ai"
	cases := map[string]struct {
		shard reconcile.Shard
		want  string // prefix
	}{
		"none: the base":   {reconcile.Shard{}, base},
		"label shard":      {reconcile.Shard{LabelSelector: apply.ShardLabel + "=shard1"}, base + "-shard1-"},
		"main (not key)":   {reconcile.Shard{LabelSelector: "!" + apply.ShardLabel}, base + "-sharding-universe-dev-key-"},
		"namespaces":       {reconcile.Shard{Namespaces: []string{"devnet", "testnet"}}, base + "-devnet-testnet-"},
		"namespace order ": {reconcile.Shard{Namespaces: []string{"testnet", "devnet"}}, base + "-devnet-testnet-"},
	}
	seen := map[string]string{}
	for name, tc := range cases {
		got := tc.shard.LeaseID(base)
		if !strings.HasPrefix(got, tc.want) || (tc.want == base && got != base) {
			t.Errorf("%s: LeaseID = %q, want prefix %q", name, got, tc.want)
		}
		if len(got) > 253 {
			t.Errorf("%s: %q is too long for a Lease name", name, got)
		}
		seen[got] += name + ";"
	}
	if len(seen) != len(cases)-1 { // the two namespace orders are the same shard
		t.Errorf("Lease names collide or differ wrongly: %v", seen)
	}
	if err := (reconcile.Shard{LabelSelector: "a in ("}).Validate(); err == nil {
		t.Error("a malformed selector is accepted")
	}
	if err := (reconcile.Shard{Namespaces: []string{"Bad_NS"}}).Validate(); err == nil {
		t.Error("a malformed namespace is accepted")
	}
}
