package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/install"
)

// capabilityInstall switches on every capability from one install command: an ssh git
// source, the upgrade machine, the deploy plane in the main Deployment with its OIDC
// settings, watch namespaces and a label selector, Kind concurrency, CRDs from git, the
// drive loop, the fleet, the /v1/k8s cluster plane with its OIDC settings, SOPS keys, commit
// statuses and the pull request preview.
var capabilityInstall = []string{"install", "--print", "--image", "registry.example/operator:v1.2.3", "--replicas", "2",
	"--git-url", "ssh://git@git.example/universe.git", "--git-ssh-secret", "git-ssh", "--gitops-webhook-secret", "hook",
	"--gitops-namespaces", "apps", "--gitops-allow-crds",
	"--upgrade-fsm", "--preflight-gc-interval", "5m",
	"--watch-namespaces", "apps,universe-system", "--watch-label-selector", "tier!=lab", "--kind-concurrency", "8",
	"--controllers", "kinds,gitops,imageupdate,tenants,drive",
	"--drive-platform-url", "https://platform.example", "--drive-token-secret", "platform", "--drive-mode", "dry-run",
	"--deploy-plane-bind-address", ":8443", "--deploy-plane-oidc-issuer", "https://id.example", "--deploy-plane-oidc-audience", "deploy",
	"--deploy-plane-oidc-client-id", "dash", "--deploy-plane-oidc-client-secret", "dash-oauth", "--deploy-plane-public-url", "https://deploy.example",
	"--fleet", "--gitops-sops-age-secret", "universe-system/age-keys",
	"--k8s-plane-bind-address", ":8091", "--k8s-plane-oidc-issuer", "https://id.example", "--k8s-plane-oidc-audience", "k8s-plane",
	"--alerts-secret", "alerts",
	"--commit-status", "github", "--commit-status-token-secret", "status-token", "--commit-status-repository", "acme/universe", "--preview",
}

// runOf parses a container's arguments with operator run's flags.
func runOf(t *testing.T, ctr corev1.Container) *runOptions {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := &runOptions{}
	o.BindFlags(fs)
	if ctr.Args[0] != "run" {
		t.Fatalf("args %q: want the run command", ctr.Args)
	}
	if err := fs.Parse(ctr.Args[1:]); err != nil {
		t.Fatalf("operator run refuses the installed arguments %q: %v", ctr.Args, err)
	}
	return o
}

