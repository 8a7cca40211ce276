package kinds_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/hip"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

func hipRef(kind string) kinds.Ref { return kinds.Ref{Placement: kinds.PlacementHIP, Kind: kind} }

// withoutOwners returns the objects with their owner references dropped: the one field where
// the canonical and HIP placements of a Kind differ (the owner's apiVersion).
func withoutOwners(objs []*unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		c := o.DeepCopy()
		c.SetOwnerReferences(nil)
		out = append(out, c.Object)
	}
	return out
}

// TestLuxPlacementsBuildAlike: a LuxRuntime or NodeFleet at <universe>/v1 goes through the
// canonical builder and materializes the same objects as at bootno.de/v1.
func TestLuxPlacementsBuildAlike(t *testing.T) {
	lux := v1.LuxRuntimeSpec{
		NetworkID: 5, Validators: ptr.To[int32](2), Image: imageOf("ghcr.io/luxfi/node", "v1.13.0"),
		Storage: &v1.StorageSpec{Size: resource.MustParse("10Gi")}, Labels: map[string]string{"team": "x"},
	}
	fleet := v1.NodeFleetSpec{
		Image:     imageOf("ghcr.io/luxfi/node", "v1.13.0"),
		Archive:   &v1.ArchiveSpec{Storage: &v1.StorageSpec{Size: resource.MustParse("1Ti")}},
		StateSync: &v1.StateSyncSpec{Replicas: 2},
	}
	cases := map[string]struct {
		kind     string
		canon, h kinds.Object
		want     int
	}{
		"LuxRuntime": {"LuxRuntime", &v1.LuxRuntime{ObjectMeta: objMeta("l"), Spec: lux}, &hip.LuxRuntime{ObjectMeta: objMeta("l"), Spec: lux}, 4},
		"NodeFleet":  {"NodeFleet", &v1.NodeFleet{ObjectMeta: objMeta("f"), Spec: fleet}, &hip.NodeFleet{ObjectMeta: objMeta("f"), Spec: fleet}, 5},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := mustBuild(t, canonRef(c.kind), c.canon)
			b := mustBuild(t, hipRef(c.kind), c.h)
			if len(a) != c.want {
				t.Errorf("%d objects, want %d", len(a), c.want)
			}
			if diff := cmp.Diff(withoutOwners(a), withoutOwners(b)); diff != "" {
				t.Errorf("canonical and HIP builds differ (-canonical +hip):\n%s", diff)
			}
			if got := b[0].GetOwnerReferences()[0].APIVersion; got != "hanzo.ai/v1" {
				t.Errorf("HIP owner apiVersion %s", got)
			}
		})
	}
}

// TestLuxNaming: LuxRuntime keeps the LuxNetwork names (headless <cr>-headless), NodeFleet
// names its groups <cr>-archive and <cr>-state-sync; each StatefulSet's serviceName is its
// headless Service and the defaults are replicas 1, ports 9631/9630, and the node's flags
// carry the network and ports.
func TestLuxNaming(t *testing.T) {
	objs := mustBuild(t, canonRef("LuxRuntime"), &v1.LuxRuntime{ObjectMeta: objMeta("main"), Spec: v1.LuxRuntimeSpec{NetworkID: 7, Image: imageOf("r", "")}})
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	if diff := cmp.Diff([]string{"StatefulSet/main", "Service/main", "Service/main-headless", "PodDisruptionBudget/main"}, names); diff != "" {
		t.Errorf("LuxRuntime objects (-want +got):\n%s", diff)
	}
	sts := findKind(t, objs, "StatefulSet")
	if got, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName"); got != "main-headless" {
		t.Errorf("serviceName %q", got)
	}
	if got, _, _ := unstructured.NestedInt64(sts.Object, "spec", "replicas"); got != 1 {
		t.Errorf("replicas %d, want 1", got)
	}
	ps := podSpec(t, sts)
	if p := ps.Containers[0].Ports; len(p) != 2 || p[0].Name != "staking" || p[0].ContainerPort != 9631 || p[1].Name != "http" || p[1].ContainerPort != 9630 {
		t.Errorf("ports %+v", p)
	}
	wantArgs := []string{"--network-id=7", "--http-host=0.0.0.0", "--http-port=9630", "--staking-port=9631", "--public-ip=$(POD_IP)", "--data-dir=/data", "--db-dir=/data/db"}
	if diff := cmp.Diff(wantArgs, ps.Containers[0].Args); diff != "" {
		t.Errorf("node flags (-want +got):\n%s", diff)
	}

	objs = mustBuild(t, canonRef("NodeFleet"), &v1.NodeFleet{ObjectMeta: objMeta("f"), Spec: v1.NodeFleetSpec{Image: imageOf("r", "")}})
	names = nil
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"StatefulSet/f-archive", "Service/f-archive", "Service/f-archive-headless", "StatefulSet/f-state-sync", "Service/f-state-sync-headless"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("NodeFleet objects (-want +got):\n%s", diff)
	}
}

