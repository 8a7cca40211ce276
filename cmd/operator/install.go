package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
)

// defaultImage is the operator image of this build (hack/image tags it with the version).
func defaultImage() string { return "ghcr.io/openuniverse/operator:" + version }

// processLocal are the `operator run` flags install does not pass to the Deployment, each
// with why. Every other run flag is an install flag too and reaches the Deployment as
// --name=value when given (or when installDefaults sets it), so a new run flag is installable
// the day it is added; TestEveryRunSettingIsInstallable fails for a field neither passed nor
// listed here.
var processLocal = map[string]string{ //nolint:gosec // G101: flag names and reasons, no credential
	"config":                               "install renders every setting as a flag of the Deployment; a file would be a second source",
	"kubeconfig":                           "the pod uses its ServiceAccount's in-cluster config",
	"api-group":                            "install's own --api-group; the pod gets OPERATOR_API_GROUP",
	"namespace":                            "install's own --namespace; the pod reads OPERATOR_NAMESPACE from the downward API",
	"leader-elect":                         "set from --replicas: on above one replica",
	"health-probe-bind-address":            "fixed at the port the liveness and readiness probes use",
	"webhook-bind-address":                 "fixed at the port the Service's webhook targets",
	"metrics-bind-address":                 "fixed at the Service's metrics port",
	"pprof-bind-address":                   "profiles are unauthenticated: never served by an installed pod (use operator run locally)",
	"gitops-token-file":                    "mounted from --gitops-token-secret",
	"gitops-webhook-secret-file":           "mounted from --gitops-webhook-secret",
	"gitops-webhook-insecure":              "an installed webhook never runs open: a git source needs --gitops-webhook-secret",
	"drive-token-file":                     "mounted from --drive-token-secret",
	"commit-status-token-file":             "mounted from --commit-status-token-secret",
	"agent-cloud-token-file":               "mounted from --agent-cloud-token-secret",
	"agent-visor-client-id-file":           "mounted from --agent-visor-secret (key client-id)",
	"agent-visor-client-secret-file":       "mounted from --agent-visor-secret (key client-secret)",
	"git-ssh-key-file":                     "mounted from --git-ssh-secret (key identity)",
	"git-known-hosts-file":                 "mounted from --git-ssh-secret (key known_hosts)",
	"deploy-plane-oidc-client-secret-file": "mounted from --deploy-plane-oidc-client-secret",
	"git-cache-dir":                        "the default, under the pod's writable emptyDir /tmp (the root file system is read-only)",
	"tenant-clusterrole":                   "install grants bind on exactly the default tenant ClusterRole",
}

// installDefaults are the run flags whose installed default differs from run's, passed to
// the Deployment whether given or not: loops the installed RBAC covers, secure metrics, the
// report behind the apiserver's authn/authz, JSON logs.
var installDefaults = map[string]string{
	"controllers":         strings.Join([]string{loopKinds, loopGitOps, loopImageUpdate, loopTenants}, ","),
	"metrics-secure":      "true",
	"gitops-report-authz": "true",
	"log-format":          "json",
}

// installFlags are the flags of `operator install` (and `operator up`).
type installFlags struct {
	o          install.InstallOptions
	kubeconfig string
	print      bool
	fs         *pflag.FlagSet
	// run holds the run flags install takes; run flags are bound to it (runFlags).
	run      *runOptions
	runFlags *pflag.FlagSet
	plane    installPlaneFlags // installplane.go
}

