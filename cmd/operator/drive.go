package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source"
)

// Loops of `operator run --controllers`.
const (
	loopKinds   = "kinds"
	loopGitOps  = "gitops"
	loopDrive   = "drive"
	loopTenants = "tenants"
	loopAgents  = "agents"
	// loopImageUpdate is the ImageUpdate controller (upgrade/image).
	loopImageUpdate = "imageupdate"
)

var loops = []string{loopKinds, loopGitOps, loopDrive, loopTenants, loopAgents, loopImageUpdate}

// driveOptions configures the drive, tenants and agents loops.
type driveOptions struct {
	PlatformURL, TokenFile, OrgID, Cluster, Mode, Allow string
	Interval, RolloutTimeout                            time.Duration

	TenantLabel, TenantRoleBinding, TenantClusterRole, TenantSubject, TenantPullSecret, TenantPullSource string
	// TenantLabelManagers are the field managers whose write of the tenant label onboards a
	// Namespace.
	TenantLabelManagers []string

	AgentMode, CloudURL, CloudTokenFile, VisorURL, VisorIDFile, VisorSecretFile string
}

func (o *driveOptions) BindFlags(fs *pflag.FlagSet) {
	t := drive.DefaultTenantOptions()
	fs.StringVar(&o.PlatformURL, "drive-platform-url", "", "Platform base URL; the drive loop reads GET <url>/v1/apps. Empty: the drive loop idles.")
	fs.StringVar(&o.TokenFile, "drive-token-file", "", "File holding the platform's Bearer token (required for the drive loop).")
	fs.StringVar(&o.OrgID, "drive-org-id", "", "Optional X-Org-Id sent to the platform.")
	fs.StringVar(&o.Cluster, "drive-cluster", "hanzo-k8s", "The cluster name whose rows of the apps table this operator drives.")
	fs.StringVar(&o.Mode, "drive-mode", "off", "Drive mode: off, dry-run (Events DriveIntended only) or on.")
	fs.StringVar(&o.Allow, "drive-allow", "", "Apps drive may write for, comma or space separated: *, org/*, org/app, org/app/env. Empty matches nothing.")
	fs.DurationVar(&o.Interval, "drive-interval", time.Minute, "How often the drive loop polls the platform (at least 5s).")
	fs.DurationVar(&o.RolloutTimeout, "drive-rollout-timeout", 3*time.Minute, "How long the drive loop waits for a rollout before DriveRolloutPending.")
	fs.StringVar(&o.TenantLabel, "tenant-label", t.LabelKey+"="+t.LabelValue, "key=value selecting tenant Namespaces (tenants loop).")
	fs.StringSliceVar(&o.TenantLabelManagers, "tenant-label-managers", t.LabelManagers,
		"Field managers whose write of --tenant-label's key makes a Namespace a tenant (read from managedFields). The default is the platform's only: never add the git sweep's (universe-operator-gitops), or a universe-repo writer could declare a Namespace that receives the pull Secret.")
	fs.StringVar(&o.TenantRoleBinding, "tenant-rolebinding", t.RoleBinding, "Name of the RoleBinding created in each tenant Namespace.")
	fs.StringVar(&o.TenantClusterRole, "tenant-clusterrole", t.ClusterRole, "ClusterRole the tenant RoleBinding grants (install grants bind on exactly this one).")
	fs.StringVar(&o.TenantSubject, "tenant-subject", t.SubjectNamespace+"/"+t.SubjectName, "namespace/name of the platform ServiceAccount the RoleBinding binds.")
	fs.StringVar(&o.TenantPullSecret, "tenant-pull-secret", t.PullSecret, "Name of the image-pull Secret created in each tenant Namespace; empty for none.")
	fs.StringVar(&o.TenantPullSource, "tenant-pull-secret-source", "", "namespace/name of the dockerconfigjson Secret projected into tenants; empty means <namespace>/<tenant-pull-secret>.")
	fs.StringVar(&o.AgentMode, "agent-deploy-mode", "off", "AgentDeployment mode: off (report only), bind-only (create agents, bind named machines, never launch) or on (may launch).")
	fs.StringVar(&o.CloudURL, "agent-cloud-url", "", "Cloud API base URL (/v1/agents).")
	fs.StringVar(&o.CloudTokenFile, "agent-cloud-token-file", "", "File holding the cloud API Bearer token.")
	fs.StringVar(&o.VisorURL, "agent-visor-url", "", "Visor base URL (/v1/machines).")
	fs.StringVar(&o.VisorIDFile, "agent-visor-client-id-file", "", "File holding the IAM client id visor authenticates (HTTP Basic user).")
	fs.StringVar(&o.VisorSecretFile, "agent-visor-client-secret-file", "", "File holding the IAM client secret (HTTP Basic password).")
}

