package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
)

// planeDeps is what the plane needs from the process it runs in.
type planeDeps struct {
	APIGroup, Namespace string
	// Sweeper is the git sweep of this process, nil when it runs none; Commits its source.
	Sweeper *gitops.Sweeper
	Commits source.Source
	// Ask asks the git sweep for a pass (this process's trigger or the webhook relay); nil:
	// no sweep to ask.
	Ask             *sweepAsk
	RepoURL, Branch string
	// Committer commits the rollback of a CR from git and wakes the sweep (nil: none, the
	// rollback answers 501).
	Committer source.CRCommitter
	// Tenancy is the one tenancy rule (--tenant-org-managers): an application's org is its
	// namespace's. The zero value trusts kinds.DefaultOrgManagers, run's default.
	Tenancy kinds.Tenancy
	// Build is run's build settings (--allow-unverified-seed, --static-server-image): the live
	// diff builds what the controllers apply.
	Build kinds.Context
	// Fleet is the registry of --fleet's clusters, listed on the clusters route; nil: none.
	Fleet *fleet.Registry
}

// setupPlane adds the /v1/deploy plane to mgr, reading from mgr's caches. It fails when the
// plane is enabled without an issuer (or discovery fails): never an open plane.
func setupPlane(ctx context.Context, mgr ctrl.Manager, o deploy.Options, d planeDeps, log logr.Logger) error {
	auth, err := deploy.NewAuthenticator(ctx, o.Auth, nil, nil)
	if err != nil {
		return fmt.Errorf("deploy plane: %w", err)
	}
	cfg := mgr.GetConfig()
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("deploy plane: write client: %w", err)
	}
	ask := d.Ask
	if ask == nil {
		ask = &sweepAsk{} // no sweep to ask: a sync answers ErrNoSweep
	}
	mapper := mgr.GetRESTMapper()
	served := func(gvk schema.GroupVersionKind) bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil
	}
	var gitState deploy.GitState
	var sweep deploy.SweepReports
	if d.Sweeper != nil {
		st := sweepState{s: d.Sweeper, repoURL: d.RepoURL, branch: d.Branch}
		gitState, sweep = st, st
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("deploy plane: clientset: %w", err)
	}
	srv, err := deploy.New(deploy.Config{
		Options: o, Auth: auth, Reader: mgr.GetCache(), Informers: mgr.GetCache(), Scheme: mgr.GetScheme(),
		Registry: kinds.Builtin(), APIGroup: d.APIGroup, Served: served, Namespace: d.Namespace, Tenancy: d.Tenancy,
		Git: gitState, GitManager: kinds.ManagerGitOps, RepoURL: d.RepoURL, Branch: d.Branch,
		Differ:        crDiffer{d: builtinDiffer(direct, d.APIGroup, d.Build)},
		Actions:       &deploy.Requester{Client: direct, Now: time.Now, SweepFunc: ask.ask},
		Committer:     d.Committer,
		Live:          direct,
		Logs:          podLogs{cs: cs},
		Sweep:         sweep,
		Fleet:         d.Fleet,
		Revisions:     revisionSource(d.Commits),
		Version:       versionMessage(),
		ServerVersion: serverVersion(cfg),
		Metrics:       metrics.Registry,
		Log:           log,
	})
	if err != nil {
		return err
	}
	return mgr.Add(srv)
}

// repoURL is the universe repository `operator run` follows, as a dashboard shows it.
func repoURL(o *runOptions) string {
	if o.Git.URL == "" && o.GitHub.Repository != "" {
		return "https://github.com/" + o.GitHub.Repository
	}
	return o.Git.URL
}

func versionMessage() deploy.VersionMessage {
	return deploy.VersionMessage{Version: version, GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH, GitTreeState: "", BuildDate: ""}
}

func serverVersion(cfg *rest.Config) string {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return ""
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(v.GitVersion, "v")
}

// commitReader is a source that can describe a commit (the go-git clone).
type commitReader interface {
	Commit(rev string) (gitclone.Commit, error)
}

type commits struct{ r commitReader }

