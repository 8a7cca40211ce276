package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// TestInstallShards: `install --shards 2` renders the main Deployment, which skips sharded
// CRs, and two shard Deployments that run the Kind controllers for their label, with pod
// selectors that never overlap and Leases of their own; the arguments are run's flags.
func TestInstallShards(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--shards", "2", "--replicas", "2", "--log-level", "debug")
	var deps []*appsv1.Deployment
	for _, o := range objects(t, manifests) {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			t.Fatal(err)
		}
		deps = append(deps, d)
	}
	if len(deps) != 3 {
		t.Fatalf("%d Deployments, want the main one and 2 shards", len(deps))
	}
	want := map[string]struct{ selector, controllers string }{
		"universe-operator":        {"!" + apply.ShardLabel, "kinds,gitops,imageupdate,tenants"},
		"universe-operator-shard1": {apply.ShardLabel + "=shard1", "kinds"},
		"universe-operator-shard2": {apply.ShardLabel + "=shard2", "kinds"},
	}
	leases := map[string]string{}
	for _, d := range deps {
		w, ok := want[d.Name]
		if !ok {
			t.Errorf("unexpected Deployment %s", d.Name)
			continue
		}
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		o := &runOptions{}
		o.BindFlags(fs)
		if err := fs.Parse(d.Spec.Template.Spec.Containers[0].Args[1:]); err != nil {
			t.Fatalf("%s: operator run refuses %q: %v", d.Name, d.Spec.Template.Spec.Containers[0].Args, err)
		}
		if o.Shard.LabelSelector != w.selector || strings.Join(o.Controllers, ",") != w.controllers || o.LogLevel != "debug" {
			t.Errorf("%s: selector %q controllers %q log %q, want %q %q debug", d.Name, o.Shard.LabelSelector, o.Controllers, o.LogLevel, w.selector, w.controllers)
		}
		if !o.LeaderElect {
			t.Errorf("%s: no leader election with 2 replicas", d.Name)
		}
		lease := o.Shard.LeaseID("universe-operator." + kinds.DefaultAPIGroup)
		if other, dup := leases[lease]; dup {
			t.Errorf("%s and %s share the Lease %s", d.Name, other, lease)
		}
		leases[lease] = d.Name
		sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
		for _, other := range deps {
			if other.Name != d.Name && sel.Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("%s selects the pods of %s", d.Name, other.Name)
			}
		}
	}
}