// checkLoops validates --controllers.
func checkLoops(names []string) error {
	for _, c := range names {
		known := false
		for _, l := range loops {
			known = known || c == l
		}
		if !known {
			return fmt.Errorf("--controllers: unknown loop %q (want %s)", c, strings.Join(loops, ", "))
		}
	}
	return nil
}

// kindRegistry is the registry the Kind controllers run: without the Kinds a running loop
// acts for (their status is that loop's).
func kindRegistry(reg kinds.Registry, running []string) kinds.Registry {
	out := kinds.Registry{}
	for ref, e := range reg {
		if e.Loop != "" && contains(running, e.Loop) {
			continue
		}
		out[ref] = e
	}
	return out
}

// awaitsStatus is the git sweeps' Options.AwaitsStatus when the Kind controllers run: the
// Kinds of reg whose controllers SetupKinds starts (neither another operator's nor a
// loop's), each writing status.observedGeneration in its first status. kstatus alone reads
// a CR without status as Current, so a new CR counted as healthy, in the sweep's health,
// commit statuses and dependsOn, before its controller had even looked at it.
func awaitsStatus(reg kinds.Registry, group string) func(schema.GroupKind) bool {
	ours := map[schema.GroupKind]bool{}
	for _, e := range reg {
		if e.External == "" && e.Loop == "" {
			ours[e.GroupVersionKind(group).GroupKind()] = true
		}
	}
	return func(gk schema.GroupKind) bool { return ours[gk] }
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// setupDriveLoops adds the drive, tenants and agents loops that --controllers names.
// committer is the git write path (nil without the git sweep: a CR from the sweep then gets
// DriveFailed, not configured, instead of a patch the sweep would revert); it wakes the
// sweep after a commit, so a committed tag is applied at once.
func setupDriveLoops(mgr ctrl.Manager, o *runOptions, committer source.CRCommitter, log logr.Logger) error {
	d := &o.Drive
	if contains(o.Controllers, loopDrive) {
		if err := setupApps(mgr, o, committer, log); err != nil {
			return err
		}
	}
	if contains(o.Controllers, loopTenants) {
		t := drive.DefaultTenantOptions()
		k, v, ok := strings.Cut(d.TenantLabel, "=")
		if !ok || k == "" {
			return fmt.Errorf("--tenant-label %q: want key=value", d.TenantLabel)
		}
		t.LabelKey, t.LabelValue, t.RoleBinding, t.ClusterRole, t.PullSecret = k, v, d.TenantRoleBinding, d.TenantClusterRole, d.TenantPullSecret
		if t.SubjectNamespace, t.SubjectName, ok = strings.Cut(d.TenantSubject, "/"); !ok {
			return fmt.Errorf("--tenant-subject %q: want namespace/name", d.TenantSubject)
		}
		src := d.TenantPullSource
		if src == "" {
			src = o.Namespace + "/" + d.TenantPullSecret
		}
		ns, name, ok := strings.Cut(src, "/")
		if !ok {
			return fmt.Errorf("--tenant-pull-secret-source %q: want namespace/name", src)
		}
		t.SourceSecret = types.NamespacedName{Namespace: ns, Name: name}
		t.LabelManagers, t.OperatorNamespace = d.TenantLabelManagers, o.Namespace
		tn := &drive.Tenants{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Opts: t, Log: ctrl.Log.WithName("tenants")}
		if err := tn.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if contains(o.Controllers, loopAgents) {
		if err := setupAgents(mgr, o, log); err != nil {
			return err
		}
	}
	return nil
}

func setupApps(mgr ctrl.Manager, o *runOptions, committer source.CRCommitter, log logr.Logger) error {
	d := &o.Drive
	if d.PlatformURL == "" {
		log.Info("apps drive loop idle: no --drive-platform-url")
		return nil
	}
	var creds source.Credentials
	switch {
	case d.TokenFile != "":
		tf, err := source.OpenTokenFile(d.TokenFile)
		if err != nil {
			return fmt.Errorf("--drive-token-file: %w", err)
		}
		if err := mgr.Add(watchFile(tf, log.WithName("drive-token"))); err != nil {
			return err
		}
		creds = tf
	case o.driveToken != nil: // the Rust operator's APPS_SERVICE_TOKEN …, held in memory
		log.Info("apps drive: the platform token is the environment's " + o.driveToken.From + ", held in memory; prefer --drive-token-file (a mounted Secret, rotated without a restart)")
		creds = o.driveToken
	default:
		return errors.New("--drive-token-file (or APPS_SERVICE_TOKEN) is required with --drive-platform-url")
	}
	p, err := drive.NewPlatform(d.PlatformURL, d.OrgID, creds)
	if err != nil {
		return fmt.Errorf("--drive-platform-url: %w", err)
	}
	// a direct client: a tick reads a few namespaces' Deployments and CRs once a minute;
	// caching every Deployment and CR Kind for it is not worth the memory
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return err
	}
	watch, err := rolloutWatch(mgr)
	if err != nil {
		return err
	}
	if committer == nil {
		log.Info("apps drive: no git write path configured; CRs applied by the git sweep get DriveFailed instead of a patch the sweep would revert")
	}
	return mgr.Add(&drive.Apps{
		Platform: p, Client: direct, Cluster: d.Cluster, Mode: drive.ParseMode(d.Mode), Allow: drive.ParseAllowList(d.Allow),
		Interval: d.Interval, RolloutTimeout: d.RolloutTimeout, Watch: watch, GitOpsManager: kinds.ManagerGitOps,
		Committer: committer, Tenancy: o.Tenancy,
		Recorder: mgr.GetEventRecorder(kinds.ManagerDrive), Log: ctrl.Log.WithName("drive"),
	})
}

// rolloutWatch wakes the drive's rollout waits on the Deployments' changes: a handler on the
// manager cache's Deployment informer, unstructured — the one the Kind controllers' Owns
// already holds (without the kinds loop, GetInformer starts it).
func rolloutWatch(mgr ctrl.Manager) (*drive.DeploymentWatch, error) {
	watch := &drive.DeploymentWatch{}
	deps := &unstructured.Unstructured{}
	deps.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	inf, err := mgr.GetCache().GetInformer(context.Background(), deps)
	if err != nil {
		return nil, fmt.Errorf("apps drive: Deployment informer for the rollout wait: %w", err)
	}
	if _, err := inf.AddEventHandler(watch.Handler()); err != nil {
		return nil, fmt.Errorf("apps drive: Deployment informer for the rollout wait: %w", err)
	}
	return watch, nil
}

func setupAgents(mgr ctrl.Manager, o *runOptions, log logr.Logger) error {
	d := &o.Drive
	mode, err := drive.ParseAgentMode(d.AgentMode)
	if err != nil {
		return fmt.Errorf("--agent-deploy-mode: %w", err)
	}
	a := &drive.Agents{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tenancy: o.Tenancy, Mode: mode, Log: ctrl.Log.WithName("agents"),
		GVK: kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementCanonical, Kind: "AgentDeployment"}].GroupVersionKind(o.APIGroup)}
	if a.GVK.Version != v1.Version {
		return errors.New("AgentDeployment is not in the registry")
	}
	open := func(flag, path string) (*source.TokenFile, error) {
		if path == "" {
			return nil, nil
		}
		tf, err := source.OpenTokenFile(path)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		return tf, mgr.Add(watchFile(tf, log.WithName(flag)))
	}
	var cloudTok source.Credentials
	if tf, err := open("agent-cloud-token-file", d.CloudTokenFile); err != nil {
		return err
	} else if tf != nil {
		cloudTok = tf
	} else if o.agentToken != nil { // AGENT_DEPLOY_SERVICE_TOKEN, held in memory
		cloudTok = o.agentToken
	}
	id, err := open("agent-visor-client-id-file", d.VisorIDFile)
	if err != nil {
		return err
	}
	secret, err := open("agent-visor-client-secret-file", d.VisorSecretFile)
	if err != nil {
		return err
	}
	if d.CloudURL != "" && cloudTok != nil && d.VisorURL != "" && id != nil && secret != nil {
		if a.Cloud, err = drive.NewCloud(d.CloudURL, cloudTok); err != nil {
			return fmt.Errorf("--agent-cloud-url: %w", err)
		}
		if a.Visor, err = drive.NewVisor(d.VisorURL, id, secret); err != nil {
			return fmt.Errorf("--agent-visor-url: %w", err)
		}
	} else {
		log.Info("agents loop read-only: cloud and visor URLs and credential files are not all set")
	}
	return a.SetupWithManager(mgr)
}
