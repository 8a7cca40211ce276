package v1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

func TestKMSSecretRefSpellings(t *testing.T) {
	cases := map[string]struct {
		in               v1.KMSSecretRef
		host, secretName string
	}{
		"contract":  {in: v1.KMSSecretRef{HostAPI: "a", ManagedSecretName: "s"}, host: "a", secretName: "s"},
		"go":        {in: v1.KMSSecretRef{LegacyHostAPI: "b", ManagedSecretName: "s"}, host: "b", secretName: "s"},
		"both":      {in: v1.KMSSecretRef{HostAPI: "a", LegacyHostAPI: "b", ManagedSecretName: "s", LegacySecretName: "t"}, host: "a", secretName: "s"},
		"hip-410":   {in: v1.KMSSecretRef{Name: "n", LegacySecretName: "t"}, secretName: "t"},
		"unset all": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.in.Host(); got != tc.host {
				t.Errorf("Host() = %q, want %q", got, tc.host)
			}
			if got := tc.in.SecretName(); got != tc.secretName {
				t.Errorf("SecretName() = %q, want %q", got, tc.secretName)
			}
		})
	}
}

func TestTargetCPU(t *testing.T) {
	cases := map[string]struct {
		in   v1.AutoscalingSpec
		want *int32
	}{
		"none":     {},
		"contract": {in: v1.AutoscalingSpec{TargetCPUUtilization: ptr.To[int32](70)}, want: ptr.To[int32](70)},
		"go":       {in: v1.AutoscalingSpec{LegacyTargetCPUUtilization: ptr.To[int32](80)}, want: ptr.To[int32](80)},
		"both":     {in: v1.AutoscalingSpec{TargetCPUUtilization: ptr.To[int32](70), LegacyTargetCPUUtilization: ptr.To[int32](80)}, want: ptr.To[int32](70)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.TargetCPU()); diff != "" {
				t.Errorf("TargetCPU() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRateLimitOf(t *testing.T) {
	limits := []v1.RateLimit{{Name: "per-user", MaxRate: 100, Every: "1m"}}
	cases := map[string]struct {
		raw     string
		want    *v1.RateLimit
		wantErr bool
	}{
		"none":     {},
		"by name":  {raw: `"per-user"`, want: &limits[0]},
		"inline":   {raw: `{"name":"x","maxRate":5,"every":"1s"}`, want: &v1.RateLimit{Name: "x", MaxRate: 5, Every: "1s"}},
		"unknown":  {raw: `"nope"`, wantErr: true},
		"bad type": {raw: `5`, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := v1.GatewayRoute{Prefix: "/v1"}
			if tc.raw != "" {
				r.RateLimit = &apiextensionsv1.JSON{Raw: []byte(tc.raw)}
			}
			got, err := r.RateLimitOf(limits)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RateLimitOf: err %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RateLimitOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDatastoreEngine(t *testing.T) {
	if got := (&v1.Datastore{}).Engine(); got != v1.EngineDatastore {
		t.Errorf("Engine() of an untyped Datastore = %s, want datastore", got)
	}
	d := &v1.Datastore{Spec: v1.DatastoreSpec{Type: v1.EngineValkey}}
	if got := d.Engine(); got != v1.EngineValkey {
		t.Errorf("Engine() = %s, want valkey", got)
	}
}

func TestFamilyGroup(t *testing.T) {
	cases := map[v1.Family]string{v1.FamilyUniverse: "lux.cloud", v1.FamilyKMS: "kms.lux.cloud", v1.FamilyChain: "bootno.de"}
	for f, want := range cases {
		if got := f.Group("lux.cloud"); got != want {
			t.Errorf("%s.Group(lux.cloud) = %s, want %s", f, got, want)
		}
	}
}
