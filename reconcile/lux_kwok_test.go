package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

const luxNS = "lux-kwok"

var (
	gvkLuxRuntime  = schema.GroupVersionKind{Group: "bootno.de", Version: "v1", Kind: "LuxRuntime"}
	gvkLuxNetwork  = schema.GroupVersionKind{Group: "lux.network", Version: "v1alpha1", Kind: "LuxNetwork"}
	gvkStatefulSet = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
)

// installLuxNetworkCRDs applies the luxfi CRDs and waits until LuxNetwork is served.
func installLuxNetworkCRDs(t *testing.T, cfg *rest.Config, c client.Client) {
	t.Helper()
	crds, err := kinds.LuxNetworkCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for i := range crds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&crds[i])
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		delete(u.Object, "status")
		objs = append(objs, u)
	}
	for _, r := range (&apply.Applier{Client: c, Manager: "test"}).Apply(context.Background(), objs) {
		if r.Err != nil {
			t.Fatalf("install %s: %v", r.Object, r.Err)
		}
	}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		mc, err := client.New(cfg, client.Options{})
		if err != nil {
			return false, err
		}
		_, err = mc.RESTMapper().RESTMapping(gvkLuxNetwork.GroupKind(), gvkLuxNetwork.Version)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("lux.network CRDs never served: %v", err)
	}
}

// luxRuntimeCR is a five-validator LuxRuntime with staking keys, a seed restore, hourly
// snapshots and chains: the whole working set. kwok reports every init container Completed
// and the node Ready (testbed stages), as a kubelet would for a healthy validator.
func luxRuntimeCR() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bootno.de/v1", "kind": "LuxRuntime",
		"metadata": map[string]any{"name": "mainnet", "namespace": luxNS},
		"spec": map[string]any{
			"networkID": int64(1), "validators": int64(5),
			"image":            map[string]any{"repository": "ghcr.io/luxfi/node", "tag": "v1.23.23"},
			"storage":          map[string]any{"size": "10Gi", "storageClassName": testbed.StorageClass},
			"genesisConfigMap": "mainnet-genesis",
			"chains":           []any{map[string]any{"chainID": "C", "genesisConfigMap": "mainnet-chain-c"}},
			"staking":          map[string]any{"secretName": "mainnet-staking"},
			"seedRestore": map[string]any{"enabled": true, "sources": []any{map[string]any{
				"type": "https", "url": "https://seeds.example/mainnet.tar.zst",
				"expectedHash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			}}},
			"replication": map[string]any{"enabled": true, "s3Endpoint": "https://s3.example", "s3Bucket": "snaps",
				"credentialsSecret": "snap-creds", "snapshotIntervalSeconds": int64(3600)},
			"upgradeStrategy": map[string]any{"maxUnavailable": int64(1)},
			"startupGate":     map[string]any{"timeoutSeconds": int64(5)},
		},
	}}
}

// luxNetworkCR is a five-validator luxfi LuxNetwork.
func luxNetworkCR() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "lux.network/v1alpha1", "kind": "LuxNetwork",
		"metadata": map[string]any{"name": "luxd", "namespace": luxNS},
		"spec": map[string]any{
			"networkId": int64(3), "validators": int64(5),
			"image":         map[string]any{"tag": "v1.23.23"},
			"storage":       map[string]any{"size": "10Gi", "storageClass": testbed.StorageClass},
			"staking":       map[string]any{"secretName": "luxd-staking"},
			"chains":        []any{map[string]any{"blockchainId": "2Y625Kvdd4wZ5LKx9kLSf1jGALyARmXVN1YsTb4F3Hzv4bPDbp", "alias": "zoo"}},
			"upgradeConfig": map[string]any{"durangoTimestamp": int64(0)},
		},
	}}
}

