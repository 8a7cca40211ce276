package upgrade

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture reads a Service CR and returns its spec and the pod template the builders make for
// target: the pre-flight's inputs exactly as the shell derives them.
func fixture(t *testing.T, path, target string) (*v1.Service, Request) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr := &v1.Service{}
	if err := yaml.UnmarshalStrict(data, cr); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	objs, err := kinds.Builtin().Build(u, kinds.Context{APIGroup: kinds.DefaultAPIGroup})
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &dep); err != nil {
		t.Fatal(err)
	}
	return cr, Request{
		Owner:  Owner{APIVersion: "hanzo.ai/v1", Kind: "Service", Name: cr.Name, Namespace: cr.Namespace, UID: cr.UID},
		Target: target, Spec: &cr.Spec, Template: &dep.Spec.Template.Spec,
	}
}

const target = "ghcr.io/hanzoai/ledger:1.1"

func TestPreflightGolden(t *testing.T) {
	_, req := fixture(t, "testdata/stateful.in.yaml", target)
	objs, err := Build(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	golden := filepath.Join("testdata", "stateful.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("pre-flight differs from %s (go test -run TestPreflightGolden -update):\n%s", golden, buf.String())
	}
}

func typed[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPreflightShapes(t *testing.T) {
	_, req := fixture(t, "testdata/stateful.in.yaml", target)
	objs, err := Build(req)
	if err != nil {
		t.Fatal(err)
	}
	var kindsOrder []string
	for _, o := range objs {
		kindsOrder = append(kindsOrder, o.GetKind())
	}
	if want := []string{"NetworkPolicy", "VolumeSnapshot", "PersistentVolumeClaim", "Pod"}; !slices.Equal(kindsOrder, want) {
		t.Fatalf("order = %v, want %v (the policy isolates before the pod exists)", kindsOrder, want)
	}
	n := NamesOf("ledger", target)
	for _, o := range objs {
		t.Run("preflight_resources_carry_the_owner_and_label/"+o.GetKind(), func(t *testing.T) {
			want := map[string]string{LabelPreflightOf: "ledger", LabelPreflightTarget: n.Hash, kinds.LabelManagedBy: kinds.ManagedBy}
			if got := o.GetLabels(); !mapsEqual(got, want) {
				t.Errorf("labels = %v, want exactly %v (never a selector key)", got, want)
			}
			refs := o.GetOwnerReferences()
			if len(refs) != 1 || refs[0].UID != req.Owner.UID || refs[0].Kind != "Service" || ptr.Deref(refs[0].Controller, false) {
				t.Errorf("owner refs = %+v, want the CR, not as controller", refs)
			}
			if !strings.HasPrefix(o.GetName(), n.Pod) || o.GetNamespace() != "apps" {
				t.Errorf("name %s/%s", o.GetNamespace(), o.GetName())
			}
		})
	}
	np := typed[networkingv1.NetworkPolicy](t, objs[0])
	if len(np.Spec.PodSelector.MatchLabels) != 2 || np.Spec.PodSelector.MatchLabels[LabelPreflightTarget] != n.Hash ||
		!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) != 0 || len(np.Spec.Ingress) != 0 {
		t.Errorf("preflight_netpol_denies_egress_and_selects_only_the_preflight_pod: %+v", np.Spec)
	}
	src, _, _ := unstructured.NestedString(objs[1].Object, "spec", "source", "persistentVolumeClaimName")
	class, _, _ := unstructured.NestedString(objs[1].Object, "spec", "volumeSnapshotClassName")
	if src != "ledger-app-db" || class != "csi-snap" || objs[1].GetAPIVersion() != "snapshot.storage.k8s.io/v1" {
		t.Errorf("preflight_snapshot_targets_the_live_pvc: source %q class %q", src, class)
	}
	pvc := typed[corev1.PersistentVolumeClaim](t, objs[2])
	if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != n.Snapshot || ptr.Deref(ds.APIGroup, "") != SnapshotGroup ||
		ptr.Deref(pvc.Spec.StorageClassName, "") != "standard" || pvc.Spec.Resources.Requests.Storage().String() != "5Gi" {
		t.Errorf("preflight_clone_restores_from_the_snapshot: %+v", pvc.Spec)
	}
	p := typed[corev1.Pod](t, objs[3])
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || !ptr.Equal(p.Spec.AutomountServiceAccountToken, ptr.To(false)) {
		t.Errorf("preflight_pod_does_not_automount_the_sa_token: restart %s automount %v", p.Spec.RestartPolicy, p.Spec.AutomountServiceAccountToken)
	}
	if len(p.Spec.Containers) != 1 || len(p.Spec.InitContainers) != 0 {
		t.Errorf("the candidate runs alone (no WAL streamer, no restore init, no sidecar): %d containers, %d inits", len(p.Spec.Containers), len(p.Spec.InitContainers))
	}
	c := p.Spec.Containers[0]
	if c.Image != target || c.Name != "candidate" || c.ReadinessProbe == nil || len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "ledger-env" {
		t.Errorf("candidate container: %+v", c)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["MODE"] != "preflight" || env["OUTBOUND"] != "off" || env["WEBHOOK_URL"] == "" || env["HANZO_VERSION"] != "1.1" || c.Env[0].Name != "MODE" {
		t.Errorf("env (bootEnv laid over the app's env) = %v", c.Env)
	}
	var claims []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if !slices.Equal(claims, []string{n.Clone}) || mounts[preflightVolume] != "/data" || mounts["scratch"] != "/scratch" || len(mounts) != 2 {
		t.Errorf("preflight_pod_mounts_clone_never_live_pvc: claims %v mounts %v", claims, mounts)
	}
	if p.Spec.ServiceAccountName != "ledger" || len(p.Spec.ImagePullSecrets) != 1 {
		t.Errorf("pull secrets and SA name carried: %+v", p.Spec)
	}
}

func TestStatelessPreflightPodHasNoDataVolume(t *testing.T) {
	cr, req := fixture(t, "testdata/stateful.in.yaml", target)
	cr.Spec.Persistence = nil
	dep := req.Template.DeepCopy()
	dep.Volumes = slices.DeleteFunc(dep.Volumes, func(v corev1.Volume) bool { return v.Name == "app-db" || v.Name == "replicate-config" })
	req.Template = dep
	objs, err := Build(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "NetworkPolicy" || objs[1].GetKind() != "Pod" {
		t.Fatalf("stateless pre-flight = %d objects", len(objs))
	}
	p := typed[corev1.Pod](t, objs[1])
	for _, v := range p.Spec.Volumes {
		if v.Name == preflightVolume || v.PersistentVolumeClaim != nil {
			t.Errorf("stateless pod has volume %+v", v)
		}
	}
}

func TestRefuse(t *testing.T) {
	stateful := func() *v1.ServiceSpec {
		return &v1.ServiceSpec{
			Persistence:   &v1.PersistenceSpec{Enabled: true, DataDir: "/data", Storage: &v1.StorageSpec{}},
			UpgradePolicy: &v1.UpgradePolicySpec{Enabled: true, BootEnv: []corev1.EnvVar{{Name: "MODE", Value: "preflight"}}},
		}
	}
	pf := Config{Preflight: true}
	cases := map[string]struct {
		spec        func() *v1.ServiceSpec
		c           Config
		snapshotAPI bool
		want        string
	}{
		"stateful with bootEnv and the API": {stateful, pf, true, ""},
		"upgrade_refusal_requires_boot_env_for_a_stateful_upgrade": {func() *v1.ServiceSpec {
			s := stateful()
			s.UpgradePolicy.BootEnv = nil
			return s
		}, pf, true, RefusedNoBootEnv},
		"upgrade_refusal_rejects_a_declared_live_app_db_volume": {func() *v1.ServiceSpec {
			s := stateful()
			s.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "web-app-db"}}}}
			return s
		}, Config{}, true, RefusedLiveVolume},
		"stateful_without_the_snapshot_api_is_refused": {stateful, pf, false, RefusedNoSnapshotAPI},
		"stateful_without_preflight_needs_no_bootenv": {func() *v1.ServiceSpec {
			s := stateful()
			s.UpgradePolicy.BootEnv = nil
			return s
		}, Config{}, false, ""},
		"stateless needs nothing": {func() *v1.ServiceSpec { return &v1.ServiceSpec{} }, pf, false, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if r := Refuse("web", tc.spec(), tc.c, tc.snapshotAPI); r != nil {
				got = r.Reason
				if r.Message == "" {
					t.Error("a refusal says why")
				}
			}
			if got != tc.want {
				t.Errorf("Refuse = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCollect(t *testing.T) {
	now := t0.Add(time.Hour)
	old := now.Add(-10 * time.Minute)
	labels := Labels("web", imgB)
	h := labels[LabelPreflightTarget]
	cases := map[string]struct {
		r    Resource
		o    OwnerState
		want bool
	}{
		"gc_reclaims_a_preflight_whose_service_has_no_inflight_upgrade": {Resource{labels, old}, OwnerState{Known: true}, true},
		"gc_keeps_the_current_inflight_preflight":                       {Resource{labels, old}, OwnerState{Known: true, InFlight: h}, false},
		"gc_reclaims_a_superseded_one":                                  {Resource{labels, old}, OwnerState{Known: true, InFlight: TargetHash(imgC)}, true},
		"gc_fails_closed_on_unknown_service_status":                     {Resource{labels, old}, OwnerState{}, false},
		"gc_grace_window_skips_a_freshly_created_preflight":             {Resource{labels, now.Add(-time.Minute)}, OwnerState{Known: true}, false},
		"gc_missing_timestamp_counts_as_old":                            {Resource{labels, time.Time{}}, OwnerState{Known: true}, true},
		"gc_ignores_what_is_not_a_preflight":                            {Resource{map[string]string{"a": "b"}, old}, OwnerState{Known: true}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got, why := Collect(tc.r, tc.o, now, DefaultGCGrace); got != tc.want {
				t.Errorf("Collect = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
	if GCInterval(0) != DefaultGCInterval || GCInterval(time.Second) != MinGCInterval || GCInterval(time.Hour) != time.Hour {
		t.Error("GCInterval: default 600 s, floor 30 s")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