// newInstallCommand returns `operator install`, which server-side applies the CRD bundle
// and the operator's Deployment with its RBAC, or prints them.
func newInstallCommand() *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the CRDs and the operator (Namespace, RBAC, Service, Deployment) into the cluster",
		Long: "Server-side apply the CRD bundle of --api-group, then, unless --crds-only, the operator's\n" +
			"Namespace, ServiceAccount, least-privilege RBAC (a Role and binding in each namespace of\n" +
			"--gitops-namespaces and --watch-namespaces, a ClusterRole of cluster-scoped reads; one\n" +
			"ClusterRole for every namespace only with --gitops-namespaces=* or none), leader-election\n" +
			"Role and binding, Service (webhook and metrics), Deployment and, with --replicas above 1, a\n" +
			"PodDisruptionBudget, under the field manager " + kinds.ManagerInstall + ".\n" +
			"Idempotent: a second run reports every object in-sync. Prints one line per object.\n\n" +
			"Every flag of `operator run` is an install flag (but those install sets itself: the\n" +
			"ports, leader election, the files) and reaches the Deployment as given. Installed\n" +
			"defaults: --metrics-secure and --gitops-report-authz on, --log-format=json.\n" +
			"Credentials come from Secrets in --namespace, mounted read-only: the git token, the\n" +
			"webhook secret, the ssh key and known_hosts, the drive and agents tokens, the deploy\n" +
			"plane's OAuth client secret. --fleet, --k8s-plane-bind-address (a Service port; needs\n" +
			"the plane's OIDC issuer and audience) and --gitops-sops-age-secret (a Secret of\n" +
			"--namespace) add the RBAC they need. Run it again with a new --image to upgrade. With --print,\n" +
			"write the manifests to stdout instead and touch no cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.complete(); err != nil {
				return err
			}
			if !f.o.CRDsOnly {
				fmt.Fprintln(cmd.ErrOrStderr(), "install: "+install.RBACSummary(f.o))
			}
			if f.print {
				return printInstall(cmd.OutOrStdout(), f.o)
			}
			return runInstall(cmd, f)
		},
	}
	f.bind(cmd.Flags())
	cmd.Flags().BoolVar(&f.print, "print", false, "Write the manifests to stdout instead of applying them; needs no cluster.")
	return cmd
}

// bind registers install's flags on fs: its own and every installable run flag.
func (f *installFlags) bind(fs *pflag.FlagSet) {
	o := &f.o
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace the operator runs in; holds its Secrets and Lease.")
	fs.StringVar(&o.Image, "image", defaultImage(), "Operator container image.")
	fs.BoolVar(&o.CRDsOnly, "crds-only", false, "Install the CRDs only.")
	fs.Int32Var(&o.Replicas, "replicas", 1, "Operator replicas; above 1 they elect a leader and get a PodDisruptionBudget.")
	fs.Int32Var(&o.Shards, "shards", 0, "Add N shard Deployments <operator>-shard<i> (Kind controllers only) for the CRs labelled "+apply.ShardLabel+"=shard<i>; the main one skips those.")
	fs.StringVar(&o.TokenSecret.Name, "gitops-token-secret", "", "Secret holding the git host token (passed as --gitops-token-file).")
	fs.StringVar(&o.TokenSecret.Key, "gitops-token-secret-key", "token", "Key of the token in --gitops-token-secret.")
	fs.StringVar(&o.WebhookSecret.Name, "gitops-webhook-secret", "", "Secret holding the push webhook's HMAC secret (passed as --gitops-webhook-secret-file); required with a git source.")
	fs.StringVar(&o.WebhookSecret.Key, "gitops-webhook-secret-key", "secret", "Key of the HMAC secret in --gitops-webhook-secret.")
	fs.StringVar(&o.GitSSHSecret, "git-ssh-secret", "", "Secret holding the ssh private key (key identity) and the host keys (key known_hosts) of an ssh --git-url; host keys are always checked.")
	fs.StringVar(&o.DriveTokenSecret.Name, "drive-token-secret", "", "Secret holding the platform's Bearer token for the drive loop (passed as --drive-token-file).")
	fs.StringVar(&o.DriveTokenSecret.Key, "drive-token-secret-key", "token", "Key of the token in --drive-token-secret.")
	fs.StringVar(&o.CommitStatusTokenSecret.Name, "commit-status-token-secret", "", "Secret holding the git host token commit statuses are posted with (passed as --commit-status-token-file); required with --commit-status.")
	fs.StringVar(&o.CommitStatusTokenSecret.Key, "commit-status-token-secret-key", "token", "Key of the token in --commit-status-token-secret.")
	fs.StringVar(&o.AgentCloudTokenSecret.Name, "agent-cloud-token-secret", "", "Secret holding the cloud API token for the agents loop (passed as --agent-cloud-token-file).")
	fs.StringVar(&o.AgentCloudTokenSecret.Key, "agent-cloud-token-secret-key", "token", "Key of the token in --agent-cloud-token-secret.")
	fs.StringVar(&o.AgentVisorSecret, "agent-visor-secret", "", "Secret holding visor's IAM client id and secret under the keys client-id and client-secret (agents loop).")
	fs.StringVar(&o.PlaneClientSecret.Name, "deploy-plane-oidc-client-secret", "", "Secret holding the deploy plane's OAuth client secret (passed as --deploy-plane-oidc-client-secret-file).")
	fs.StringVar(&o.PlaneClientSecret.Key, "deploy-plane-oidc-client-secret-key", "client-secret", "Key of the client secret in --deploy-plane-oidc-client-secret.")
	fs.BoolVar(&o.LuxNetworkKinds, "lux-network-kinds", false, "Also install the luxfi operator's lux.network/v1alpha1 CRDs (as `operator crds --lux-network-kinds` prints them); the ClusterRole covers their Kinds either way.")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	f.run = &runOptions{}
	f.runFlags = pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.run.BindFlags(f.runFlags)
	f.runFlags.VisitAll(func(fl *pflag.Flag) {
		if _, local := processLocal[fl.Name]; local {
			return
		}
		if v, ok := installDefaults[fl.Name]; ok {
			// a slice's Set appends after the first call: Replace keeps a given flag replacing it
			var err error
			if sv, ok := fl.Value.(pflag.SliceValue); ok {
				err = sv.Replace(strings.Split(v, ","))
			} else {
				err = fl.Value.Set(v)
			}
			if err != nil {
				panic(fmt.Sprintf("install default --%s=%s: %v", fl.Name, v, err))
			}
			fl.DefValue = v
		}
		fs.AddFlag(fl)
	})
	f.plane.bind(fs)
	f.fs = fs
}

