package main

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/install"
)

// TestInstallDeployPlaneSeparate: `install --deploy-plane-separate` renders the plane as its
// own Deployment and Service. The Deployment's arguments are `operator deploy-plane` flags
// (parsed by that command) carrying the OIDC settings given to install and the git write
// path (the repository, its user and the mounted token file), the client secret from its
// Secret; the plane's Service selects the plane's pods and the operator's Service does not.
// Without an issuer, or with a plane flag but no --deploy-plane-separate, install refuses.
func TestInstallDeployPlaneSeparate(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--deploy-plane-separate", "--deploy-plane-replicas", "2",
		"--deploy-plane-oidc-issuer", "https://id.example", "--deploy-plane-oidc-audience", "dashboard", "--deploy-plane-admin-values", "admin,ops",
		"--deploy-plane-oidc-client-id", "dashboard", "--deploy-plane-oidc-client-secret", "dash-oidc",
		"--git-url", "https://git.example/u.git", "--git-username", "bot", "--git-branch", "release", "--log-level", "debug",
		"--gitops-token-secret", "git-token", "--gitops-webhook-secret", "hook")
	var planeDep *appsv1.Deployment
	services := map[string]*corev1.Service{}
	pods := map[string]map[string]string{}
	for _, o := range objects(t, manifests) {
		switch o.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			pods[d.Name] = d.Spec.Template.Labels
			if d.Name == install.PlaneName {
				planeDep = d
			}
		case "Service":
			s := &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
				t.Fatal(err)
			}
			services[s.Name] = s
		}
	}
	if planeDep == nil || services[install.PlaneName] == nil {
		t.Fatalf("no Deployment and Service %s in:\n%s", install.PlaneName, manifests)
	}
	if *planeDep.Spec.Replicas != 2 {
		t.Errorf("plane replicas %d, want 2", *planeDep.Spec.Replicas)
	}
	c := planeDep.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "deploy-plane" {
		t.Fatalf("plane runs %q, want deploy-plane", c.Args)
	}
	o := &deployPlaneOptions{}
	if err := newDeployPlaneCommandWith(o).Flags().Parse(c.Args[1:]); err != nil {
		t.Fatalf("operator deploy-plane refuses %q: %v", c.Args, err)
	}
	if o.Plane.Auth.Issuer != "https://id.example" || o.Plane.Auth.Audience != "dashboard" || !slices.Equal(o.Plane.Auth.AdminValues, []string{"admin", "ops"}) ||
		o.Plane.ClientID != "dashboard" || o.Plane.ClientSecretFile != install.PlaneClientSecretFile || o.LogLevel != "debug" || o.Plane.BindAddress != ":8090" {
		t.Errorf("plane options %+v, log %q", o.Plane, o.LogLevel)
	}
	if o.Git.Git.URL != "https://git.example/u.git" || o.Git.Git.Username != "bot" || o.Git.branch() != "release" || o.Git.Source.TokenFile != install.TokenFile {
		t.Errorf("plane git write path %+v token %q: want the operator's repository and its mounted token", o.Git.Git, o.Git.Source.TokenFile)
	}
	mounted := map[string]string{}
	for _, v := range planeDep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted[v.Secret.SecretName] = v.Secret.Items[0].Key
		}
	}
	if mounted["git-token"] != "token" || mounted["dash-oidc"] != "client-secret" || len(mounted) != 2 {
		t.Errorf("plane mounts Secrets %v, want the git token and the OAuth client secret only", mounted)
	}
	if strings.Contains(strings.Join(c.Args, " "), "webhook") {
		t.Errorf("the plane gets the webhook secret: %q", c.Args)
	}
	for name, svc := range services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		for dep, l := range pods {
			if got, want := sel.Matches(labels.Set(l)), (name == install.PlaneName) == (dep == install.PlaneName); got != want {
				t.Errorf("Service %s selects the pods of %s: %t", name, dep, got)
			}
		}
	}

	for args, want := range map[string]string{
		"--deploy-plane-separate":             "needs --deploy-plane-oidc-issuer",
		"--deploy-plane-replicas=2":           "add --deploy-plane-separate",
		"--deploy-plane-oidc-client-secret=s": "needs --deploy-plane-bind-address",
	} {
		out, stderr, code := execute(t, "", "install", "--print", args)
		if code == 0 || !strings.Contains(stderr, want) || out != "" {
			t.Errorf("install %s: exit %d, stderr %q; want %q", args, code, stderr, want)
		}
	}
}