// TestLuxNetworksBecomeReady runs the Kind controllers on the full control plane: a
// five-validator LuxRuntime and a five-validator LuxNetwork become Ready with every
// validator Ready, the StatefulSets roll one at a time, and a config change rolls the
// LuxRuntime's validators without ever having more than one of them not Ready.
func TestLuxNetworksBecomeReady(t *testing.T) {
	cfg, _ := testbed.FullCluster(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, cfg, c)
	installLuxNetworkCRDs(t, cfg, c)
	logs := startKinds(t, cfg)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("DUMP_LOGS") != "" {
			t.Logf("operator log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": luxNS}}}
	// the namespace first: the applier applies a batch concurrently
	for _, batch := range [][]*unstructured.Unstructured{{ns}, {luxRuntimeCR(), luxNetworkCR()}} {
		for _, r := range (&apply.Applier{Client: c, Manager: kinds.ManagerGitOps}).Apply(ctx, batch) {
			if r.Err != nil {
				t.Fatalf("apply %s: %v", r.Object, r.Err)
			}
		}
	}
	getNS := func(gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, c.Get(ctx, client.ObjectKey{Namespace: luxNS, Name: name}, u)
	}
	ready := func(gvk schema.GroupVersionKind, name string) func() (bool, string) {
		return func() (bool, string) {
			cr, err := getNS(gvk, name)
			if err != nil {
				return false, err.Error()
			}
			cond, ok := readyCondition(cr)
			if !ok || cond.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("Ready=%+v", cond)
			}
			sts, err := getNS(gvkStatefulSet, name)
			if err != nil {
				return false, err.Error()
			}
			r, _, _ := unstructured.NestedInt64(sts.Object, "status", "readyReplicas")
			if r != 5 {
				t.Fatalf("%s Ready with %d/5 validators ready", name, r)
			}
			return true, ""
		}
	}
	start := time.Now()
	poll(ctx, t, "LuxRuntime mainnet Ready", ready(gvkLuxRuntime, "mainnet"))
	poll(ctx, t, "LuxNetwork luxd Ready", ready(gvkLuxNetwork, "luxd"))
	t.Logf("both 5-validator networks Ready in %s", time.Since(start).Round(time.Second))

	for _, name := range []string{"mainnet", "luxd"} {
		sts, err := getNS(gvkStatefulSet, name)
		if err != nil {
			t.Fatal(err)
		}
		// maxUnavailable 1 is the controller's own one-at-a-time roll: no field the apiserver
		// could drop (MaxUnavailableStatefulSet is off here), so nothing drifts.
		if typ, _, _ := unstructured.NestedString(sts.Object, "spec", "updateStrategy", "type"); typ != "RollingUpdate" {
			t.Errorf("StatefulSet %s updateStrategy %q", name, typ)
		}
		if ru, found, _ := unstructured.NestedFieldNoCopy(sts.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); found {
			t.Errorf("StatefulSet %s has maxUnavailable %v for 1", name, ru)
		}
		if p, _, _ := unstructured.NestedString(sts.Object, "spec", "podManagementPolicy"); p != "Parallel" {
			t.Errorf("StatefulSet %s podManagementPolicy %q", name, p)
		}
	}
	luxd, _ := getNS(gvkStatefulSet, "luxd")
	if sel, _, _ := unstructured.NestedStringMap(luxd.Object, "spec", "selector", "matchLabels"); sel["app.kubernetes.io/managed-by"] != "lux-operator" || sel["app.kubernetes.io/name"] != "luxd" {
		t.Errorf("LuxNetwork StatefulSet selector %v is not the luxfi operator's", sel)
	}

	t.Run("a config change rolls one validator at a time", func(t *testing.T) {
		before, err := getNS(gvkStatefulSet, "mainnet")
		if err != nil {
			t.Fatal(err)
		}
		oldRev, _, _ := unstructured.NestedString(before.Object, "status", "updateRevision")
		cr, err := getNS(gvkLuxRuntime, "mainnet")
		if err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"spec":{"nodeFlags":{"log-level":"debug"}}}`)
		if err := c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		minReady := int64(5)
		poll(ctx, t, "rollout done", func() (bool, string) {
			sts, err := getNS(gvkStatefulSet, "mainnet")
			if err != nil {
				return false, err.Error()
			}
			st := func(f string) int64 { v, _, _ := unstructured.NestedInt64(sts.Object, "status", f); return v }
			minReady = min(minReady, st("readyReplicas"))
			rev, _, _ := unstructured.NestedString(sts.Object, "status", "updateRevision")
			cur, _, _ := unstructured.NestedString(sts.Object, "status", "currentRevision")
			done := rev != oldRev && cur == rev && st("updatedReplicas") == 5 && st("readyReplicas") == 5
			return done, fmt.Sprintf("updated %d ready %d rev %s cur %s", st("updatedReplicas"), st("readyReplicas"), rev, cur)
		})
		if minReady < 4 {
			t.Errorf("%d validators ready at one point during the rollout, want at least 4 (maxUnavailable 1)", minReady)
		}
		t.Logf("rollout: at least %d of 5 validators ready throughout", minReady)
		poll(ctx, t, "LuxRuntime Ready after the rollout", ready(gvkLuxRuntime, "mainnet"))
	})
}