// passThrough returns the Deployment's `operator run` arguments of the installable run
// flags, sorted by name: those given and those with an installed default. --controllers
// goes apart (InstallOptions.Controllers).
func (f *installFlags) passThrough() []string {
	var args []string
	f.runFlags.VisitAll(func(fl *pflag.Flag) {
		if _, local := processLocal[fl.Name]; local || fl.Name == "controllers" {
			return
		}
		if f.plane.separate && strings.HasPrefix(fl.Name, "deploy-plane-") {
			return // the separate plane's Deployment takes them (installplane.go)
		}
		if _, def := installDefaults[fl.Name]; fl.Changed || def {
			args = append(args, "--"+fl.Name+"="+flagValue(fl))
		}
	})
	return args
}

// complete turns the pass-through flags into the Deployment's `operator run` arguments and
// refuses what the installed operator could not run with.
func (f *installFlags) complete() error {
	f.deriveRunArgs()
	switch {
	case f.o.Replicas < 1:
		return fmt.Errorf("--replicas %d: want at least 1", f.o.Replicas)
	case f.o.Shards < 0:
		return fmt.Errorf("--shards %d: want 0 or more", f.o.Shards)
	case f.o.CRDsOnly:
		return nil
	}
	if err := f.plane.complete(f.fs, &f.o); err != nil {
		return err
	}
	if err := f.checkSource(); err != nil {
		return err
	}
	if err := checkLoops(f.o.Controllers); err != nil {
		return err
	}
	if _, err := newLogger(f.run.LogFormat, f.run.LogLevel); err != nil {
		return err
	}
	if err := f.checkDriveAndAgents(); err != nil {
		return err
	}
	if err := f.checkCommitStatus(); err != nil {
		return err
	}
	if err := f.completePlane(); err != nil {
		return err
	}
	return f.completeCapabilities()
}