func (c commits) Metadata(_ context.Context, rev string) (*deploy.RevisionMetadata, error) {
	cm, err := c.r.Commit(rev)
	if err != nil {
		return nil, err
	}
	at := metav1.NewTime(cm.When)
	author := cm.Author
	if cm.Email != "" {
		author += " <" + cm.Email + ">"
	}
	return &deploy.RevisionMetadata{Author: author, Date: &at, Message: cm.Message}, nil
}

// revisionSource describes commits of src when it can (nil otherwise: the route answers
// from the application's history only).
func revisionSource(src source.Source) deploy.RevisionSource {
	if r, ok := src.(commitReader); ok {
		return commits{r: r}
	}
	return nil
}

// crDiffer is the plane's live diff: the builders and server-side dry-run of `operator diff`
// over a CR read from the cache, children only (the CR itself is the application).
type crDiffer struct{ d *render.Differ }

func (c crDiffer) Diff(ctx context.Context, cr *unstructured.Unstructured) ([]deploy.ChildDiff, error) {
	clean := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(),
		"metadata": map[string]any{"name": cr.GetName(), "namespace": cr.GetNamespace()}}}
	if l := cr.GetLabels(); len(l) > 0 {
		clean.SetLabels(l)
	}
	if spec, ok := cr.Object["spec"]; ok {
		clean.Object["spec"] = spec
	}
	file := "cluster " + cr.GetKind() + "/" + cr.GetNamespace() + "/" + cr.GetName()
	var out []deploy.ChildDiff
	// its inputs from the cluster (a LuxNetwork's LuxChains), as the controller builds it
	for _, r := range c.d.DiffFromCluster(ctx, source.Object{File: file, Doc: 1, Obj: clean}) {
		if r.Manager != kinds.ManagerKinds {
			continue // the CR itself, compared with itself
		}
		if r.Action == apply.Failed && r.Object.Kind == cr.GetKind() && r.Object.Name == cr.GetName() {
			return nil, r.Err // the CR could not be built or read
		}
		gv, _ := schema.ParseGroupVersion(joinGV(r.Object.Group, r.Object.Version))
		out = append(out, deploy.ChildDiff{GVK: gv.WithKind(r.Object.Kind), Namespace: r.Object.Namespace, Name: r.Object.Name,
			Live: r.Live, Target: r.Desired, Modified: r.Drifted(), Diff: r.Diff, Err: r.Err})
	}
	return out, nil
}

func joinGV(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

// sweepState answers from the sweep's last report: the revision, this CR's outcome and file;
// and the report itself as the plane's gitops row (its public form: no object content).
type sweepState struct {
	s               *gitops.Sweeper
	repoURL, branch string
}

func (g sweepState) LastSweep() *deploy.SweepReport {
	r := g.s.Last()
	if r == nil {
		return nil
	}
	pub := r.Public()
	out := &deploy.SweepReport{RepoURL: g.repoURL, Branch: g.branch, Revision: pub.Revision, Error: pub.Error, Started: pub.Started,
		Duration: time.Duration(pub.Duration * float64(time.Second)), Idle: pub.Idle}
	for _, res := range pub.Results {
		o := res.Object
		out.Results = append(out.Results, deploy.SweepResult{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespace: o.Namespace,
			Name: o.Name, Action: string(res.Action), Message: res.Message, DriftedBy: res.DriftedBy})
	}
	for _, sk := range pub.Skips {
		out.Skips = append(out.Skips, deploy.SweepSkip{File: sk.File, Object: sk.Object(), Message: sk.Message, Namespace: sk.Namespace})
	}
	return out
}

// podLogs opens pod logs through the apiserver (pods/log).
type podLogs struct{ cs kubernetes.Interface }

func (p podLogs) PodLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return p.cs.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
}

func (g sweepState) Record(gvk schema.GroupVersionKind, namespace, name string) *deploy.GitRecord {
	r := g.s.Last()
	if r == nil {
		return nil
	}
	pub := r.Public() // a refusal's message masked, as GET /gitops serves it
	for _, res := range pub.Results {
		o := res.Object
		if o.Group == gvk.Group && o.Kind == gvk.Kind && o.Namespace == namespace && o.Name == name {
			return &deploy.GitRecord{RepoURL: g.repoURL, Revision: pub.Revision, File: pub.Files[o], Action: string(res.Action), Message: res.Message}
		}
	}
	return nil
}

