package children

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

func mustYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const builtSTS = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns}
spec:
  serviceName: db-hs
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: db, app.kubernetes.io/instance: db}}
  template:
    metadata: {labels: {app.kubernetes.io/name: db, app.kubernetes.io/instance: db}}
    spec: {containers: [{name: db, image: postgres:16}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
`

// liveSTS is the same StatefulSet as the apiserver returns it: defaults added (the claim
// template's volumeMode and status, numbers as int64).
const liveSTS = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns, uid: u1}
spec:
  serviceName: db-hs
  replicas: 1
  podManagementPolicy: OrderedReady
  selector: {matchLabels: {app.kubernetes.io/name: db, app.kubernetes.io/instance: db}}
  template:
    metadata: {labels: {app.kubernetes.io/name: db, app.kubernetes.io/instance: db}}
    spec: {containers: [{name: db, image: postgres:16}]}
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}, volumeMode: Filesystem}
    status: {phase: Pending}
`

func TestKeepImmutable(t *testing.T) {
	goEra := strings.NewReplacer("serviceName: db-hs", "serviceName: db-headless",
		"selector: {matchLabels: {app.kubernetes.io/name: db, app.kubernetes.io/instance: db}}",
		"selector: {matchLabels: {app.kubernetes.io/name: db, app.kubernetes.io/component: datastore}}",
		"storage: 10Gi", "storage: 5Gi")
	cases := map[string]struct {
		built, live string
		want        []string // field: live / built
		check       func(t *testing.T, out *unstructured.Unstructured)
	}{
		"absent: applied as built": {built: builtSTS},
		"same with defaults: applied as built": {built: builtSTS, live: liveSTS,
			check: func(t *testing.T, out *unstructured.Unstructured) {
				if n, _, _ := unstructured.NestedString(out.Object, "spec", "serviceName"); n != "db-hs" {
					t.Errorf("serviceName = %q", n)
				}
			}},
		"Go-era StatefulSet: serviceName, selector and claim templates kept": {built: builtSTS, live: goEra.Replace(liveSTS),
			want: []string{
				`spec.serviceName: "db-headless" / "db-hs"`,
				`spec.selector: {"matchLabels":{"app.kubernetes.io/component":"datastore","app.kubernetes.io/name":"db"}} / {"matchLabels":{"app.kubernetes.io/instance":"db","app.kubernetes.io/name":"db"}}`,
				`spec.volumeClaimTemplates: [{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"]`,
			},
			check: func(t *testing.T, out *unstructured.Unstructured) {
				labels, _, _ := unstructured.NestedStringMap(out.Object, "spec", "template", "metadata", "labels")
				want := map[string]string{"app.kubernetes.io/name": "db", "app.kubernetes.io/instance": "db", "app.kubernetes.io/component": "datastore"}
				if diff := cmp.Diff(want, labels); diff != "" {
					t.Errorf("the template does not carry the kept selector's labels (-want +got):\n%s", diff)
				}
				vct, _, _ := unstructured.NestedSlice(out.Object, "spec", "volumeClaimTemplates")
				if _, has := vct[0].(map[string]any)["status"]; has {
					t.Error("the kept claim template carries its status")
				}
				if r, _, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "replicas"); !contains(r, int64(1)) {
					t.Errorf("mutable fields lost: replicas %v", r)
				}
				if size, _, _ := unstructured.NestedString(vct[0].(map[string]any), "spec", "resources", "requests", "storage"); size != "5Gi" {
					t.Errorf("the live claim size is not kept: %q", size)
				}
			}},
		"Service: an allocated clusterIP the build does not set stays unreported": {
			built: "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\nspec: {ports: [{port: 80}]}\n",
			live:  "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\nspec: {clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80, protocol: TCP}]}\n"},
		"Service: headless built over a ClusterIP one keeps the live clusterIP": {
			built: "apiVersion: v1\nkind: Service\nmetadata: {name: db-hs, namespace: ns}\nspec: {clusterIP: None, ports: [{port: 80}]}\n",
			live:  "apiVersion: v1\nkind: Service\nmetadata: {name: db-hs, namespace: ns}\nspec: {clusterIP: 10.0.0.8, clusterIPs: [10.0.0.8], ports: [{port: 80}]}\n",
			want:  []string{`spec.clusterIP: "10.0.0.8" / "None"`}},
		"a kind with no immutable field: as built": {
			built: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: b}\n",
			live:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {a: c}\n"},
		"another API version of the same object is matched": {
			built: builtSTS, live: strings.Replace(goEra.Replace(liveSTS), "apps/v1", "apps/v1beta2", 1),
			want: []string{`spec.serviceName: "db-headless" / "db-hs"`, "spec.selector", "spec.volumeClaimTemplates"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			built := mustYAML(t, tc.built)
			before := built.DeepCopy()
			live := map[apply.ObjRef]*unstructured.Unstructured{}
			if tc.live != "" {
				l := mustYAML(t, tc.live)
				live[Unversioned(apply.RefOf(l))] = l
			}
			out, kept := KeepImmutable([]*unstructured.Unstructured{built}, live)
			if diff := cmp.Diff(before.Object, built.Object); diff != "" {
				t.Errorf("KeepImmutable modified its input:\n%s", diff)
			}
			if len(kept) != len(tc.want) {
				t.Fatalf("kept %d fields, want %d: %v", len(kept), len(tc.want), kept)
			}
			for i, k := range kept {
				got := k.Field + ": " + k.Live + " / " + k.Built
				if !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("kept[%d] = %s\nwant prefix  %s", i, got, tc.want[i])
				}
				if k.Object != apply.RefOf(built) {
					t.Errorf("kept[%d] names %s", i, k.Object)
				}
			}
			if len(kept) > 0 {
				for _, k := range kept {
					v, _, _ := unstructured.NestedFieldNoCopy(out[0].Object, strings.Split(k.Field, ".")...)
					if compact(v) != k.Live {
						t.Errorf("%s applied as %s, want the live %s", k.Field, compact(v), k.Live)
					}
				}
			} else if out[0] != built {
				t.Error("an unchanged child was copied")
			}
			if tc.check != nil {
				tc.check(t, out[0])
			}
		})
	}
}

