package hip

import (
	"encoding/json"
	"fmt"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/openuniverse/operator/kinds/v1"
)

// defaultValidators is the validator count of a HIP-414 validators object without replicas,
// the count the v1 builder uses when neither is set.
const defaultValidators = 3

// ToMPC converts a HIP-era MPC to the canonical MPC. TypeMeta is left empty.
func ToMPC(in *MPC) *v1.MPC {
	return &v1.MPC{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
}

// ToIndexer converts a HIP-era Indexer to the canonical Indexer.
func ToIndexer(in *Indexer) *v1.Indexer {
	return &v1.Indexer{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
}

// ToExplorer converts a HIP-era Explorer to the canonical Explorer.
func ToExplorer(in *Explorer) *v1.Explorer {
	return &v1.Explorer{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
}

// ToLuxRuntime converts a universe-group LuxRuntime to the canonical LuxRuntime.
func ToLuxRuntime(in *LuxRuntime) *v1.LuxRuntime {
	return &v1.LuxRuntime{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
}

// ToNodeFleet converts a universe-group NodeFleet to the canonical NodeFleet.
func ToNodeFleet(in *NodeFleet) *v1.NodeFleet {
	return &v1.NodeFleet{ObjectMeta: *in.ObjectMeta.DeepCopy(), Spec: *in.Spec.DeepCopy(), Status: *in.Status.DeepCopy()}
}

// ToChain converts a HIP-era Chain to the canonical Chain: vmID becomes vmId and subnetID
// becomes networkId when the canonical spellings are unset.
func ToChain(in *Chain) *v1.Chain {
	return &v1.Chain{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec:       v1.ChainSpec{Network: in.Spec.Network, Chain: in.Spec.Chain.canonical()},
		Status:     *in.Status.DeepCopy(),
	}
}

func (c ChainParameter) canonical() v1.ChainParameter {
	out := v1.ChainParameter{Name: c.Name, VMID: c.VMID, Genesis: c.Genesis, NetworkID: c.NetworkID}
	if out.VMID == "" {
		out.VMID = c.LegacyVMID
	}
	if out.NetworkID == "" {
		out.NetworkID = c.SubnetID
	}
	return out
}

// SubnetChains converts the chains of a Subnet to canonical Chain specs on the Subnet's
// network, with the subnet ID as networkId.
func SubnetChains(in *Subnet) []v1.ChainSpec {
	out := make([]v1.ChainSpec, 0, len(in.Spec.Chains))
	for _, c := range in.Spec.Chains {
		out = append(out, v1.ChainSpec{Network: in.Spec.Network, Chain: v1.ChainParameter{
			Name: c.Name, VMID: c.VMID, Genesis: c.Genesis, NetworkID: in.Spec.SubnetID,
		}})
	}
	return out
}

// ToNetwork converts a HIP-era Network to the canonical Network. A string networkID is parsed;
// a validators object becomes validatorTemplate (unless one is set) and the count becomes its
// replicas, else 3. Chains lose their genesis, which the canonical Network does not carry; a
// chain without blockchainID takes its name.
func ToNetwork(in *Network) (*v1.Network, error) {
	id, err := networkID(in.Spec.NetworkID)
	if err != nil {
		return nil, fmt.Errorf("network %s/%s: %w", in.Namespace, in.Name, err)
	}
	s := in.Spec.DeepCopy()
	out := &v1.Network{ObjectMeta: *in.ObjectMeta.DeepCopy(), Status: *in.Status.DeepCopy()}
	out.Spec = v1.NetworkSpec{
		NetworkID:         id,
		EVMChainID:        s.EVMChainID,
		ValidatorTemplate: s.ValidatorTemplate,
		Indexer:           s.Indexer,
		Bridge:            s.Bridge,
		Bootnode:          s.Bootnode,
		Explorer:          s.Explorer,
		Labels:            s.Labels,
		Annotations:       s.Annotations,
		ImagePullSecrets:  s.ImagePullSecrets,
	}
	if err := validators(s.Validators, &out.Spec); err != nil {
		return nil, fmt.Errorf("network %s/%s: %w", in.Namespace, in.Name, err)
	}
	for _, c := range s.Chains {
		bid := c.BlockchainID
		if bid == "" {
			bid = c.Name
		}
		out.Spec.Chains = append(out.Spec.Chains, v1.NetworkChain{BlockchainID: bid, VMID: c.VMID, Name: c.Name})
	}
	return out, nil
}

func networkID(v intstr.IntOrString) (int64, error) {
	if v.Type == intstr.Int {
		return int64(v.IntVal), nil
	}
	id, err := strconv.ParseUint(v.StrVal, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parse networkID %q: %w", v.StrVal, err)
	}
	return int64(id), nil
}

func validators(raw *apiextensionsv1.JSON, spec *v1.NetworkSpec) error {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	var n int32
	if err := json.Unmarshal(raw.Raw, &n); err == nil {
		spec.Validators = n
		return nil
	}
	var tmpl v1.ValidatorSpec
	if err := json.Unmarshal(raw.Raw, &tmpl); err != nil {
		return fmt.Errorf("decode validators: %w", err)
	}
	spec.Validators = defaultValidators
	if tmpl.Replicas != nil {
		spec.Validators = *tmpl.Replicas
	}
	if spec.ValidatorTemplate == nil {
		spec.ValidatorTemplate = &tmpl
	}
	return nil
}
