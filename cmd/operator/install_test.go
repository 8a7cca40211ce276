package main

import (
	"context"
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ssautil "github.com/fluxcd/pkg/ssa/utils"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/install"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// gitInstall is an install with a git source, two replicas and both Secrets.
var gitInstall = []string{"install", "--print",
	"--api-group", "lux.cloud", "--namespace", "universe-system", "--image", "registry.example/operator:v1.2.3",
	"--replicas", "2",
	"--github-repository", "openuniverse/universe", "--github-branch", "release", "--github-path", "crs",
	"--gitops-resync", "2m", "--gitops-namespaces", "apps,data", "--gitops-apply-scope", "apps/web,data/db",
	"--gitops-token-secret", "gitops-token", "--gitops-token-secret-key", "github-token",
	"--gitops-webhook-secret", "gitops-webhook",
}

// printed runs `operator install --print` and returns what follows the CRD bundle, which
// it checks comes first, byte for byte.
func printed(t *testing.T, group string, args ...string) string {
	t.Helper()
	out, stderr, code := execute(t, "", args...)
	if code != 0 {
		t.Fatalf("operator %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	bundle, err := kinds.Bundle(group)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(out, string(bundle))
	if !ok {
		t.Fatal("install --print does not start with the CRD bundle")
	}
	return rest
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestInstallPrintGolden(t *testing.T) {
	t.Run("git source", func(t *testing.T) {
		golden(t, "install-git.yaml", printed(t, "lux.cloud", gitInstall...))
	})
	t.Run("defaults", func(t *testing.T) {
		golden(t, "install-defaults.yaml", printed(t, kinds.DefaultAPIGroup, "install", "--print", "--image", "registry.example/operator:v1.2.3"))
	})
	t.Run("crds only", func(t *testing.T) {
		if rest := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--crds-only"); rest != "" {
			t.Errorf("--crds-only printed more than the bundle:\n%s", rest)
		}
	})
}

func TestInstallRefuses(t *testing.T) {
	base := []string{"install", "--print"}
	cases := map[string]struct {
		args []string
		want string
	}{
		"two sources":                {[]string{"--git-url", "https://git.example/u.git", "--github-repository", "o/u", "--gitops-webhook-secret", "w"}, "not both"},
		"ssh url":                    {[]string{"--git-url", "git@git.example:o/u.git", "--gitops-webhook-secret", "w"}, "needs --git-ssh-secret"},
		"ssh scheme":                 {[]string{"--git-url", "ssh://git@git.example/o/u.git", "--gitops-webhook-secret", "w"}, "needs --git-ssh-secret"},
		"ssh secret, https url":      {[]string{"--git-url", "https://git.example/u.git", "--gitops-webhook-secret", "w", "--git-ssh-secret", "k"}, "needs an ssh --git-url"},
		"plane without issuer":       {[]string{"--deploy-plane-bind-address", ":8443"}, "needs --deploy-plane-oidc-issuer"},
		"plane on our port":          {[]string{"--deploy-plane-bind-address", ":8081", "--deploy-plane-oidc-issuer", "https://id.example"}, "operator's own"},
		"plane issuer, no plane":     {[]string{"--deploy-plane-oidc-issuer", "https://id.example"}, "needs --deploy-plane-bind-address"},
		"shards and a selector":      {[]string{"--shards", "2", "--watch-label-selector", "a=b"}, "the shards set the selectors"},
		"log format":                 {[]string{"--log-format", "xml"}, "want console or json"},
		"open webhook":               {[]string{"--gitops-webhook-insecure"}, "unknown flag"},
		"pprof":                      {[]string{"--pprof-bind-address", ":6060"}, "unknown flag"},
		"token without source":       {[]string{"--gitops-token-secret", "t"}, "need a git source"},
		"webhook without source":     {[]string{"--gitops-webhook-secret", "w"}, "need a git source"},
		"source without webhook":     {[]string{"--github-repository", "o/u"}, "needs --gitops-webhook-secret"},
		"source without the loop":    {[]string{"--github-repository", "o/u", "--gitops-webhook-secret", "w", "--controllers", "kinds"}, "runs no gitops loop"},
		"unknown loop":               {[]string{"--controllers", "kinds,sweep"}, `unknown loop "sweep"`},
		"drive without its token":    {[]string{"--controllers", "kinds,drive", "--drive-platform-url", "https://platform.example"}, "needs --drive-token-secret"},
		"drive token, no loop":       {[]string{"--drive-token-secret", "p"}, "which --controllers does not run"},
		"agents secret, no loop":     {[]string{"--agent-visor-secret", "v"}, "which --controllers does not run"},
		"cloud url without token":    {[]string{"--controllers", "kinds,agents", "--agent-cloud-url", "https://cloud.example"}, "needs --agent-cloud-token-secret"},
		"visor url without secret":   {[]string{"--controllers", "kinds,agents", "--agent-visor-url", "https://visor.example"}, "needs --agent-visor-secret"},
		"no replicas":                {[]string{"--replicas", "0"}, "want at least 1"},
		"k8s plane without issuer":   {[]string{"--k8s-plane-bind-address", ":8091", "--k8s-plane-oidc-audience", "k8s"}, "--k8s-plane-oidc-issuer is required"},
		"k8s plane without audience": {[]string{"--k8s-plane-bind-address", ":8091", "--k8s-plane-oidc-issuer", "https://id.example"}, "--k8s-plane-oidc-audience is required"},
		"k8s plane on our port":      {[]string{"--k8s-plane-bind-address", ":8082", "--k8s-plane-oidc-issuer", "https://id.example", "--k8s-plane-oidc-audience", "k8s"}, "operator's own"},
		"k8s plane on the deploy plane's port": {[]string{"--k8s-plane-bind-address", ":8443", "--k8s-plane-oidc-issuer", "https://id.example", "--k8s-plane-oidc-audience", "k8s",
			"--deploy-plane-bind-address", ":8443", "--deploy-plane-oidc-issuer", "https://id.example"}, "the deploy plane's"},
		"k8s plane socket":                      {[]string{"--k8s-plane-socket", "/tmp/k8s.sock", "--k8s-plane-oidc-issuer", "https://id.example", "--k8s-plane-oidc-audience", "k8s"}, "reaches no caller"},
		"k8s issuer, no plane":                  {[]string{"--k8s-plane-oidc-issuer", "https://id.example"}, "needs --k8s-plane-bind-address"},
		"fleet without its loops":               {[]string{"--fleet", "--controllers", "tenants"}, "runs neither"},
		"fleet, no kind controllers, no source": {[]string{"--fleet", "--fleet-kind-controllers=false"}, "runs neither"},
		"sops without source":                   {[]string{"--gitops-sops-age-secret", "age"}, "needs --git-url or --github-repository"},
		"sops key elsewhere": {[]string{"--github-repository", "o/u", "--gitops-webhook-secret", "w", "--gitops-sops-age-secret", "apps/age"},
			"a Secret of --namespace universe-system only"},
		"commit status, no token":       {[]string{"--github-repository", "o/u", "--gitops-webhook-secret", "w", "--commit-status", "github"}, "needs --commit-status-token-secret"},
		"commit status token only":      {[]string{"--commit-status-token-secret", "s"}, "is set but --commit-status is not"},
		"commit status, no source":      {[]string{"--commit-status", "github", "--commit-status-token-secret", "s"}, "needs the gitops loop"},
		"commit status url only":        {[]string{"--commit-status-url", "https://gl.example/api/v4"}, "--commit-status-url is set but --commit-status is not"},
		"preview without commit status": {[]string{"--github-repository", "o/u", "--gitops-webhook-secret", "w", "--preview"}, "--preview posts its check through the commit status API: it needs --commit-status"},
		"preview without a source":      {[]string{"--preview", "--commit-status", "github", "--commit-status-token-secret", "s"}, "--preview previews the pull requests of the swept repository"},
		"token secret without key":      {[]string{"--github-repository", "o/u", "--gitops-webhook-secret", "w", "--gitops-token-secret", "t", "--gitops-token-secret-key", ""}, "needs a key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := execute(t, "", append(base, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, stderr, tc.want)
			}
			if out != "" {
				t.Errorf("printed manifests despite the error:\n%.200s", out)
			}
		})
	}
}

// objects decodes the manifests of `install --print` after the CRDs.
func objects(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssautil.ReadObjects(strings.NewReader(manifests))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func deploymentOf(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no Deployment")
	return nil
}

// TestInstalledArgsAreRunFlags parses the installed container's arguments with `operator
// run`'s own flags: each git setting given to install arrives as given, the files it names
// are the read-only Secret mounts, and the ports the probes and Service use are the ones
// run listens on. What the e2e passes `operator run` on the command line (e2e/harness_test.go
// startOperator: --git-url, --git-username, --gitops-token-file, and --kubeconfig,
// --namespace, --git-cache-dir and the two bind addresses) the pod gets as arguments or from
// its environment: in-cluster config, OPERATOR_NAMESPACE from the downward API, the
// default cache dir under the emptyDir /tmp.
func TestInstalledArgsAreRunFlags(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--namespace", "ops",
		"--git-url", "https://git.example/universe.git", "--git-username", "git", "--git-branch", "main", "--git-path", "crs",
		"--gitops-resync", "30s", "--gitops-namespaces", "apps", "--gitops-token-secret", "git-creds",
		"--gitops-webhook-secret", "hook", "--gitops-webhook-secret-key", "hmac", "--log-level", "debug")
	d := deploymentOf(t, objects(t, manifests))
	pod := d.Spec.Template.Spec
	ctr := pod.Containers[0]
	if ctr.Args[0] != "run" {
		t.Fatalf("args %q: want the run command", ctr.Args)
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := &runOptions{}
	o.BindFlags(fs)
	if err := fs.Parse(ctr.Args[1:]); err != nil {
		t.Fatalf("operator run refuses the installed arguments %q: %v", ctr.Args, err)
	}
	if fs.NArg() != 0 {
		t.Errorf("stray arguments %q", fs.Args())
	}
	got := map[string]string{
		"git-url": o.Git.URL, "git-username": o.Git.Username, "git-branch": o.Git.Branch, "git-path": o.Git.Path,
		"gitops-resync": o.GitOps.Resync.String(), "gitops-namespaces": strings.Join(o.GitOps.Namespaces, ","),
		"gitops-token-file": o.Source.TokenFile, "gitops-webhook-secret-file": o.GitOps.WebhookSecretFile,
		"leader-elect": boolString(o.LeaderElect), "log-level": o.LogLevel, "git-cache-dir": o.Git.CacheDir,
		"controllers": strings.Join(o.Controllers, ","), "health-probe-bind-address": o.ProbeAddr, "metrics-bind-address": o.MetricsAddr,
		"webhook-bind-address": o.WebhookAddr,
		"watch-namespaces":     strings.Join(o.Shard.Namespaces, ","), "leader-election-id": o.LeaderID,
	}
	want := map[string]string{
		"git-url": "https://git.example/universe.git", "git-username": "git", "git-branch": "main", "git-path": "crs",
		"gitops-resync": "30s", "gitops-namespaces": "apps",
		"gitops-token-file": install.TokenFile, "gitops-webhook-secret-file": install.WebhookSecretFile,
		"leader-elect": "false", "log-level": "debug", "git-cache-dir": "",
		"controllers": "kinds,gitops,imageupdate,tenants", "health-probe-bind-address": ":8081", "metrics-bind-address": ":8080",
		"webhook-bind-address": ":8082",
		// the caches within the Roles of the owned namespaces; the Lease named as before
		"watch-namespaces": "apps", "leader-election-id": "universe-operator.hanzo.ai",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operator run options from the installed args (-want +got):\n%s", diff)
	}

	// The files are the Secrets' keys, read-only.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for file, secret := range map[string][2]string{o.Source.TokenFile: {"git-creds", "token"}, o.GitOps.WebhookSecretFile: {"hook", "hmac"}} {
		var m *corev1.VolumeMount
		for i := range ctr.VolumeMounts {
			if ctr.VolumeMounts[i].MountPath == path.Dir(file) {
				m = &ctr.VolumeMounts[i]
			}
		}
		if m == nil || !m.ReadOnly || m.SubPath != "" {
			t.Errorf("%s: mount %+v, want a read-only mount of its directory", file, m)
			continue
		}
		s := volumes[m.Name].Secret
		if s == nil || s.SecretName != secret[0] || !cmp.Equal(s.Items, []corev1.KeyToPath{{Key: secret[1], Path: path.Base(file)}}) {
			t.Errorf("%s: volume %+v, want Secret %s key %s", file, volumes[m.Name], secret[0], secret[1])
		}
	}
	// The cache dir default is under os.TempDir, the writable emptyDir.
	if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" && !m.ReadOnly }) {
		t.Error("no writable /tmp for the git cache")
	}
	env := map[string]*corev1.EnvVar{}
	for i := range ctr.Env {
		env[ctr.Env[i].Name] = &ctr.Env[i]
	}
	if e := env["OPERATOR_NAMESPACE"]; e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("OPERATOR_NAMESPACE %+v, want the pod's namespace", e)
	}
	if e := env["OPERATOR_API_GROUP"]; e == nil || e.Value != kinds.DefaultAPIGroup {
		t.Errorf("OPERATOR_API_GROUP %+v", e)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("one replica without leader election: strategy %s, want Recreate (never two writers)", d.Spec.Strategy.Type)
	}

	// Two replicas elect a leader and get a budget.
	objs := objects(t, printed(t, "lux.cloud", gitInstall...))
	d = deploymentOf(t, objs)
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--leader-elect=true") || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d args %q: want 2 with --leader-elect=true", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "PodDisruptionBudget" }) {
		t.Error("no PodDisruptionBudget with two replicas")
	}
}

