package kinds_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
)

// TestAdmissionValidation creates invalid CRs on the real apiserver and checks that each is
// rejected with a message naming the field and the rule.
func TestAdmissionValidation(t *testing.T) {
	cases := map[string]struct {
		reason string
		cr     string
		want   []string
	}{
		"pull policy": {
			reason: "image.pullPolicy is a closed set",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  image: {repository: x, pullPolicy: Sometimes}",
			want:   []string{"spec.image.pullPolicy", `Unsupported value: "Sometimes"`, `"Always"`, `"IfNotPresent"`, `"Never"`},
		},
		"fsGroupChangePolicy": {
			reason: "securityContext.fsGroupChangePolicy is OnRootMismatch or Always",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  securityContext: {fsGroup: 1000, fsGroupChangePolicy: Sometimes}",
			want:   []string{"spec.securityContext", "securityContext.fsGroupChangePolicy must be OnRootMismatch or Always"},
		},
		"fsGroupChangePolicy on a datastore": {
			reason: "the same closed set on the datastore Kinds",
			cr:     "apiVersion: hanzo.ai/v1\nkind: SQL\nspec:\n  storage: {size: 1Gi}\n  securityContext: {fsGroupChangePolicy: always}",
			want:   []string{"securityContext.fsGroupChangePolicy must be OnRootMismatch or Always"},
		},
		"seccomp localhost": {
			reason: "a Localhost seccomp profile needs localhostProfile",
			cr:     "apiVersion: hanzo.ai/v1\nkind: App\nspec:\n  securityContext: {seccompProfile: {type: Localhost}}",
			want:   []string{"securityContext.seccompProfile.localhostProfile is required when type is Localhost"},
		},
		"container port": {
			reason: "ports are 1..65535",
			cr:     "apiVersion: hanzo.ai/v1\nkind: IAM\nspec:\n  ports: [{name: http, containerPort: 0}]",
			want:   []string{"spec.ports[0].containerPort", "should be greater than or equal to 1"},
		},
		"negative replicas": {
			reason: "replicas is non-negative",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  replicas: -1",
			want:   []string{"spec.replicas", "should be greater than or equal to 0"},
		},
		"protocol": {
			reason: "a port protocol is TCP, UDP or SCTP",
			cr:     "apiVersion: hanzo.ai/v1\nkind: LLM\nspec:\n  ports: [{name: http, containerPort: 80, protocol: HTTP}]",
			want:   []string{"spec.ports[0].protocol", `Unsupported value: "HTTP"`},
		},
		"legacy strategy": {
			reason: "HanzoService kept the Go CRD's closed set",
			cr:     "apiVersion: hanzo.ai/v1alpha1\nkind: HanzoService\nspec:\n  image: {repository: x}\n  strategy: BlueGreen",
			want:   []string{"spec.strategy", `Unsupported value: "BlueGreen"`},
		},
		"autoscaling bounds": {
			reason: "minReplicas must not exceed maxReplicas",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 2}",
			want:   []string{"autoscaling.minReplicas must not exceed autoscaling.maxReplicas"},
		},
		"cpu target": {
			reason: "a utilization target is a percentage",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  autoscaling: {targetCPUUtilization: 150}",
			want:   []string{"spec.autoscaling.targetCPUUtilization", "should be less than or equal to 100"},
		},
		"kms secret target": {
			reason: "a kmsSecrets entry names the Secret it fills",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  kmsSecrets: [{secretsPath: /x}]",
			want:   []string{"kmsSecrets[]: managedSecretName (or secretName) is required"},
		},
		"datastore storage": {
			reason: "a datastore needs storage",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Datastore\nspec:\n  replicas: 1",
			want:   []string{"spec.storage", "Required value"},
		},
		"storage size": {
			reason: "size is a quantity",
			cr:     "apiVersion: hanzo.ai/v1\nkind: KV\nspec:\n  storage: {size: lots}",
			want:   []string{"spec.storage.size"},
		},
		"legacy datastore engine": {
			reason: "HanzoDatastore.type is a closed set",
			cr:     "apiVersion: hanzo.ai/v1alpha1\nkind: HanzoDatastore\nspec:\n  type: mysql\n  storage: {size: 1Gi}",
			want:   []string{"spec.type", `Unsupported value: "mysql"`},
		},
		"managed database engine": {
			reason: "engine is a closed set",
			cr:     "apiVersion: hanzo.ai/v1\nkind: ManagedDatabase\nspec:\n  engine: oracle\n  storage: {size: 1Gi}",
			want:   []string{"spec.engine", `Unsupported value: "oracle"`},
		},
		"legacy datastore type": {
			reason: "HanzoDatastore requires its type",
			cr:     "apiVersion: hanzo.ai/v1alpha1\nkind: HanzoDatastore\nspec:\n  storage: {size: 1Gi}",
			want:   []string{"spec.type", "Required value"},
		},
		"legacy service image": {
			reason: "HanzoService requires image",
			cr:     "apiVersion: hanzo.ai/v1alpha1\nkind: HanzoService\nspec:\n  replicas: 1",
			want:   []string{"spec.image", "Required value"},
		},
		"mpc threshold": {
			reason: "an MPC cluster needs threshold+1 nodes",
			cr:     "apiVersion: bootno.de/v1\nkind: MPC\nspec:\n  image: {repository: x}\n  replicas: 3\n  threshold: 3",
			want:   []string{"replicas must be at least threshold+1"},
		},
		"app role": {
			reason: "role is projected from the role table",
			cr:     "apiVersion: hanzo.ai/v1\nkind: App\nspec:\n  role: wizard",
			want:   []string{"spec.role", `Unsupported value: "wizard"`},
		},
		"ingress domains": {
			reason: "the Ingress Kind needs domains",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Ingress\nspec:\n  clusterIssuer: x",
			want:   []string{"spec.domains", "Required value"},
		},
		"chain genesis": {
			reason: "a chain needs its genesis",
			cr:     "apiVersion: bootno.de/v1\nkind: Chain\nspec:\n  network: lux\n  chain: {name: c, vmId: v}",
			want:   []string{"spec.chain.genesis", "Required value"},
		},
		"hip chain vm": {
			reason: "the HIP-era Chain needs vmId or vmID",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Chain\nspec:\n  network: lux\n  chain: {name: c, genesis: g}",
			want:   []string{"chain.vmId (or vmID) is required"},
		},
		"hip network id": {
			reason: "a string networkID is digits",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Network\nspec:\n  networkID: mainnet",
			want:   []string{"networkID must be a non-negative number"},
		},
		"lux engine": {
			reason: "engine is luxd, hanzod or zood",
			cr:     "apiVersion: bootno.de/v1\nkind: LuxRuntime\nspec:\n  engine: geth",
			want:   []string{"spec.engine", `Unsupported value: "geth"`},
		},
		"kms secret group": {
			reason: "KMSSecret is served at kms.<universe>, and keys is a list",
			cr:     "apiVersion: kms.hanzo.ai/v1\nkind: KMSSecret\nspec:\n  keys: KEY",
			want:   []string{"spec.keys", "must be of type array"},
		},
		"path rule port": {
			reason: "a path rule needs its port",
			cr:     "apiVersion: hanzo.ai/v1\nkind: Service\nspec:\n  ingress: {pathRules: [{path: /, pathType: Prefix}]}",
			want:   []string{"spec.ingress.pathRules[0].port", "Required value"},
		},
	}
	cfg := apiServerWith(t, kinds.DefaultAPIGroup)
	ctx := t.Context()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ensureNamespace(ctx, t, cs, "admission")
	gvrs := resources(t, kinds.DefaultAPIGroup)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.cr), &u.Object); err != nil {
				t.Fatalf("bad case: %v", err)
			}
			u.SetName("invalid")
			u.SetNamespace("admission")
			gvr, ok := gvrs[u.GroupVersionKind()]
			if !ok {
				t.Fatalf("no CRD serves %s", u.GroupVersionKind())
			}
			_, err := dyn.Resource(gvr).Namespace("admission").Create(ctx, u, metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("%s: created; want it rejected (%s)", name, tc.reason)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("%s: error %v, want Invalid", name, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s (%s): message %q lacks %q", name, tc.reason, err.Error(), w)
				}
			}
		})
	}
}