func TestLeftovers(t *testing.T) {
	const owner = types.UID("cr")
	child := func(kind, name string, uid types.UID, manager string, op metav1.ManagedFieldsOperationType) unstructured.Unstructured {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		if uid != "" {
			tr := true
			u.SetOwnerReferences([]metav1.OwnerReference{{Kind: "HanzoDNS", Name: "dns", UID: uid, Controller: &tr}})
		}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: op}})
		return u
	}
	built := mustYAML(t, "apiVersion: v1\nkind: Service\nmetadata: {name: dns-dns, namespace: ns}\n")
	live := []unstructured.Unstructured{
		child("Service", "dns-dns", owner, "manager", metav1.ManagedFieldsOperationUpdate),          // built: adopted, not leftover
		child("Service", "dns", owner, "hanzo-operator", metav1.ManagedFieldsOperationApply),        // the Rust name: leftover
		child("ConfigMap", "dns-old", owner, "manager", metav1.ManagedFieldsOperationUpdate),        // the Go operator's: leftover
		child("Service", "dns-gone", owner, kinds.ManagerKinds, metav1.ManagedFieldsOperationApply), // ours: pruned, not leftover
		child("Service", "other", "other-uid", "manager", metav1.ManagedFieldsOperationUpdate),      // another CR's
		child("Service", "loose", "", "kubectl", metav1.ManagedFieldsOperationUpdate),               // nobody's
	}
	var got []string
	for _, r := range Leftovers([]*unstructured.Unstructured{built}, live, owner, kinds.ManagerKinds) {
		got = append(got, r.String())
	}
	if diff := cmp.Diff([]string{"ConfigMap/ns/dns-old", "Service/ns/dns"}, got); diff != "" {
		t.Errorf("Leftovers (-want +got):\n%s", diff)
	}
	var pruned []string
	for _, o := range Prunable([]*unstructured.Unstructured{built}, live, owner, kinds.ManagerKinds) {
		pruned = append(pruned, apply.RefOf(o).String())
	}
	if diff := cmp.Diff([]string{"Service/ns/dns-gone"}, pruned); diff != "" {
		t.Errorf("Prunable (-want +got):\n%s", diff)
	}
}

func TestForced(t *testing.T) {
	for v, want := range map[string]bool{"enabled": true, "Enabled": true, "true": true, "": false, "disabled": false, "yes": false} {
		if got := Forced(map[string]string{ForceAnnotation: v}); got != want {
			t.Errorf("Forced(%q) = %v, want %v", v, got, want)
		}
	}
	if Forced(nil) {
		t.Error("Forced(nil)")
	}
}