// completeCapabilities sets what the RBAC and the Service of the fleet, the cluster plane
// and SOPS decryption need, or refuses what the installed operator could not run with.
func (f *installFlags) completeCapabilities() error {
	r := f.run
	f.o.FleetKinds, f.o.FleetSweeps, f.o.K8sPlanePort, f.o.SOPSAgeSecret = false, false, 0, ""
	hasSource := r.Git.URL != "" || r.GitHub.Repository != ""
	if r.Fleet.On {
		f.o.FleetKinds = r.FleetKinds.On && slices.Contains(f.o.Controllers, loopKinds)
		f.o.FleetSweeps = hasSource && slices.Contains(f.o.Controllers, loopGitOps)
		if !f.o.FleetKinds && !f.o.FleetSweeps {
			return fmt.Errorf("--fleet runs the Kind controllers on the registered clusters (the kinds loop, --fleet-kind-controllers) and their git sweeps (the gitops loop with a git source); --controllers=%s runs neither",
				strings.Join(f.o.Controllers, ","))
		}
	}
	if p := r.K8sPlane; p.Enabled() {
		if p.Socket != "" {
			return errors.New("--k8s-plane-socket: a unix socket inside the installed pod reaches no caller; serve the cluster plane on --k8s-plane-bind-address")
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("--k8s-plane-bind-address %s: %w", p.BindAddress, err)
		}
		port, err := bindPort(p.BindAddress)
		if err != nil {
			return fmt.Errorf("--k8s-plane-bind-address: %w", err)
		}
		if port == install.ProbePort || port == install.WebhookPort || port == install.MetricsPort || port == f.o.PlanePort {
			return fmt.Errorf("--k8s-plane-bind-address %s: port %d is the operator's own or the deploy plane's", p.BindAddress, port)
		}
		f.o.K8sPlanePort = port
	} else {
		var given []string
		f.runFlags.VisitAll(func(fl *pflag.Flag) {
			if fl.Changed && strings.HasPrefix(fl.Name, "k8s-plane-") && fl.Name != "k8s-plane-bind-address" {
				given = append(given, "--"+fl.Name)
			}
		})
		if len(given) > 0 {
			return fmt.Errorf("%s configure the cluster plane, which needs --k8s-plane-bind-address", strings.Join(given, ", "))
		}
	}
	if name := r.GitOps.SOPSAgeSecret; name != "" {
		if ns, n, ok := strings.Cut(name, "/"); ok {
			if ns != f.o.Namespace {
				return fmt.Errorf("--gitops-sops-age-secret %s: install grants get on a Secret of --namespace %s only; keep the age keys there", name, f.o.Namespace)
			}
			name = n
		}
		if !hasSource {
			return errors.New("--gitops-sops-age-secret decrypts files of the git source: it needs --git-url or --github-repository")
		}
		f.o.SOPSAgeSecret = name
	}
	return nil
}

// deriveRunArgs sets the options install derives from the run flags: the Deployment's
// arguments, the namespaces the RBAC covers, the Lease and the loops.
func (f *installFlags) deriveRunArgs() {
	r := f.run
	get := func(name string) string { return flagValue(f.fs.Lookup(name)) }
	f.o.RunArgs = f.passThrough()
	f.o.MetricsSecure, f.o.GitOpsCRDs = r.MetricsSecure, r.GitOps.CRDs
	f.o.PlanePort = 0
	// The RBAC covers the namespaces the loops work in; every namespace only when asked
	// (--gitops-namespaces=*, or none named). Named, the caches are kept to them too.
	owned := append(gitops.SplitList(get("gitops-namespaces")), gitops.SplitList(get("watch-namespaces"))...)
	f.o.OwnedNamespaces, f.o.GitServiceAccount, f.o.TenantPullSource = nil, get("gitops-service-account"), get("tenant-pull-secret-source")
	f.o.AlertsSecret = get("alerts-secret")
	if f.o.TenantPullSource == "" {
		f.o.TenantPullSource = f.o.Namespace + "/" + get("tenant-pull-secret")
	}
	if !slices.Contains(owned, gitops.All) {
		f.o.OwnedNamespaces = owned
	}
	if !f.o.OwnsAll() && !f.fs.Lookup("watch-namespaces").Changed {
		// the Lease keeps the name it had without the namespaces, so that the old and the
		// new pods of an upgrade elect through the same one
		var sel string
		if f.o.Shards > 0 {
			sel = "!" + apply.ShardLabel
		}
		f.o.RunArgs = append(f.o.RunArgs, "--watch-namespaces="+strings.Join(f.o.OwnedNamespaces, ","))
		if !f.fs.Lookup("leader-election-id").Changed {
			f.o.RunArgs = append(f.o.RunArgs, "--leader-election-id="+reconcile.Shard{LabelSelector: sel}.LeaseID(install.OperatorName+"."+f.o.APIGroup))
		}
	}
	f.o.Controllers = slices.Clone(r.Controllers)
}

