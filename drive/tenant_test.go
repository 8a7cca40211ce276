package drive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/e2e/testbed"
)

// startTenants runs tenant onboarding in a manager against cfg.
func startTenants(t *testing.T, cfg *rest.Config, o drive.TenantOptions) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme(t), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	tn := &drive.Tenants{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Opts: o, Log: testr.New(t)}
	if err := tn.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func tenantOptions(suffix string) drive.TenantOptions {
	o := drive.DefaultTenantOptions()
	o.LabelKey = "test.universe/managed-by-" + suffix // one label per test: the tests' managers do not see each other's namespaces
	o.SourceSecret = types.NamespacedName{Namespace: "tenant-src-" + suffix, Name: "ghcr-pull-source"}
	return o
}

func createNS(t *testing.T, c client.Client, name string, labels map[string]string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	// created as the platform's cloud API does: the one manager trusted to make tenants
	if err := c.Create(context.Background(), ns, client.FieldOwner("cloud-api")); err != nil {
		t.Fatal(err)
	}
	return ns
}

func pullSource(t *testing.T, c client.Client, o drive.TenantOptions, cfg string) {
	t.Helper()
	createNS(t, c, o.SourceSecret.Namespace, nil)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.SourceSecret.Name, Namespace: o.SourceSecret.Namespace},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func TestTenantOnboarding(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	o := tenantOptions("a")
	dockercfg := `{"auths":{"ghcr.io":{"auth":"eDp5"}}}`
	pullSource(t, c, o, dockercfg)
	tenant := createNS(t, c, "tenant-a1", map[string]string{o.LabelKey: o.LabelValue})
	foreign := createNS(t, c, "tenant-a2", map[string]string{o.LabelKey: o.LabelValue})
	other := createNS(t, c, "tenant-a3", map[string]string{o.LabelKey: "someone-else"})
	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.PullSecret, Namespace: foreign.Name},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("theirs")}}
	if err := c.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	startTenants(t, cfg, o)

	var rb rbacv1.RoleBinding
	eventually(t, "RoleBinding in the tenant namespace", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: "cloud-api-platform"}, &rb) == nil, nil
	})
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != "hanzo-cloud-platform-tenant" ||
		len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Namespace != "hanzo" || rb.Subjects[0].Name != "cloud-api" {
		t.Errorf("RoleBinding = %+v %+v", rb.RoleRef, rb.Subjects)
	}
	checkOwned := func(m metav1.Object) {
		t.Helper()
		refs := m.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "Namespace" || refs[0].UID != tenant.UID || !ptr.Deref(refs[0].Controller, false) {
			t.Errorf("%s owner references = %+v", m.GetName(), refs)
		}
		if m.GetLabels()[o.LabelKey] != o.LabelValue {
			t.Errorf("%s labels = %v", m.GetName(), m.GetLabels())
		}
	}
	checkOwned(&rb)
	var sec corev1.Secret
	eventually(t, "pull Secret in the tenant namespace", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: "ghcr-pull"}, &sec) == nil, nil
	})
	if sec.Type != corev1.SecretTypeDockerConfigJson || string(sec.Data[corev1.DockerConfigJsonKey]) != dockercfg {
		t.Errorf("pull Secret type %s, data %d bytes", sec.Type, len(sec.Data[corev1.DockerConfigJsonKey]))
	}
	checkOwned(&sec)

	// a foreign Secret of the same name is left alone; the RoleBinding still lands
	eventually(t, "RoleBinding next to a foreign Secret", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: foreign.Name, Name: "cloud-api-platform"}, &rbacv1.RoleBinding{}) == nil, nil
	})
	time.Sleep(time.Second)
	var theirs corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(mine), &theirs); err != nil {
		t.Fatal(err)
	}
	if theirs.Type != corev1.SecretTypeOpaque || string(theirs.Data["k"]) != "theirs" || len(theirs.OwnerReferences) != 0 {
		t.Errorf("the foreign Secret was overwritten: type %s, owners %v", theirs.Type, theirs.OwnerReferences)
	}
	// a namespace with another label value gets nothing
	if err := c.Get(ctx, client.ObjectKey{Namespace: other.Name, Name: "cloud-api-platform"}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("unlabelled namespace: get RoleBinding = %v, want NotFound", err)
	}
	// never a ClusterRoleBinding
	var crbs rbacv1.ClusterRoleBindingList
	if err := c.List(ctx, &crbs, client.HasLabels{o.LabelKey}); err != nil || len(crbs.Items) != 0 {
		t.Errorf("ClusterRoleBindings labelled %s: %d (%v)", o.LabelKey, len(crbs.Items), err)
	}
	// an out-of-band delete of the RoleBinding is repaired (it is owned and watched)
	if err := c.Delete(ctx, &rb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted RoleBinding re-created", func(ctx context.Context) (bool, error) {
		var again rbacv1.RoleBinding
		err := c.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: "cloud-api-platform"}, &again)
		return err == nil && again.UID != rb.UID, nil
	})
}