// TestInstallDriveAndAgents: install configures the drive and agents loops as operator run
// takes them: the pass-through flags as given, each token a read-only mount of its Secret's
// key at the file the run flag names.
func TestInstallDriveAndAgents(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--controllers", "kinds,drive,tenants,agents",
		"--drive-platform-url", "https://platform.example", "--drive-token-secret", "platform", "--drive-token-secret-key", "bearer",
		"--drive-cluster", "prod-1", "--drive-mode", "dry-run", "--drive-allow", "hanzo/*", "--drive-org-id", "hanzo",
		"--tenant-label", "example.org/tenant=yes", "--agent-deploy-mode", "bind-only",
		"--agent-cloud-url", "https://cloud.example", "--agent-cloud-token-secret", "cloud",
		"--agent-visor-url", "https://visor.example", "--agent-visor-secret", "visor")
	d := deploymentOf(t, objects(t, manifests))
	ctr := d.Spec.Template.Spec.Containers[0]
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := &runOptions{}
	o.BindFlags(fs)
	if err := fs.Parse(ctr.Args[1:]); err != nil {
		t.Fatalf("operator run refuses the installed arguments %q: %v", ctr.Args, err)
	}
	if err := checkLoops(o.Controllers); err != nil || strings.Join(o.Controllers, ",") != "kinds,drive,tenants,agents" {
		t.Errorf("controllers %v (%v)", o.Controllers, err)
	}
	dr := o.Drive
	got := []string{dr.PlatformURL, dr.TokenFile, dr.Cluster, dr.Mode, dr.Allow, dr.OrgID, dr.TenantLabel, dr.AgentMode, dr.CloudURL, dr.CloudTokenFile, dr.VisorURL, dr.VisorIDFile, dr.VisorSecretFile}
	want := []string{"https://platform.example", install.DriveTokenFile, "prod-1", "dry-run", "hanzo/*", "hanzo", "example.org/tenant=yes", "bind-only",
		"https://cloud.example", install.AgentCloudTokenFile, "https://visor.example", install.AgentVisorIDFile, install.AgentVisorSecretFile}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drive and agents options from the installed args (-want +got):\n%s", diff)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for file, secret := range map[string][2]string{install.DriveTokenFile: {"platform", "bearer"}, install.AgentCloudTokenFile: {"cloud", "token"},
		install.AgentVisorIDFile: {"visor", "client-id"}, install.AgentVisorSecretFile: {"visor", "client-secret"}} {
		var m *corev1.VolumeMount
		for i := range ctr.VolumeMounts {
			if ctr.VolumeMounts[i].MountPath == path.Dir(file) {
				m = &ctr.VolumeMounts[i]
			}
		}
		if m == nil || !m.ReadOnly || m.SubPath != "" {
			t.Errorf("%s: mount %+v, want a read-only mount of its directory", file, m)
			continue
		}
		s := volumes[m.Name].Secret
		if s == nil || s.SecretName != secret[0] || !cmp.Equal(s.Items, []corev1.KeyToPath{{Key: secret[1], Path: path.Base(file)}}) {
			t.Errorf("%s: volume %+v, want Secret %s key %s", file, volumes[m.Name], secret[0], secret[1])
		}
	}
	for _, a := range ctr.Args {
		if strings.Contains(a, "tenant-clusterrole") {
			t.Errorf("install passed %s: the tenant ClusterRole is the one its RBAC may bind", a)
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestInstallPrintAccepted server-side dry-runs every printed object on the real apiserver,
// and creates (dry-run) a Pod from the Deployment's template in a namespace that enforces
// the "restricted" Pod Security Standard: PodSecurity admission, on by default in
// kube-apiserver, admits it. A Pod that drops the hardening is refused there, so the check
// can fail.
func TestInstallPrintAccepted(t *testing.T) {
	cfg := testbed.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out, stderr, code := execute(t, "", gitInstall...)
	if code != 0 {
		t.Fatalf("install --print: %s", stderr)
	}
	objs := objects(t, out)
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	// The CRDs and the Namespaces (the operator's and the owned ones, which hold its Roles)
	// for real (the namespaced objects need them), the rest dry-run.
	namespaces := 0
	for namespaces < len(rest) && rest[namespaces].GetKind() == "Namespace" {
		namespaces++
	}
	if namespaces != 3 {
		t.Fatalf("%d Namespaces first, want the operator's and the owned apps, data", namespaces)
	}
	applied := (&apply.Applier{Client: c, Manager: kinds.ManagerInstall}).Apply(ctx, append(crds, rest[:namespaces]...))
	for _, r := range applied {
		if r.Action == apply.Failed || r.Action == apply.Denied {
			t.Fatalf("%s: %s", r.Object, r.Message)
		}
	}
	// every printed Deployment (and its Service, RBAC, budget) passes the apiserver's
	// validation: the git source, the defaults, every capability, shards
	for name, args := range map[string][]string{
		"git": gitInstall, "defaults": {"install", "--print"}, "capabilities": capabilityInstall,
		"shards": {"install", "--print", "--shards", "2", "--replicas", "2", "--upgrade-fsm", "--kind-concurrency", "4"},
	} {
		out, stderr, code := execute(t, "", args...)
		if code != 0 {
			t.Fatalf("%s: install --print: %s", name, stderr)
		}
		n := 0
		for _, o := range objects(t, out) {
			if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
				continue
			}
			n++
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(kinds.ManagerInstall), client.ForceOwnership, client.DryRunAll); err != nil {
				t.Errorf("%s: server-side dry-run of %s %s: %v", name, o.GetKind(), o.GetName(), err)
			}
		}
		if n < 6 {
			t.Errorf("%s: %d objects dry-run, want the RBAC, Service and Deployment", name, n)
		}
	}

	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "psa-restricted", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := c.Create(ctx, restricted); err != nil {
		t.Fatal(err)
	}
	tmpl := deploymentOf(t, rest).Spec.Template
	pod := func(mutate func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: restricted.Name, Labels: tmpl.Labels}, Spec: *tmpl.Spec.DeepCopy()}
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	if err := c.Create(ctx, pod(nil), client.DryRunAll); err != nil {
		t.Errorf("the restricted namespace refuses the operator's pod: %v", err)
	}
	// The control: the same pod with privilege escalation allowed is refused.
	err = c.Create(ctx, pod(func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
	}), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a pod allowing privilege escalation: %v, want PodSecurity's refusal", err)
	}
}

