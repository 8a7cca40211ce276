package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
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
	"github.com/openuniverse/operator/reconcile/install"
)

// defaultImage is the operator image of this build (hack/image tags it with the version).
func defaultImage() string { return "ghcr.io/openuniverse/operator:" + version }

// runPassThrough are the `operator run` flags `operator install` takes as they are and
// passes to the installed Deployment when set: the git source, the sweep's scope and
// cadence, the log level. Files (token, webhook secret) come from Secrets instead, and
// --git-ssh-key-file and the cache dir are left out: install mounts neither.
var runPassThrough = []string{
	"git-url", "git-branch", "git-path", "git-username",
	"github-repository", "github-branch", "github-path", "github-api-url",
	"gitops-resync", "gitops-namespaces", "gitops-apply-scope",
	"controllers", "log-level",
	// the drive, tenants and agents loops (their token files come from Secrets too; the
	// tenant ClusterRole is fixed, since install grants bind on exactly that one)
	"drive-platform-url", "drive-org-id", "drive-cluster", "drive-mode", "drive-allow", "drive-interval", "drive-rollout-timeout",
	"tenant-label", "tenant-rolebinding", "tenant-subject", "tenant-pull-secret", "tenant-pull-secret-source",
	"agent-deploy-mode", "agent-cloud-url", "agent-visor-url",
}

// installControllers are the loops an installed operator runs unless --controllers says
// otherwise: operator run's default and tenant onboarding, whose RBAC install always grants.
var installControllers = []string{loopKinds, loopGitOps, loopImageUpdate, loopTenants}

// installFlags are the flags of `operator install`.
type installFlags struct {
	o          install.InstallOptions
	kubeconfig string
	print      bool
	fs         *pflag.FlagSet
	plane      installPlaneFlags // installplane.go
}

// newInstallCommand returns `operator install`, which server-side applies the CRD bundle
// and the operator's Deployment with its RBAC, or prints them.
func newInstallCommand() *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the CRDs and the operator (Namespace, RBAC, Service, Deployment) into the cluster",
		Long: "Server-side apply the CRD bundle of --api-group, then, unless --crds-only, the operator's\n" +
			"Namespace, ServiceAccount, least-privilege ClusterRole and binding, leader-election Role\n" +
			"and binding, Service (webhook and metrics), Deployment and, with --replicas above 1, a\n" +
			"PodDisruptionBudget, under the field manager " + reconcile.ManagerInstall + ".\n" +
			"Idempotent: a second run reports every object in-sync. Prints one line per object.\n\n" +
			"The git source flags are those of `operator run` and reach the Deployment as they are.\n" +
			"The token and the webhook secret are read from Secrets in --namespace, mounted read-only.\n" +
			"Run it again with a new --image to upgrade. With --print, write the manifests to stdout\n" +
			"instead and touch no cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.complete(); err != nil {
				return err
			}
			if f.print {
				return printInstall(cmd.OutOrStdout(), f.o)
			}
			return runInstall(cmd, f)
		},
	}
	fs := cmd.Flags()
	o := &f.o
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe (e.g. hanzo.ai, lux.cloud).")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace the operator runs in; holds its Secrets and Lease.")
	fs.StringVar(&o.Image, "image", defaultImage(), "Operator container image.")
	fs.BoolVar(&o.CRDsOnly, "crds-only", false, "Install the CRDs only.")
	fs.Int32Var(&o.Replicas, "replicas", 1, "Operator replicas; above 1 they elect a leader and get a PodDisruptionBudget.")
	fs.Int32Var(&o.Shards, "shards", 0, "Add N shard Deployments <operator>-shard<i> (Kind controllers only) for the CRs labelled "+reconcile.ShardLabel+"=shard<i>; the main one skips those.")
	fs.StringVar(&o.TokenSecret.Name, "gitops-token-secret", "", "Secret holding the git host token (passed as --gitops-token-file).")
	fs.StringVar(&o.TokenSecret.Key, "gitops-token-secret-key", "token", "Key of the token in --gitops-token-secret.")
	fs.StringVar(&o.WebhookSecret.Name, "gitops-webhook-secret", "", "Secret holding the push webhook's HMAC secret (passed as --gitops-webhook-secret-file); required with a git source.")
	fs.StringVar(&o.WebhookSecret.Key, "gitops-webhook-secret-key", "secret", "Key of the HMAC secret in --gitops-webhook-secret.")
	fs.StringVar(&o.DriveTokenSecret.Name, "drive-token-secret", "", "Secret holding the platform's Bearer token for the drive loop (passed as --drive-token-file).")
	fs.StringVar(&o.DriveTokenSecret.Key, "drive-token-secret-key", "token", "Key of the token in --drive-token-secret.")
	fs.StringVar(&o.AgentCloudTokenSecret.Name, "agent-cloud-token-secret", "", "Secret holding the cloud API token for the agents loop (passed as --agent-cloud-token-file).")
	fs.StringVar(&o.AgentCloudTokenSecret.Key, "agent-cloud-token-secret-key", "token", "Key of the token in --agent-cloud-token-secret.")
	fs.StringVar(&o.AgentVisorSecret, "agent-visor-secret", "", "Secret holding visor's IAM client id and secret under the keys client-id and client-secret (agents loop).")
	fs.BoolVar(&o.LuxNetworkKinds, "lux-network-kinds", false, "Also install the luxfi operator's lux.network/v1alpha1 CRDs (as `operator crds --lux-network-kinds` prints them); the ClusterRole covers their Kinds either way.")
	fs.BoolVar(&f.print, "print", false, "Write the manifests to stdout instead of applying them; needs no cluster.")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	run := pflag.NewFlagSet("run", pflag.ContinueOnError)
	(&runOptions{}).BindFlags(run)
	for _, name := range runPassThrough {
		fs.AddFlag(run.Lookup(name))
	}
	f.plane.bind(fs)
	f.fs = fs
	return cmd
}

