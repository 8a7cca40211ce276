package main

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// TestFleetTargets: the sweeps a pass owes are every registration, keyed <org>/<name> by
// its spec.org, and every cluster path of the repository, registered or not (a path with no
// registration gets a row, never a sweep of another org's cluster); a registration whose org
// cannot be a path segment is refused by name.
func TestFleetTargets(t *testing.T) {
	cr := func(name, org string) fleetv1.Cluster {
		return fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleetv1.ClusterSpec{Org: org}}
	}
	path := func(p string) fleet.Target {
		tg, err := fleet.TargetOf(p)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	got, refused := targets(
		[]fleetv1.Cluster{cr("b", "acme"), cr("ob", "other"), cr("bad", "../acme")},
		[]fleet.Target{path("orgs/acme/clusters/b/x.yaml"), path("orgs/acme/clusters/ob/x.yaml"), path("orgs/zed/clusters/z/x.yaml")},
	)
	var keys []string
	for k, tg := range got {
		keys = append(keys, k)
		if registered := tg.cr != nil; registered != (k == "acme/b" || k == "other/ob") {
			t.Errorf("%s: registration %v", k, tg.cr)
		}
		if tg.target.String() != k {
			t.Errorf("%s: target %s", k, tg.target)
		}
	}
	slices.Sort(keys)
	if want := []string{"acme/b", "acme/ob", "other/ob", "zed/z"}; !slices.Equal(keys, want) {
		t.Errorf("targets %v, want %v", keys, want)
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "Cluster bad") {
		t.Errorf("refused %v, want Cluster bad's", refused)
	}
}