// TestInstallEveryCapability: each capability given to install reaches the Deployment's
// operator run as given, its credentials as read-only Secret mounts, its ports on the
// container and the Service; secure metrics and the authorized report are on by default.
func TestInstallEveryCapability(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, capabilityInstall...)
	golden(t, "install-capabilities.yaml", manifests)
	objs := objects(t, manifests)
	d := deploymentOf(t, objs)
	ctr := d.Spec.Template.Spec.Containers[0]
	o := runOf(t, ctr)
	got := map[string]any{
		"upgrade-fsm": o.UpgradeFSM, "preflight-gc-interval": o.PreflightGCEvery.String(), "metrics-secure": o.MetricsSecure,
		"gitops-report-authz": o.GitOpsReportAuthz, "log-format": o.LogFormat,
		"watch-namespaces": o.Shard.Namespaces, "watch-label-selector": o.Shard.LabelSelector, "kind-concurrency": o.KindConcurrency,
		"gitops-allow-crds": o.GitOps.CRDs, "git-url": o.Git.URL, "git-ssh-key-file": o.Git.SSHKeyFile, "git-known-hosts-file": o.Git.KnownHostsFile,
		"controllers": o.Controllers, "drive-platform-url": o.Drive.PlatformURL, "drive-token-file": o.Drive.TokenFile,
		"deploy-plane-bind-address": o.Plane.BindAddress, "deploy-plane-oidc-issuer": o.Plane.Auth.Issuer,
		"deploy-plane-oidc-audience": o.Plane.Auth.Audience, "deploy-plane-oidc-client-id": o.Plane.ClientID,
		"deploy-plane-oidc-client-secret-file": o.Plane.ClientSecretFile, "deploy-plane-public-url": o.Plane.PublicURL,
		"leader-elect": o.LeaderElect, "alerts-secret": o.AlertsSecret,
		"fleet": o.Fleet.On, "gitops-sops-age-secret": o.GitOps.SOPSAgeSecret,
		"k8s-plane-bind-address": o.K8sPlane.BindAddress, "k8s-plane-oidc-issuer": o.K8sPlane.Issuer, "k8s-plane-oidc-audience": o.K8sPlane.Audience,
		"commit-status": o.CommitStatus.Provider, "commit-status-token-file": o.CommitStatus.TokenFile, "preview": o.Preview,
	}
	want := map[string]any{
		"upgrade-fsm": true, "preflight-gc-interval": "5m0s", "metrics-secure": true, "gitops-report-authz": true, "log-format": "json",
		"watch-namespaces": []string{"apps", "universe-system"}, "watch-label-selector": "tier!=lab", "kind-concurrency": 8,
		"gitops-allow-crds": true, "git-url": "ssh://git@git.example/universe.git", "git-ssh-key-file": install.GitSSHKeyFile,
		"git-known-hosts-file": install.GitKnownHostsFile,
		"controllers":          []string{"kinds", "gitops", "imageupdate", "tenants", "drive"}, "drive-platform-url": "https://platform.example",
		"drive-token-file": install.DriveTokenFile, "deploy-plane-bind-address": ":8443", "deploy-plane-oidc-issuer": "https://id.example",
		"deploy-plane-oidc-audience": "deploy", "deploy-plane-oidc-client-id": "dash",
		"deploy-plane-oidc-client-secret-file": install.PlaneClientSecretFile, "deploy-plane-public-url": "https://deploy.example",
		"leader-elect": true, "alerts-secret": "alerts",
		"fleet": true, "gitops-sops-age-secret": "universe-system/age-keys",
		"k8s-plane-bind-address": ":8091", "k8s-plane-oidc-issuer": "https://id.example", "k8s-plane-oidc-audience": "k8s-plane",
		"commit-status": "github", "commit-status-token-file": install.CommitStatusTokenFile, "preview": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operator run options from the installed args (-want +got):\n%s", diff)
	}
	// the ssh key and known_hosts: one read-only Secret volume, both keys, host keys checked
	var sshVol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "git-ssh" {
			sshVol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if sshVol == nil || !cmp.Equal(sshVol.Secret.Items, []corev1.KeyToPath{{Key: "identity", Path: "identity"}, {Key: "known_hosts", Path: "known_hosts"}}) {
		t.Errorf("ssh volume %+v, want the Secret git-ssh's identity and known_hosts", sshVol)
	}
	if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return sshVol != nil && m.Name == sshVol.Name && m.ReadOnly }) {
		t.Error("the ssh Secret is not mounted read-only")
	}
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "deploy-plane" && p.ContainerPort == 8443 }) {
		t.Errorf("container ports %+v: no deploy-plane 8443", ctr.Ports)
	}
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == "k8s-plane" && p.ContainerPort == 8091 }) {
		t.Errorf("container ports %+v: no k8s-plane 8091", ctr.Ports)
	}
	capabilityRBAC(t, objs)
	for _, u := range objs {
		if u.GetKind() != "Service" {
			continue
		}
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
			t.Fatal(err)
		}
		ports := map[string]corev1.ServicePort{}
		for _, p := range svc.Spec.Ports {
			ports[p.Name] = p
		}
		if p := ports["deploy-plane"]; p.Port != 8443 || p.TargetPort.StrVal != "deploy-plane" {
			t.Errorf("Service port deploy-plane %+v", p)
		}
		if p := ports["k8s-plane"]; p.Port != 8091 || p.TargetPort.StrVal != "k8s-plane" {
			t.Errorf("Service port k8s-plane %+v", p)
		}
		if p := ports["metrics"]; p.AppProtocol == nil || *p.AppProtocol != "https" {
			t.Errorf("Service port metrics %+v: want appProtocol https with --metrics-secure", p)
		}
	}

	// Opened explicitly: metrics over plain HTTP, the report to anyone reaching the port.
	d = deploymentOf(t, objects(t, printed(t, kinds.DefaultAPIGroup, "install", "--print", "--metrics-secure=false", "--gitops-report-authz=false", "--log-format=console")))
	o = runOf(t, d.Spec.Template.Spec.Containers[0])
	if o.MetricsSecure || o.GitOpsReportAuthz || o.LogFormat != "console" {
		t.Errorf("metrics-secure %t gitops-report-authz %t log-format %s: want both opened, console", o.MetricsSecure, o.GitOpsReportAuthz, o.LogFormat)
	}
}

