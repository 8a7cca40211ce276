package kinds_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/kinds/v1alpha1"
)

// TestLegacyDNSObjectSet: a v1alpha1 HanzoDNS builds the Go operator's object set (names,
// Corefile, ports, probes, selector), with its defaults when coredns is absent; the v1 DNS
// Kind keeps the Rust one (Deployment and Service <cr>).
func TestLegacyDNSObjectSet(t *testing.T) {
	ref := kinds.Ref{Placement: kinds.PlacementV1alpha1, Kind: "HanzoDNS"}
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetKind()+"/"+o.GetName())
		}
		return out
	}
	objs := mustBuild(t, ref, &v1alpha1.HanzoDNS{ObjectMeta: objMeta("dns")})
	if diff := cmp.Diff([]string{"ConfigMap/dns-corefile", "Deployment/dns-coredns", "Service/dns-dns", "Service/dns-api"}, names(objs)); diff != "" {
		t.Errorf("HanzoDNS objects (-want +got):\n%s", diff)
	}
	canon := mustBuild(t, canonRef("DNS"), &v1.DNS{ObjectMeta: objMeta("dns")})
	if diff := cmp.Diff([]string{"Deployment/dns", "Service/dns"}, names(canon)); diff != "" {
		t.Errorf("v1 DNS objects (-want +got):\n%s", diff)
	}

	d := findKind(t, objs, "Deployment")
	c := podSpec(t, d).Containers[0]
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s/%d/%s", p.Name, p.ContainerPort, p.Protocol))
	}
	if diff := cmp.Diff([]string{"dns-tcp/53/TCP", "dns-udp/53/UDP", "api/8443/TCP"}, ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	if c.Name != "coredns" || c.Image != "ghcr.io/hanzoai/dns:latest" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Port.IntValue() != 8080 ||
		c.LivenessProbe == nil || c.LivenessProbe.PeriodSeconds != 30 || len(c.Env) != 0 {
		t.Errorf("container %+v", c)
	}
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas %d", r)
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	if diff := cmp.Diff(map[string]string{kinds.LabelName: "dns", kinds.LabelInstance: "dns", kinds.LabelComponent: "dns"}, sel); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	cf, _, _ := unstructured.NestedString(findKind(t, objs, "ConfigMap").Object, "data", "Corefile")
	if cf != ". {\n    hanzodns :8443\n    health :8080\n    ready :8181\n    prometheus :9153\n    log\n    errors\n}\n" {
		t.Errorf("Corefile %q", cf)
	}

	// ports and OIDC from the spec; the Services stay on 53 and 80
	objs = mustBuild(t, ref, &v1alpha1.HanzoDNS{ObjectMeta: objMeta("dns"), Spec: v1.DNSSpec{
		CoreDNS: &v1.CoreDNSSpec{APIPort: 9443, DNSPort: 5353, Replicas: ptr.To[int32](3)},
		OIDC:    &v1.OIDCSpec{Enabled: true, Issuer: "https://id.example"}}})
	c = podSpec(t, findKind(t, objs, "Deployment")).Containers[0]
	if c.Ports[0].ContainerPort != 5353 || c.Ports[2].ContainerPort != 9443 || len(c.Env) != 1 || c.Env[0].Name != "HANZO_DNS_OIDC_ISSUER" {
		t.Errorf("container %+v", c)
	}
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		ps, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		for _, p := range ps {
			port := p.(map[string]any)["port"].(int64)
			if port != 53 && port != 80 {
				t.Errorf("%s port %d", o.GetName(), port)
			}
		}
	}
}
