package kinds_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

func buildStatic(s v1.StaticSpec, server string) ([]*unstructured.Unstructured, error) {
	cr := &v1.Static{ObjectMeta: objMeta("docs"), Spec: s}
	return kinds.Builtin()[canonRef("Static")].Build(cr, kinds.Context{APIGroup: kinds.DefaultAPIGroup, StaticServerImage: server})
}

// TestStatic: a Static serves its ConfigMap read-only through the pinned static server (the
// Context names it; :latest or no tag is refused) or its own image; every spec field changes
// the objects, and a spec that says nothing to serve, or both, is refused.
func TestStatic(t *testing.T) {
	site := v1.StaticSpec{ConfigMap: "docs-site", Ingress: v1.IngressSpec{Enabled: true, Hosts: []string{"docs.example"}}}
	objs, err := buildStatic(site, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind())
	}
	if !cmp.Equal(got, []string{"Deployment", "Service", "Ingress"}) {
		t.Errorf("objects %v", got)
	}
	pod := podSpec(t, findKind(t, objs, "Deployment"))
	c := pod.Containers[0]
	if c.Image != kinds.DefaultStaticServerImage || strings.HasSuffix(c.Image, ":latest") {
		t.Errorf("image %s", c.Image)
	}
	if m := c.VolumeMounts[0]; !m.ReadOnly || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "docs-site" {
		t.Errorf("the ConfigMap is not mounted read-only: %+v %+v", m, pod.Volumes[0])
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v", sc)
	}
	if ps := pod.SecurityContext; ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		t.Errorf("pod security context %+v", ps)
	}

	pinned, err := buildStatic(site, "registry.example:5000/static/server@sha256:"+strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	if img := podSpec(t, findKind(t, pinned, "Deployment")).Containers[0].Image; img != "registry.example:5000/static/server@sha256:"+strings.Repeat("a", 64) {
		t.Errorf("the named server image is not used: %s", img)
	}
	for _, bad := range []string{"nginx:latest", "registry.example:5000/nginx", "nginx:"} {
		if _, err := buildStatic(site, bad); err == nil {
			t.Errorf("server image %q accepted", bad)
		}
	}

	// Every field acts: a new field without a case fails.
	changes := map[string]func(*v1.StaticSpec){
		"configMap":                func(s *v1.StaticSpec) { s.ConfigMap = "docs-v2" },
		"image":                    func(s *v1.StaticSpec) { s.ConfigMap, s.Image = "", &v1.ImageSpec{Repository: "site", Tag: "v1"} },
		"ingress.enabled":          func(s *v1.StaticSpec) { s.Ingress.Enabled = false },
		"ingress.hosts":            func(s *v1.StaticSpec) { s.Ingress.Hosts = []string{"other.example"} },
		"ingress.ingressClassName": func(s *v1.StaticSpec) { s.Ingress.IngressClassName = "nginx" },
		"ingress.tls":              func(s *v1.StaticSpec) { s.Ingress.TLS = new(bool) },
		"ingress.clusterIssuer":    func(s *v1.StaticSpec) { s.Ingress.ClusterIssuer = "internal" },
		"ingress.pathRules": func(s *v1.StaticSpec) {
			s.Ingress.PathRules = []v1.PathRule{{Path: "/docs", PathType: "Prefix", Port: 8080}}
		},
		"ingress.pathRules[].path": func(s *v1.StaticSpec) { s.Ingress.PathRules = []v1.PathRule{{Path: "/a", Port: 8080}} },
		"ingress.pathRules[].pathType": func(s *v1.StaticSpec) {
			s.Ingress.PathRules = []v1.PathRule{{Path: "/", PathType: "Exact", Port: 8080}}
		},
		"ingress.pathRules[].port": func(s *v1.StaticSpec) { s.Ingress.PathRules = []v1.PathRule{{Path: "/", Port: 9090}} },
		"ingress.pathRules[].serviceName": func(s *v1.StaticSpec) {
			s.Ingress.PathRules = []v1.PathRule{{Path: "/", Port: 8080, ServiceName: "api"}}
		},
		"ingress.annotations":     func(s *v1.StaticSpec) { s.Ingress.Annotations = map[string]string{"a": "b"} },
		"ingress.zeroTrustPolicy": func(s *v1.StaticSpec) { s.Ingress.ZeroTrustPolicy = &v1.ZeroTrustPolicy{Enabled: true} }, // refused
	}
	for _, p := range specPaths(reflect.TypeOf(v1.StaticSpec{}), "") {
		if _, ok := changes[p]; !ok && !strings.HasPrefix(p, "image.") && !strings.HasPrefix(p, "ingress.zeroTrustPolicy.") {
			t.Errorf("spec.%s has no case: materialize it or refuse it, and add a change here", p)
		}
	}
	for name, change := range changes {
		s := *site.DeepCopy()
		change(&s)
		got, err := buildStatic(s, "")
		if _, halted := kinds.AsHalt(err); halted {
			continue // refused, not dropped
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if reflect.DeepEqual(objs, got) {
			t.Errorf("spec.%s changes nothing", name)
		}
	}
	for name, s := range map[string]v1.StaticSpec{
		"nothing to serve":       {Ingress: site.Ingress},
		"both":                   {ConfigMap: "x", Image: &v1.ImageSpec{Repository: "site", Tag: "v1"}},
		"ingress without hosts":  {ConfigMap: "x", Ingress: v1.IngressSpec{Enabled: true}},
		"zero trust not offered": {ConfigMap: "x", Ingress: v1.IngressSpec{ZeroTrustPolicy: &v1.ZeroTrustPolicy{Enabled: true}}},
	} {
		if _, err := buildStatic(s, ""); err == nil {
			t.Errorf("%s: accepted", name)
		} else if h, ok := kinds.AsHalt(err); !ok || h.Reason != kinds.ReasonInvalidSpec {
			t.Errorf("%s: %v, want an InvalidSpec Halt", name, err)
		}
	}
}