// TestInstallSaysWhatTheRBACCovers: install says on stderr whether the operator's grants
// cover every namespace (--gitops-namespaces=*, or none named: what was asked) or a Role
// in each owned namespace; the manifests agree.
func TestInstallSaysWhatTheRBACCovers(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		says  string
		roles int // Roles named universe-operator.hanzo.ai
	}{
		{[]string{"--gitops-namespaces=*"}, "every namespace is owned", 0},
		{nil, "every namespace is owned", 0},
		{[]string{"--gitops-namespaces=apps,data", "--watch-namespaces=web", "--gitops-service-account=gitops"},
			"a Role and RoleBinding universe-operator.hanzo.ai in each owned namespace (apps,data,web)", 3},
	} {
		out, stderr, code := execute(t, "", append([]string{"install", "--print"}, tc.args...)...)
		if code != 0 || !strings.Contains(stderr, tc.says) {
			t.Errorf("install %v: exit %d, stderr %q, want it to say %q", tc.args, code, stderr, tc.says)
		}
		roles := 0
		for _, o := range objects(t, out) {
			if o.GetKind() == "Role" && o.GetName() == "universe-operator.hanzo.ai" {
				roles++
			}
		}
		if roles != tc.roles {
			t.Errorf("install %v: %d per-namespace Roles, want %d", tc.args, roles, tc.roles)
		}
	}
}