// complete turns the pass-through flags into the Deployment's `operator run` arguments and
// refuses what the installed operator could not run with.
func (f *installFlags) complete() error {
	get := func(name string) string { return flagValue(f.fs.Lookup(name)) }
	f.o.RunArgs = nil
	for _, name := range runPassThrough {
		if fl := f.fs.Lookup(name); fl.Changed && name != "controllers" {
			f.o.RunArgs = append(f.o.RunArgs, "--"+name+"="+flagValue(fl))
		}
	}
	f.o.Controllers = slices.Clone(installControllers)
	if fl := f.fs.Lookup("controllers"); fl.Changed {
		f.o.Controllers = fl.Value.(pflag.SliceValue).GetSlice()
	}
	gitURL, repo := get("git-url"), get("github-repository")
	hasSource := gitURL != "" || repo != ""
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
	switch {
	case gitURL != "" && repo != "":
		return errors.New("set one of --git-url and --github-repository, not both")
	case isSSH(gitURL):
		return fmt.Errorf("--git-url %s: install mounts no ssh key; use an https URL with --gitops-token-secret", gitURL)
	case !hasSource && (f.o.TokenSecret.Name != "" || f.o.WebhookSecret.Name != ""):
		return errors.New("--gitops-token-secret and --gitops-webhook-secret need a git source (--git-url or --github-repository)")
	case hasSource && !slices.Contains(f.o.Controllers, "gitops"):
		return fmt.Errorf("a git source is set but --controllers=%s runs no gitops loop", strings.Join(f.o.Controllers, ","))
	case hasSource && f.o.WebhookSecret.Name == "":
		return errors.New("a git source needs --gitops-webhook-secret: POST /reconcile refuses unsigned requests in the cluster")
	}
	if err := checkLoops(f.o.Controllers); err != nil {
		return err
	}
	drive, agents := slices.Contains(f.o.Controllers, loopDrive), slices.Contains(f.o.Controllers, loopAgents)
	switch {
	case !drive && (f.o.DriveTokenSecret.Name != "" || get("drive-platform-url") != ""):
		return errors.New("--drive-platform-url and --drive-token-secret configure the drive loop, which --controllers does not run")
	case drive && get("drive-platform-url") != "" && f.o.DriveTokenSecret.Name == "":
		return errors.New("the drive loop needs --drive-token-secret with --drive-platform-url: the platform's token comes from a Secret")
	case !agents && (f.o.AgentCloudTokenSecret.Name != "" || f.o.AgentVisorSecret != ""):
		return errors.New("--agent-cloud-token-secret and --agent-visor-secret configure the agents loop, which --controllers does not run")
	case get("agent-cloud-url") != "" && f.o.AgentCloudTokenSecret.Name == "":
		return errors.New("--agent-cloud-url needs --agent-cloud-token-secret")
	case get("agent-visor-url") != "" && f.o.AgentVisorSecret == "":
		return errors.New("--agent-visor-url needs --agent-visor-secret (keys client-id and client-secret)")
	}
	return nil
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
		if r.Action == reconcile.Failed || r.Action == reconcile.Denied {
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