// deployPlaneOptions configures `operator deploy-plane`.
type deployPlaneOptions struct {
	APIGroup, Namespace, Kubeconfig, MetricsAddr, LogLevel string
	Tenancy                                                kinds.Tenancy
	Plane                                                  deploy.Options
	// Build is what the live diff's builds read beyond the CR, as `operator run` takes it.
	Build kinds.Context
	// Git is the universe repository's write path (planegit.go): a rollback of a CR from
	// git commits there.
	Git planeGit
}

// newDeployPlaneCommand returns `operator deploy-plane`: the plane alone, over its own caches,
// for running it apart from the controllers (more replicas, another network policy).
func newDeployPlaneCommand() *cobra.Command { return newDeployPlaneCommandWith(&deployPlaneOptions{}) }

// newDeployPlaneCommandWith is newDeployPlaneCommand binding its flags to o.
func newDeployPlaneCommandWith(o *deployPlaneOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deploy-plane",
		Short: "Serve the /v1/deploy plane (Argo CD API dialect) alone, from its own caches",
		Long: "Serve the fleet as a CD dashboard sees it: applications (one per universe CR), their\n" +
			"resource trees, health, sync, live diff and history, streams, and the admin-only sync,\n" +
			"rollback and reconcile (admins: tokens of --deploy-plane-admin-org). Identity comes only\n" +
			"from tokens of --deploy-plane-oidc-issuer; an application's org is its namespace's;\n" +
			"without an issuer the command refuses to start. A sync of a CR from git asks the\n" +
			"leader's sweep through the webhook relay ConfigMap. With the repository of the sweep\n" +
			"(--git-url or --github-repository, the token in --gitops-token-file) a rollback of a CR\n" +
			"from git commits to it, as in `operator run`; without one it answers 501.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDeployPlane(o) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe Kinds.")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace of the operator (its webhook relay ConfigMap).")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&o.LogLevel, "log-level", "info", "Log level: debug, info or error. Logs are JSON.")
	o.Git.bindFlags(fs)
	fs.StringSliceVar(&o.Tenancy.Managers, "tenant-org-managers", kinds.DefaultOrgManagers,
		"Field managers whose write of a Namespace's "+kinds.OrgLabel+" label makes it that org's tenant: an application's org is its namespace's, and a CR whose own "+kinds.OrgLabel+" label differs is shown to no org.")
	o.Plane.BindFlags(fs, ":8090")
	bindBuildFlags(fs, &o.Build)
	return cmd
}

func runDeployPlane(o *deployPlaneOptions) error {
	level := zapcore.InfoLevel
	if err := level.Set(o.LogLevel); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.JSONEncoder(), zap.Level(level)))
	if err := validateBuild(o.Build); err != nil {
		return err
	}
	if !o.Plane.Enabled() {
		return errors.New("--deploy-plane-bind-address is empty: nothing to serve")
	}
	if err := o.Plane.Auth.Validate(); err != nil {
		return err
	}
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := managerScheme(o.APIGroup)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress: "0", LeaderElection: false})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// no sweep runs here: the leader's, through the webhook relay it watches
	ask := &sweepAsk{relay: &gitops.Relay{Client: cs, Namespace: o.Namespace, Name: install.WebhookRelay, Now: time.Now}}
	deps := planeDeps{APIGroup: o.APIGroup, Namespace: o.Namespace, Ask: ask, RepoURL: o.Git.repoURL(), Branch: o.Git.branch(), Tenancy: o.Tenancy, Build: o.Build}
	gw, src, err := o.Git.open(ask.ask)
	if err != nil {
		return err
	}
	if gw != nil {
		deps.Committer, deps.Commits = gw, src
	}
	if err := setupPlane(ctx, mgr, o.Plane, deps, ctrl.Log.WithName("deploy-plane")); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

var _ manager.Runnable = (*deploy.Server)(nil)
