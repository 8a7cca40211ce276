package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/install"
)

// capabilityInstall switches on every capability from one install command: an ssh git
// source, the upgrade machine, the deploy plane in the main Deployment with its OIDC
// settings, watch namespaces and a label selector, Kind concurrency, CRDs from git, the
// drive loop.
var capabilityInstall = []string{"install", "--print", "--image", "registry.example/operator:v1.2.3", "--replicas", "2",
	"--git-url", "ssh://git@git.example/universe.git", "--git-ssh-secret", "git-ssh", "--gitops-webhook-secret", "hook",
	"--gitops-namespaces", "apps", "--gitops-allow-crds",
	"--upgrade-fsm", "--preflight-gc-interval", "5m",
	"--watch-namespaces", "apps,universe-system", "--watch-label-selector", "tier!=lab", "--kind-concurrency", "8",
	"--controllers", "kinds,gitops,imageupdate,tenants,drive",
	"--drive-platform-url", "https://platform.example", "--drive-token-secret", "platform", "--drive-mode", "dry-run",
	"--deploy-plane-bind-address", ":8443", "--deploy-plane-oidc-issuer", "https://id.example", "--deploy-plane-oidc-audience", "deploy",
	"--deploy-plane-oidc-client-id", "dash", "--deploy-plane-oidc-client-secret", "dash-oauth", "--deploy-plane-public-url", "https://deploy.example",
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
		"leader-elect": o.LeaderElect,
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
		"leader-elect": true,
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

// TestUpTakesInstallFlags: up accepts every install flag, --upgrade-fsm among them (it was
// "unknown flag").
func TestUpTakesInstallFlags(t *testing.T) {
	_, stderr, code := execute(t, "", "up", "--upgrade-fsm", "--kind-concurrency", "4", "--gitops-namespaces", "apps", "--manifests", t.TempDir()+"/none")
	if code == 0 || strings.Contains(stderr, "unknown flag") || !strings.Contains(stderr, "--manifests") {
		t.Errorf("exit %d, stderr %q: want the missing manifests refused, not a flag", code, stderr)
	}
}