func TestTenantSecretFailOpen(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	o := tenantOptions("b") // its source Secret is never created
	tenant := createNS(t, c, "tenant-b1", map[string]string{o.LabelKey: o.LabelValue})
	startTenants(t, cfg, o)
	eventually(t, "RoleBinding without a pull secret source", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: tenant.Name, Name: "cloud-api-platform"}, &rbacv1.RoleBinding{}) == nil, nil
	})
	err := c.Get(context.Background(), client.ObjectKey{Namespace: tenant.Name, Name: "ghcr-pull"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("pull Secret without a source: %v", err)
	}
	if o2 := (drive.Tenants{}); o2.SetupWithManager(nil) == nil || !strings.Contains(o2.SetupWithManager(nil).Error(), "label key") {
		t.Error("empty tenant options accepted")
	}
}

// TestTenantOnboardingTrustsOnlyThePlatform is the attack on tenant onboarding: a
// universe-repo writer declares a Namespace labelled as a tenant (the git sweep applies it),
// a tenant labels its own Namespace, and the operator's own and kube-* Namespaces carry the
// label; none of them receives the RoleBinding or the fleet's pull Secret. Only the
// Namespace whose label the platform wrote is onboarded.
func TestTenantOnboardingTrustsOnlyThePlatform(t *testing.T) {
	cfg := testbed.APIServer(t)
	c := installCRDs(t, cfg)
	ctx := context.Background()
	o := tenantOptions("c")
	o.OperatorNamespace = "tenant-c-operator"
	pullSource(t, c, o, `{"auths":{"ghcr.io":{"auth":"ZmxlZXQ6c2VjcmV0"}}}`)
	label := map[string]string{o.LabelKey: o.LabelValue}
	fromGit := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-c-git", Labels: label}}
	fromGit.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fromGit)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner("universe-operator-gitops")); err != nil {
		t.Fatal(err)
	}
	self := createNS(t, c, "tenant-c-self", nil)
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, o.LabelKey, o.LabelValue)
	if err := c.Patch(ctx, self, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}
	createNS(t, c, "kube-tenant-c", label)
	createNS(t, c, o.OperatorNamespace, label)
	ok := createNS(t, c, "tenant-c-ok", label)
	startTenants(t, cfg, o)
	eventually(t, "the platform's tenant onboarded", func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Namespace: ok.Name, Name: o.PullSecret}, &corev1.Secret{}) == nil, nil
	})
	time.Sleep(time.Second) // the other Namespaces were queued with it
	for _, ns := range []string{"tenant-c-git", "tenant-c-self", "kube-tenant-c", o.OperatorNamespace} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.PullSecret}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s received the fleet's pull Secret (get: %v)", ns, err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.RoleBinding}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s received the platform RoleBinding (get: %v)", ns, err)
		}
	}
}
