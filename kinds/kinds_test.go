package kinds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/hip"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

// TestAddToScheme checks that every Go type has exactly one GroupVersionKind in a universe,
// as controller-runtime's client needs, and that families land in their groups.
func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := kinds.AddToScheme(s, "zoo.cloud"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  runtime.Object
		want schema.GroupVersionKind
	}{
		"universe":    {&v1.Service{}, schema.GroupVersionKind{Group: "zoo.cloud", Version: "v1", Kind: "Service"}},
		"kms":         {&v1.KMSSecret{}, schema.GroupVersionKind{Group: "kms.zoo.cloud", Version: "v1", Kind: "KMSSecret"}},
		"chain":       {&v1.Network{}, schema.GroupVersionKind{Group: "bootno.de", Version: "v1", Kind: "Network"}},
		"chain list":  {&v1.IndexerList{}, schema.GroupVersionKind{Group: "bootno.de", Version: "v1", Kind: "IndexerList"}},
		"legacy":      {&v1alpha1.HanzoService{}, schema.GroupVersionKind{Group: "zoo.cloud", Version: "v1alpha1", Kind: "HanzoService"}},
		"hip network": {&hip.Network{}, schema.GroupVersionKind{Group: "zoo.cloud", Version: "v1", Kind: "Network"}},
		"hip subnet":  {&hip.Subnet{}, schema.GroupVersionKind{Group: "zoo.cloud", Version: "v1", Kind: "Subnet"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gvks, _, err := s.ObjectKinds(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]schema.GroupVersionKind{tc.want}, gvks); diff != "" {
				t.Errorf("ObjectKinds(%T) (-want +got):\n%s", tc.obj, diff)
			}
		})
	}
	for _, k := range v1.Kinds() {
		if _, ok := k.New().(kinds.Object); !ok {
			t.Errorf("%s is not a kinds.Object", k.Name)
		}
		gvks, _, err := s.ObjectKinds(k.New())
		if err != nil || len(gvks) != 1 {
			t.Errorf("%s: kinds %v, err %v; want exactly one", k.Name, gvks, err)
		}
	}
	if err := kinds.AddToScheme(runtime.NewScheme(), "bootno.de"); err == nil {
		t.Error("AddToScheme(bootno.de): no error")
	}
}

func TestGroupVersions(t *testing.T) {
	want := []schema.GroupVersion{
		{Group: "hanzo.ai", Version: "v1"}, {Group: "kms.hanzo.ai", Version: "v1"},
		{Group: "bootno.de", Version: "v1"}, {Group: "hanzo.ai", Version: "v1alpha1"},
	}
	if diff := cmp.Diff(want, kinds.GroupVersions("hanzo.ai")); diff != "" {
		t.Errorf("GroupVersions (-want +got):\n%s", diff)
	}
}

// TestServiceSpecAccessor: every golden CR of a Service-shaped Kind exposes its ServiceSpec,
// and setting the image through it on a copy changes the built Deployment's image only there
// (the upgrade machine's override), leaving the original CR as it was.
func TestServiceSpecAccessor(t *testing.T) {
	reg := kinds.Builtin()
	checked := 0
	kindsSeen := map[string]bool{}
	for _, c := range goldenCases(t) {
		e, ok := reg.Lookup(c.Obj.GroupVersionKind(), kinds.DefaultAPIGroup)
		if !ok || e.ServiceSpec == nil {
			continue
		}
		cr := e.New()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.Obj.Object, cr); err != nil {
			t.Fatal(err)
		}
		cp := cr.DeepCopyObject().(kinds.Object)
		spec := e.ServiceSpec(cp)
		if spec == nil || spec.Image == nil || spec.Image.Repository == "" {
			continue // an App of another role, or a CR the builder refuses
		}
		*spec.Image = v1.ImageSpec{Repository: "example.test/override", Tag: "v9"} // as the upgrade machine does
		kindsSeen[e.Kind] = true
		objs, err := e.Build(cp, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
		if err != nil {
			continue
		}
		img, _, _ := unstructuredString(objs[0].Object, "spec", "template", "spec", "containers")
		if objs[0].GetKind() != "Deployment" || img != "example.test/override:v9" {
			t.Errorf("%s: built %s with image %q", c.Name, objs[0].GetKind(), img)
		}
		if orig := e.ServiceSpec(cr); orig.Image.Repository == "example.test/override" {
			t.Errorf("%s: the accessor of the copy changed the original", c.Name)
		}
		checked++
	}
	if checked < 5 || !kindsSeen["HanzoService"] {
		t.Errorf("only %d Service-shaped golden CRs checked (%v); want HanzoService among them", checked, kindsSeen)
	}
	if e := reg[kinds.Ref{Placement: kinds.PlacementCanonical, Kind: "SQL"}]; e.ServiceSpec != nil {
		t.Error("SQL is not Service-shaped")
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	cs, ok, err := unstructured.NestedSlice(obj, fields...)
	if !ok || err != nil || len(cs) == 0 {
		return "", false, err
	}
	img, _ := cs[0].(map[string]any)["image"].(string)
	return img, true, nil
}

// The canonical placement of the Registry serves exactly the Kinds of kinds/v1, each in the
// family v1.Kinds declares (the one Kind→Family table).
func TestCanonicalEntriesFollowV1Kinds(t *testing.T) {
	reg := kinds.Builtin()
	want := map[string]kinds.Family{}
	for _, k := range v1.Kinds() {
		want[k.Name] = k.Family
		e, ok := reg[kinds.Ref{Placement: kinds.PlacementCanonical, Kind: k.Name}]
		if !ok {
			t.Errorf("%s: no canonical Registry entry", k.Name)
			continue
		}
		if e.Family != k.Family {
			t.Errorf("%s: Registry family %s, kinds/v1 declares %s", k.Name, e.Family, k.Family)
		}
	}
	for ref := range reg {
		if _, ok := want[ref.Kind]; ref.Placement == kinds.PlacementCanonical && !ok {
			t.Errorf("%s: canonical entry for a Kind kinds/v1 does not declare", ref.Kind)
		}
	}
}