// checkSource refuses a git source the installed operator could not run with.
func (f *installFlags) checkSource() error {
	gitURL, repo := f.run.Git.URL, f.run.GitHub.Repository
	hasSource := gitURL != "" || repo != ""
	switch {
	case gitURL != "" && repo != "":
		return errors.New("set one of --git-url and --github-repository, not both")
	case isSSH(gitURL) && f.o.GitSSHSecret == "":
		return fmt.Errorf("--git-url %s: an ssh URL needs --git-ssh-secret (keys identity and known_hosts)", gitURL)
	case !isSSH(gitURL) && f.o.GitSSHSecret != "":
		return errors.New("--git-ssh-secret needs an ssh --git-url (ssh://… or user@host:path)")
	case !hasSource && (f.o.TokenSecret.Name != "" || f.o.WebhookSecret.Name != ""):
		return errors.New("--gitops-token-secret and --gitops-webhook-secret need a git source (--git-url or --github-repository)")
	case hasSource && !slices.Contains(f.o.Controllers, "gitops"):
		return fmt.Errorf("a git source is set but --controllers=%s runs no gitops loop", strings.Join(f.o.Controllers, ","))
	case hasSource && f.o.WebhookSecret.Name == "":
		return errors.New("a git source needs --gitops-webhook-secret: POST /reconcile refuses unsigned requests in the cluster")
	case f.o.Shards > 0 && f.runFlags.Changed("watch-label-selector"):
		return errors.New("--watch-label-selector and --shards: the shards set the selectors themselves")
	}
	return nil
}

// checkDriveAndAgents refuses drive and agents settings for loops --controllers does not run,
// and URLs without the Secret of their token.
func (f *installFlags) checkDriveAndAgents() error {
	d := f.run.Drive
	drive, agents := slices.Contains(f.o.Controllers, loopDrive), slices.Contains(f.o.Controllers, loopAgents)
	switch {
	case !drive && (f.o.DriveTokenSecret.Name != "" || d.PlatformURL != ""):
		return errors.New("--drive-platform-url and --drive-token-secret configure the drive loop, which --controllers does not run")
	case drive && d.PlatformURL != "" && f.o.DriveTokenSecret.Name == "":
		return errors.New("the drive loop needs --drive-token-secret with --drive-platform-url: the platform's token comes from a Secret")
	case !agents && (f.o.AgentCloudTokenSecret.Name != "" || f.o.AgentVisorSecret != ""):
		return errors.New("--agent-cloud-token-secret and --agent-visor-secret configure the agents loop, which --controllers does not run")
	case d.CloudURL != "" && f.o.AgentCloudTokenSecret.Name == "":
		return errors.New("--agent-cloud-url needs --agent-cloud-token-secret")
	case d.VisorURL != "" && f.o.AgentVisorSecret == "":
		return errors.New("--agent-visor-url needs --agent-visor-secret (keys client-id and client-secret)")
	}
	return nil
}