// TestNodeFleetGroupsNeverOverlap: each group's pods carry its own selector and not the
// other's, and each Service selects exactly its group's pods.
func TestNodeFleetGroupsNeverOverlap(t *testing.T) {
	objs := mustBuild(t, canonRef("NodeFleet"), &v1.NodeFleet{ObjectMeta: objMeta("f"), Spec: v1.NodeFleetSpec{
		Image: imageOf("r", "v1"), StateSync: &v1.StateSyncSpec{Replicas: 3},
		Archive: &v1.ArchiveSpec{HostAffinity: &v1.HostAffinity{NodeName: "n0", NodeSelector: map[string]string{"role": "archive"}}},
	}})
	podLabels := map[string]map[string]string{}
	for _, o := range objs {
		if o.GetKind() == "StatefulSet" {
			l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			podLabels[o.GetName()] = l
		}
	}
	matches := func(sel map[string]any, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	for _, o := range objs {
		group := strings.TrimSuffix(o.GetName(), "-headless")
		for path, sel := range selectors(o) {
			for sts, labels := range podLabels {
				if got, want := matches(sel, labels), sts == group; got != want {
					t.Errorf("%s %s %s selects %s pods: %v, want %v", o.GetKind(), o.GetName(), path, sts, got, want)
				}
			}
		}
	}
	archive := podSpec(t, findKind(t, objs, "StatefulSet"))
	if diff := cmp.Diff(map[string]string{"role": "archive"}, archive.NodeSelector); diff != "" {
		t.Errorf("archive nodeSelector (-want +got):\n%s", diff)
	}
	if archive.NodeName != "" {
		t.Errorf("nodeName %q set: it would bypass the scheduler", archive.NodeName)
	}
}

// TestLuxInvalidSpecs: no image is Degraded/InvalidSpec at both placements, with no objects.
func TestLuxInvalidSpecs(t *testing.T) {
	cases := map[string]struct {
		ref kinds.Ref
		cr  kinds.Object
	}{
		"LuxRuntime":     {canonRef("LuxRuntime"), &v1.LuxRuntime{ObjectMeta: objMeta("l"), Spec: v1.LuxRuntimeSpec{NetworkID: 1}}},
		"LuxRuntime HIP": {hipRef("LuxRuntime"), &hip.LuxRuntime{ObjectMeta: objMeta("l")}},
		"LuxRuntime empty repository": {canonRef("LuxRuntime"), &v1.LuxRuntime{ObjectMeta: objMeta("l"),
			Spec: v1.LuxRuntimeSpec{Image: &v1.ImageSpec{Tag: "v1"}}}},
		"NodeFleet":     {canonRef("NodeFleet"), &v1.NodeFleet{ObjectMeta: objMeta("f"), Spec: v1.NodeFleetSpec{StateSync: &v1.StateSyncSpec{Replicas: 2}}}},
		"NodeFleet HIP": {hipRef("NodeFleet"), &hip.NodeFleet{ObjectMeta: objMeta("f")}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := kinds.Builtin()[c.ref].Build(c.cr, hanzoCtx)
			h, ok := kinds.AsHalt(err)
			if !ok || h.Reason != kinds.ReasonInvalidSpec || h.Phase != v1.PhaseDegraded || len(objs) != 0 {
				t.Fatalf("got %d objects, err %v; want Degraded/InvalidSpec", len(objs), err)
			}
			if !strings.Contains(h.Message, "image.repository") {
				t.Errorf("message %q does not name image.repository", h.Message)
			}
		})
	}
}
