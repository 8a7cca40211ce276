package hip_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds/hip"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func TestToNetwork(t *testing.T) {
	cases := map[string]struct {
		reason  string
		in      hip.NetworkSpec
		want    v1.NetworkSpec
		wantErr bool
	}{
		"hip-414": {
			reason: "a string networkID parses, a validators object becomes the template and its replicas the count",
			in: hip.NetworkSpec{
				NetworkID:  intstr.FromString("1"),
				Validators: raw(`{"image":{"repository":"ghcr.io/luxfi/node","tag":"v1"},"replicas":5,"httpPort":9650}`),
				Chains:     []hip.NetworkChain{{Name: "c-chain", VMID: "vm", Genesis: "..."}},
			},
			want: v1.NetworkSpec{
				NetworkID: 1, Validators: 5,
				ValidatorTemplate: &v1.ValidatorSpec{Image: v1.ImageSpec{Repository: "ghcr.io/luxfi/node", Tag: "v1"}, Replicas: ptr.To[int32](5), HTTPPort: 9650},
				Chains:            []v1.NetworkChain{{BlockchainID: "c-chain", VMID: "vm", Name: "c-chain"}},
			},
		},
		"v0.6": {
			reason: "an integer networkID and a validator count pass through",
			in:     hip.NetworkSpec{NetworkID: intstr.FromInt32(96369), Validators: raw(`3`), ValidatorTemplate: &v1.ValidatorSpec{Image: v1.ImageSpec{Repository: "n"}}},
			want:   v1.NetworkSpec{NetworkID: 96369, Validators: 3, ValidatorTemplate: &v1.ValidatorSpec{Image: v1.ImageSpec{Repository: "n"}}},
		},
		"object without replicas": {
			reason: "the count is 3, as the builder's default",
			in:     hip.NetworkSpec{NetworkID: intstr.FromInt32(1), Validators: raw(`{"image":{"repository":"n"}}`)},
			want:   v1.NetworkSpec{NetworkID: 1, Validators: 3, ValidatorTemplate: &v1.ValidatorSpec{Image: v1.ImageSpec{Repository: "n"}}},
		},
		"bad network id": {
			reason: "a non-numeric networkID is an error", in: hip.NetworkSpec{NetworkID: intstr.FromString("mainnet")}, wantErr: true,
		},
		"bad validators": {
			reason: "validators must be a count or an object", in: hip.NetworkSpec{NetworkID: intstr.FromInt32(1), Validators: raw(`"five"`)}, wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := hip.ToNetwork(&hip.Network{Spec: tc.in})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("%s: no error", tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestToChain(t *testing.T) {
	cases := map[string]struct {
		in   hip.ChainParameter
		want v1.ChainParameter
	}{
		"hip-415": {
			in:   hip.ChainParameter{Name: "hanzo", LegacyVMID: "vm", Genesis: "{}", SubnetID: "sub"},
			want: v1.ChainParameter{Name: "hanzo", VMID: "vm", Genesis: "{}", NetworkID: "sub"},
		},
		"canonical spellings win": {
			in:   hip.ChainParameter{Name: "c", VMID: "a", LegacyVMID: "b", Genesis: "{}", NetworkID: "n", SubnetID: "s"},
			want: v1.ChainParameter{Name: "c", VMID: "a", Genesis: "{}", NetworkID: "n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := hip.ToChain(&hip.Chain{Spec: hip.ChainSpec{Network: "lux", Chain: tc.in}})
			if diff := cmp.Diff(v1.ChainSpec{Network: "lux", Chain: tc.want}, got.Spec); diff != "" {
				t.Errorf("ToChain (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubnetChains(t *testing.T) {
	got := hip.SubnetChains(&hip.Subnet{Spec: hip.SubnetSpec{Network: "lux", SubnetID: "sub", Chains: []hip.NetworkChain{{Name: "hanzo", VMID: "vm", Genesis: "g"}}}})
	want := []v1.ChainSpec{{Network: "lux", Chain: v1.ChainParameter{Name: "hanzo", VMID: "vm", Genesis: "g", NetworkID: "sub"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SubnetChains (-want +got):\n%s", diff)
	}
}