// capabilityRBAC: the fleet, the cluster plane and the SOPS keys each get their rules, and
// nothing broader: the Cluster objects (the install's group) read and their status patched
// cluster-wide, the cluster plane's registry writes, the Secrets of the operator's namespace
// only (the SOPS keys by name), the plane's audit Events in default and nothing else there;
// no Secret rule in the ClusterRole.
func capabilityRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	group := kinds.DefaultAPIGroup
	rule := func(g, res string, verbs []string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{g}, Resources: []string{res}, Verbs: verbs, ResourceNames: names}
	}
	want := map[string][]rbacv1.PolicyRule{ // by kind/namespace/name
		"ClusterRole//" + install.ClusterRoleName(group): {
			rule(group, "clusters", []string{"get", "list", "watch"}),
			rule(group, "clusters/status", []string{"patch"}),
			rule(group, "clusters", []string{"get", "list", "create", "update", "delete"}),
		},
		"Role/universe-system/" + install.LeaderElectionRole: {
			rule("", "secrets", []string{"get"}),
			rule("", "secrets", []string{"list", "watch"}),
			rule("", "secrets", []string{"get", "create", "update", "delete"}),
			rule("", "secrets", []string{"get"}, "age-keys"),
		},
		"Role/default/" + install.DefaultRoleName(group): {rule("", "events", []string{"create"})},
	}
	got := map[string][]rbacv1.PolicyRule{}
	owned := []string{"apps", "universe-system"} // --gitops-namespaces, --watch-namespaces
	for _, u := range objs {
		var rules []rbacv1.PolicyRule
		switch u.GetKind() {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cr); err != nil {
				t.Fatal(err)
			}
			rules = cr.Rules
		case "Role":
			var r rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				t.Fatal(err)
			}
			rules = r.Rules
		default:
			continue
		}
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		got[key] = rules
		for _, r := range rules {
			secrets := slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*")
			switch {
			case secrets && u.GetKind() == "ClusterRole":
				t.Errorf("%s grants %v on Secrets cluster-wide", key, r.Verbs)
			case secrets && !slices.Contains(owned, u.GetNamespace()):
				t.Errorf("%s grants %v on Secrets outside the owned namespaces and the operator's", key, r.Verbs)
			case u.GetNamespace() == "default" && !cmp.Equal(r, rule("", "events", []string{"create"})):
				t.Errorf("%s grants %+v in default: want the audit Events' create only", key, r)
			}
		}
	}
	for key, rules := range want {
		for _, r := range rules {
			if !slices.ContainsFunc(got[key], func(g rbacv1.PolicyRule) bool { return cmp.Equal(g, r) }) {
				t.Errorf("%s: no rule %+v", key, r)
			}
		}
	}
	if n := len(got["Role/default/"+install.DefaultRoleName(group)]); n != 1 {
		t.Errorf("the Role in default has %d rules, want the audit Events' one", n)
	}
}

// TestUpTakesInstallFlags: up accepts every install flag, --upgrade-fsm among them (it was
// "unknown flag").
func TestUpTakesInstallFlags(t *testing.T) {
	_, stderr, code := execute(t, "", "up", "--upgrade-fsm", "--kind-concurrency", "4", "--gitops-namespaces", "apps", "--manifests", t.TempDir()+"/none")
	if code == 0 || strings.Contains(stderr, "unknown flag") || !strings.Contains(stderr, "--manifests") {
		t.Errorf("exit %d, stderr %q: want the missing manifests refused, not a flag", code, stderr)
	}
}

// TestInstallFleetWithoutSweeps: --fleet without a git source runs only the Kind controllers
// on the registered clusters, which read their credentials with one GET each: the operator's
// namespace gets get on Secrets, not the list and watch of the sweeps' cache.
func TestInstallFleetWithoutSweeps(t *testing.T) {
	objs := objects(t, printed(t, kinds.DefaultAPIGroup, "install", "--print", "--gitops-namespaces", "apps", "--fleet"))
	if !slices.Contains(runOf(t, deploymentOf(t, objs).Spec.Template.Spec.Containers[0]).Controllers, "kinds") {
		t.Fatal("the installed operator runs no kinds loop")
	}
	for _, u := range objs {
		if u.GetKind() != "Role" || u.GetName() != install.LeaderElectionRole {
			continue
		}
		var r rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			t.Fatal(err)
		}
		get := false
		for _, rule := range r.Rules {
			if !slices.Contains(rule.Resources, "secrets") {
				continue
			}
			if slices.Contains(rule.Verbs, "list") || slices.Contains(rule.Verbs, "watch") {
				t.Errorf("the operator's namespace grants %v on Secrets without the fleet's sweeps", rule.Verbs)
			}
			get = get || len(rule.ResourceNames) == 0 && slices.Contains(rule.Verbs, "get")
		}
		if !get {
			t.Error("no get on the credential Secrets of the operator's namespace")
		}
		return
	}
	t.Fatal("no Role " + install.LeaderElectionRole)
}