// checkCommitStatus refuses --commit-status without the Secret of its token, the Secret
// without --commit-status, and what `operator run` would refuse at start (--preview
// included).
func (f *installFlags) checkCommitStatus() error {
	cs, secret := f.run.CommitStatus, f.o.CommitStatusTokenSecret.Name
	r := *f.run
	r.Controllers = f.o.Controllers
	if err := resolvePreview(&r); err != nil {
		return err
	}
	switch {
	case cs.Enabled() && secret == "":
		return errors.New("--commit-status needs --commit-status-token-secret: the git host's token comes from a Secret")
	case !cs.Enabled() && secret != "":
		return errors.New("--commit-status-token-secret is set but --commit-status is not")
	case !cs.Enabled():
		return cs.Validate()
	}
	r.CommitStatus.TokenFile = install.CommitStatusTokenFile
	_, err := resolveCommitStatus(&r)
	return err
}

// completePlane checks the in-process deploy plane's settings and sets its port.
func (f *installFlags) completePlane() error {
	r := f.run
	if p := r.Plane; p.Enabled() {
		if p.Auth.Issuer == "" {
			return errors.New("--deploy-plane-bind-address needs --deploy-plane-oidc-issuer: the plane never runs open")
		}
		port, err := bindPort(p.BindAddress)
		if err != nil {
			return fmt.Errorf("--deploy-plane-bind-address: %w", err)
		}
		if port == install.ProbePort || port == install.WebhookPort || port == install.MetricsPort {
			return fmt.Errorf("--deploy-plane-bind-address %s: port %d is the operator's own", p.BindAddress, port)
		}
		f.o.PlanePort = port
	} else if !f.plane.separate && (f.o.PlaneClientSecret.Name != "" || r.Plane.Auth.Issuer != "") {
		return errors.New("--deploy-plane-oidc-issuer and --deploy-plane-oidc-client-secret configure the deploy plane, which needs --deploy-plane-bind-address")
	}
	return nil
}

// bindPort is the port of a listen address host:port.
func bindPort(addr string) (int32, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want 1-65535", p)
	}
	return int32(n), nil
}

// flagValue is a flag's value as `operator run` parses it back: lists comma-joined.
func flagValue(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// isSSH reports whether a git URL uses ssh (ssh://, or the scp-like user@host:path).
func isSSH(u string) bool {
	if strings.HasPrefix(u, "ssh://") {
		return true
	}
	return !strings.Contains(u, "://") && strings.Contains(u, "@") && strings.Contains(u, ":")
}

func runInstall(cmd *cobra.Command, f *installFlags) error {
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	rs, err := install.Installer{Client: c, Registry: kinds.Builtin()}.Install(cmd.Context(), f.o)
	failed := 0
	for _, r := range rs {
		line := fmt.Sprintf("%s %s", r.Object, r.Action)
		if r.Action == apply.Failed || r.Action == apply.Denied {
			line += ": " + r.Message
			failed++
		}
		fmt.Fprintln(cmd.OutOrStdout(), line)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("install: %d objects failed", failed)
	}
	return nil
}

// printInstall writes, as one YAML stream, what Install applies: the CRD bundle, then
// (unless CRDsOnly) the operator's objects in apply order. The ClusterRole's child
// resources are resolved from client-go's scheme, with no cluster.
func printInstall(w io.Writer, o install.InstallOptions) error {
	bundle, err := kinds.Bundle(o.APIGroup)
	if err != nil {
		return err
	}
	if o.LuxNetworkKinds {
		lux, err := kinds.LuxNetworkBundle()
		if err != nil {
			return err
		}
		bundle = append(bundle, lux...)
	}
	var stages [][]*unstructured.Unstructured
	if !o.CRDsOnly {
		if stages, err = install.OperatorObjects(o, kinds.Builtin(), schemeMapper(clientgoscheme.Scheme)); err != nil {
			return err
		}
	}
	if _, err := w.Write(bundle); err != nil {
		return err
	}
	for _, stage := range stages {
		for _, obj := range stage {
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				return fmt.Errorf("marshal %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
			if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
				return err
			}
		}
	}
	return nil
}

// schemeMapper maps every Kind of scheme to its guessed plural resource: right for the
// built-in Kinds the controllers own, which is all the ClusterRole resolves through it.
func schemeMapper(scheme *runtime.Scheme) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}
