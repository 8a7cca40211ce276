package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
)

// writeKubeconfig writes a kubeconfig for cfg (envtest's client certificate).
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUninstallRemovesOnlyItsOwn installs a universe (two replicas, a shard, the separate
// deploy plane: a PDB, three Deployments, two Services; the cluster plane: a Role in
// default; two owned namespaces besides its own: a Role and RoleBinding in each) on the real
// apiserver, then: `uninstall --crds` refuses while a CR
// exists, naming it, and deletes nothing; `uninstall` deletes every object install applied
// and nothing else (an object with install's labels another manager applied, the user's
// Secret, the Namespace, another universe's ClusterRole, the CRs and CRDs stay); once the
// CR is gone `uninstall --crds` deletes the universe's CRDs and keeps those the other
// universe shares (the chain family, and the lux.network CRDs install --lux-network-kinds
// applied).
func TestUninstallRemovesOnlyItsOwn(t *testing.T) {
	cfg := testbed.APIServer(t)
	kc := writeKubeconfig(t, cfg)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const group, ns = "zoo.cloud", "uninstall-zoo"
	out, stderr, code := execute(t, "", "install", "--kubeconfig", kc, "--api-group", group, "--namespace", ns,
		"--image", "registry.example/operator:v1.0.0", "--replicas", "2", "--shards", "1", "--lux-network-kinds",
		"--watch-namespaces", ns+","+ns+"-a,"+ns+"-b", // a Role and RoleBinding in each
		"--deploy-plane-separate", "--deploy-plane-oidc-issuer", "https://id.example",
		"--k8s-plane-bind-address", ":8091", "--k8s-plane-oidc-issuer", "https://id.example", "--k8s-plane-oidc-audience", "k8s-plane")
	if code != 0 {
		t.Fatalf("install: %s\n%s", stderr, out)
	}
	if !strings.Contains(out, "CustomResourceDefinition/luxnetworks.lux.network CREATE") {
		t.Errorf("install --lux-network-kinds applied no lux.network CRD:\n%s", out)
	}
	var installed []apply.ObjRef
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ref, _, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(ref, "CustomResourceDefinition/") && !strings.HasPrefix(ref, "Namespace/") {
			installed = append(installed, parseRef(t, ref))
		}
	}
	eventsRole := apply.ObjRef{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role", Namespace: install.DefaultNamespace, Name: install.DefaultRoleName(group)}
	if !slices.Contains(installed, eventsRole) {
		t.Errorf("install --k8s-plane-bind-address applied no %s:\n%s", eventsRole, out)
	}
	if len(installed) < 11 {
		t.Fatalf("install applied %d objects besides the CRDs and the Namespace:\n%s", len(installed), out)
	}

	// What is not install's: a ConfigMap with its labels written by kubectl, the user's
	// Secret, another universe's ClusterRole (applied by install), a CR.
	labels := map[string]any{kinds.LabelName: install.OperatorName, kinds.LabelManagedBy: kinds.ManagerInstall}
	decoy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "lookalike", "namespace": ns, "labels": labels}, "data": map[string]any{"k": "v"}}}
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": install.OperatorName + ".osage.cloud", "labels": labels}}}
	// and the same group's RoleBinding in a namespace it does not own, binding another
	// install's ServiceAccount.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-c"}}); err != nil {
		t.Fatal(err)
	}
	foreign := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": install.RoleName(group), "namespace": ns + "-c", "labels": labels},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": install.RoleName(group)},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": install.OperatorName, "namespace": "elsewhere"}}}}
	for obj, manager := range map[*unstructured.Unstructured]string{decoy: "kubectl", other: kinds.ManagerInstall, foreign: kinds.ManagerInstall} {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(manager)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), other) })
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gitops-token", Namespace: ns}, StringData: map[string]string{"token": "t"}}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"image": map[string]any{"repository": "registry.example/web", "tag": "v1"},
			"ports": []any{map[string]any{"name": "http", "containerPort": int64(8080)}}}}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}

	exists := func(ref apply.ObjRef) bool {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
		err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("get %s: %v", ref, err)
		}
		return err == nil && u.GetDeletionTimestamp() == nil
	}
	crdRef := func(name string) apply.ObjRef {
		return apply.ObjRef{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: name}
	}
	own, kms, shared := crdRef("services."+group), crdRef("kmssecrets.kms."+group), crdRef("")
	bundle, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range bundle {
		if crd.Spec.Group != group && crd.Spec.Group != "kms."+group {
			shared = crdRef(crd.Name)
			break
		}
	}

	_, stderr, code = execute(t, "", "uninstall", "--kubeconfig", kc, "--api-group", group, "--namespace", ns, "--crds")
	if code == 0 || !strings.Contains(stderr, "Service/"+ns+"/web") || !strings.Contains(stderr, "refused") {
		t.Fatalf("uninstall --crds with a CR left: exit %d, stderr %q, want a refusal naming Service/%s/web", code, stderr, ns)
	}
	for _, ref := range append(installed, own, kms) {
		if !exists(ref) {
			t.Errorf("the refused uninstall --crds deleted %s", ref)
		}
	}

	out, stderr, code = execute(t, "", "uninstall", "--kubeconfig", kc, "--api-group", group, "--namespace", ns)
	if code != 0 {
		t.Fatalf("uninstall: exit %d %s\n%s", code, stderr, out)
	}
	for _, ref := range installed {
		if exists(ref) {
			t.Errorf("uninstall left %s, which install applied", ref)
		}
		if !strings.Contains(out, ref.String()+" "+string(apply.Deleted)) {
			t.Errorf("uninstall printed no deletion of %s:\n%s", ref, out)
		}
	}
	for _, obj := range []client.Object{decoy, other, foreign, secret, cr} {
		ref := apply.ObjRef{Group: obj.GetObjectKind().GroupVersionKind().Group, Version: obj.GetObjectKind().GroupVersionKind().Version,
			Kind: obj.GetObjectKind().GroupVersionKind().Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if ref.Kind == "" {
			ref.Version, ref.Kind = "v1", "Secret"
		}
		if !exists(ref) {
			t.Errorf("uninstall deleted %s, which is not install's", ref)
		}
	}
	for _, ref := range []apply.ObjRef{{Version: "v1", Kind: "Namespace", Name: ns}, own, kms} {
		if !exists(ref) {
			t.Errorf("uninstall without --crds deleted %s", ref)
		}
	}
	if !strings.Contains(out, "ConfigMap/"+ns+"/lookalike KEPT") || !strings.Contains(out, "Namespace/"+ns+" KEPT") {
		t.Errorf("uninstall does not say what it kept:\n%s", out)
	}

	if err := c.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = execute(t, "", "uninstall", "--kubeconfig", kc, "--api-group", group, "--namespace", ns, "--crds")
	if code != 0 {
		t.Fatalf("uninstall --crds with no CR: exit %d %s\n%s", code, stderr, out)
	}
	for _, ref := range []apply.ObjRef{own, kms} {
		if exists(ref) {
			t.Errorf("uninstall --crds left %s", ref)
		}
	}
	for _, ref := range []apply.ObjRef{shared, crdRef("luxnetworks.lux.network")} {
		if !exists(ref) || !strings.Contains(out, ref.String()+" KEPT: shared with the install of osage.cloud") {
			t.Errorf("uninstall --crds deleted %s, which the osage.cloud install shares:\n%s", ref, out)
		}
	}
}

// parseRef reads Kind/namespace/name or Kind/name, the apiVersion from the Kinds install applies.
func parseRef(t *testing.T, s string) apply.ObjRef {
	t.Helper()
	parts := strings.Split(s, "/")
	ref := apply.ObjRef{Kind: parts[0], Name: parts[len(parts)-1]}
	if len(parts) == 3 {
		ref.Namespace = parts[1]
	}
	for _, gvk := range install.OwnKinds {
		if gvk.Kind == ref.Kind {
			ref.Group, ref.Version = gvk.Group, gvk.Version
			return ref
		}
	}
	t.Fatalf("install applied a %s, which uninstall.OwnKinds does not list", ref.Kind)
	return ref
}
