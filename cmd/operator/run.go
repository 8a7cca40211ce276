package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
)

// runOptions configures `operator run`. Every flag is mirrored by OPERATOR_<FLAG>.
type runOptions struct {
	APIGroup      string
	Namespace     string
	Kubeconfig    string
	Controllers   []string
	MetricsAddr   string
	MetricsSecure bool
	ProbeAddr     string
	WebhookAddr   string
	PprofAddr     string
	LeaderElect   bool
	LeaderID      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	LogLevel      string
	LogFormat     string
	// ConfigFile is --config: a YAML file of run flags (see config.go for the precedence).
	ConfigFile string
	// GitOpsReportAuthz puts GET /gitops behind the apiserver's authentication and
	// authorization, as --metrics-secure does /metrics.
	GitOpsReportAuthz bool
	// UpgradeFSM is the cluster gate of the upgrade machine; GC* tune its orphan collector.
	UpgradeFSM       bool
	PreflightGCEvery time.Duration
	PreflightGCGrace time.Duration
	// KindConcurrency is how many CRs of each Kind are reconciled at once.
	KindConcurrency int
	// Build is what every Kind's build reads beyond the CR (--allow-unverified-seed,
	// --static-server-image).
	Build kinds.Context
	// ProtectedSecrets are Secrets of the operator's namespace git may never write.
	ProtectedSecrets []string
	// Shard restricts the caches and controllers to namespaces and a CR label selector.
	Shard reconcile.Shard
	// Tenancy is the one tenancy rule of every loop: a Namespace's org counts only when one of
	// these field managers set its label.
	Tenancy kinds.Tenancy

	Source source.Options
	GitHub github.Options
	Git    gitclone.Options
	GitOps gitops.Options
	Drive  driveOptions
	Plane  deploy.Options
	Image  imageOptions
	Fleet  fleetOptions
	// FleetKinds runs the Kind controllers on the registered clusters (fleetkinds.go).
	FleetKinds fleetKindsOptions
	// K8sPlane is the /v1/k8s cluster plane (k8splane.go).
	K8sPlane k8sPlaneOptions
	// CommitStatus posts each sweep's outcome on its commit (commitstatus.go).
	CommitStatus commitstatus.Options
	// Preview answers pull request events with a preview check (previewhook.go).
	Preview bool

	sweeper *gitops.Sweeper // set by setupGitOps, for the deploy plane
	fleet   *fleetSweeps    // set by setupGitOps with --fleet, for the deploy plane
	commits source.Source
	// driveToken and agentToken are tokens the Rust operator's environment gives as values
	// (APPS_SERVICE_TOKEN …, AGENT_DEPLOY_SERVICE_TOKEN), held in memory; nil unless set and
	// no token file is.
	driveToken, agentToken *memoryToken
	// loaded is where each value came from, and the loops' decisions (loadConfig).
	loaded *loaded
	// AlertsSecret is --alerts-secret: the Secret of the operator's namespace that names the
	// alert targets (source/alert); alerts is its running sink, nil without it.
	AlertsSecret string
	alerts       *alert.Sink
}

func (o *runOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.APIGroup, "api-group", kinds.DefaultAPIGroup, "API group of the universe Kinds (hanzo.ai, lux.cloud, zoo.cloud, osage.cloud, …).")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace the operator runs in; holds the leader-election Lease.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	fs.StringSliceVar(&o.Controllers, "controllers", []string{"kinds", "gitops", "imageupdate"}, "Loops to run: kinds (a controller per Kind), gitops (the git sweep; needs --git-url or --github-repository), drive (the apps drive loop), tenants (tenant namespace onboarding), agents (AgentDeployment), imageupdate (registry tags committed to git).")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "Serve /metrics over HTTPS, to callers the apiserver authenticates and authorizes (TokenReview and SubjectAccessReview: grant get on the non-resource URL /metrics).")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz, and nothing else.")
	fs.StringVar(&o.WebhookAddr, "webhook-bind-address", ":8082", "Address of POST /reconcile and GET /gitops; 0 disables them.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "Address of Go's /debug/pprof profiles (e.g. 127.0.0.1:6060); 0, the default, disables them. Unauthenticated: bind it to loopback.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "Elect one leader through a Lease; only the leader writes.")
	fs.StringVar(&o.LeaderID, "leader-election-id", "", "Name of the Lease; empty means universe-operator.<api-group>.")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "How long a lease is valid before others may take it.")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "How long the leader retries renewing before it gives up and exits.")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "How often candidates retry acquiring the lease.")
	fs.StringVar(&o.LogLevel, "log-level", "info", "Log level: debug, info or error.")
	fs.StringVar(&o.LogFormat, "log-format", "json", "Log format: json (the default, and install's) or console (lines for people: make demo, the CLI commands).")
	fs.StringVar(&o.ConfigFile, "config", "", "YAML file of settings, keyed by these flags' names (git-url: …); an unknown key is an error. Flags, then OPERATOR_* and the Rust operator's variables, beat it.")
	fs.BoolVar(&o.GitOpsReportAuthz, "gitops-report-authz", false, "Serve GET /gitops only to callers the apiserver authenticates and authorizes (TokenReview and SubjectAccessReview: grant get on the non-resource URL /gitops); install turns it on.")
	fs.BoolVar(&o.UpgradeFSM, "upgrade-fsm", false, "Run the health-gated upgrade machine for CRs with spec.upgradePolicy.enabled (also UPGRADE_FSM_ENABLED=true); without it they say UpgradePolicyIgnored, and CRs latched Failed stay on their last good image until their spec changes (UpgradeLatched).")
	fs.DurationVar(&o.PreflightGCEvery, "preflight-gc-interval", 600*time.Second, "How often orphaned pre-flight resources are collected (floor 30s).")
	fs.DurationVar(&o.PreflightGCGrace, "preflight-gc-grace", 300*time.Second, "Pre-flight resources younger than this are never collected.")
	fs.StringVar(&o.AlertsSecret, "alerts-secret", "", "Secret of the operator's namespace naming the alert targets: keys "+alert.KeySlackURL+" (a Slack-compatible incoming webhook), "+alert.KeyWebhookURL+" and "+alert.KeyWebhookKey+" (a JSON webhook signed with HMAC-SHA256); read once at start, refused at start when missing or malformed. Empty: no alerts.")
	fs.IntVar(&o.KindConcurrency, "kind-concurrency", reconcile.DefaultKindConcurrency, "How many CRs of each Kind are reconciled at once.")
	bindBuildFlags(fs, &o.Build)
	fs.StringSliceVar(&o.ProtectedSecrets, "gitops-protected-secrets", defaultProtectedSecrets,
		"Secrets of the operator's namespace git may never write (the webhook secret's, the token's).")
	// Scope and shards: each operator Deployment owns a namespace set or a label shard, with its own Lease.
	fs.StringSliceVar(&o.Shard.Namespaces, "watch-namespaces", nil, "Namespaces whose objects the operator watches and reconciles (the caches of every loop); empty means all.")
	fs.StringVar(&o.Shard.LabelSelector, "watch-label-selector", "", "Label selector on the CRs the Kind controllers reconcile, e.g. "+apply.ShardLabel+"=shard1 for a shard, !"+apply.ShardLabel+" for the main operator; empty means all. A shard's Lease is named after it.")
	fs.StringSliceVar(&o.Tenancy.Managers, "tenant-org-managers", kinds.DefaultOrgManagers,
		"Field managers whose write of a Namespace's "+kinds.OrgLabel+" label makes it that org's tenant; every loop refuses a CR whose own "+kinds.OrgLabel+" label differs from its namespace's org.")
	o.GitHub, o.Git, o.GitOps = github.DefaultOptions(), gitclone.DefaultOptions(), gitops.DefaultOptions()
	o.Source.BindFlags(fs)
	o.GitHub.BindFlags(fs)
	o.Git.BindFlags(fs)
	o.GitOps.BindFlags(fs)
	o.Drive.BindFlags(fs)
	o.Plane.BindFlags(fs, "") // off by default
	o.Image.BindFlags(fs)
	o.Fleet.BindFlags(fs)
	o.FleetKinds.BindFlags(fs)
	o.K8sPlane.BindFlags(fs) // off by default
	o.CommitStatus = commitstatus.DefaultOptions()
	o.CommitStatus.BindFlags(fs) // off by default
	fs.BoolVar(&o.Preview, "preview", false, "Preview pull requests: a pull_request event (GitHub, Gitea, Forgejo) or Merge Request Hook (GitLab) at POST /reconcile, verified as the push event is, "+
		"gets one check "+commitstatus.PreviewContext("<commit-status-context>")+" on its head: what merging it would change in the cluster (server-side dry-runs, nothing applied). "+
		"Needs --commit-status, the gitops loop and a git source; without it pull request events are acknowledged and ignored.")
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:         "run",
		Short:       "Run the operator: Kind controllers and the git sweep, with leader election, probes and metrics",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationConfig: "run"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd.Flags(), o, os.Environ())
			if err != nil {
				return err
			}
			o.loaded = l
			return run(o)
		},
	}
	o.BindFlags(cmd.Flags())
	return cmd
}

// newLogger is the logger of --log-format and --log-level.
func newLogger(format, levelName string) (logr.Logger, error) {
	level := zapcore.InfoLevel
	if err := level.Set(levelName); err != nil {
		return logr.Logger{}, fmt.Errorf("--log-level: %w", err)
	}
	switch format {
	case "json":
		return zap.New(zap.JSONEncoder(), zap.Level(level)), nil
	case "console":
		return zap.New(zap.ConsoleEncoder(), zap.Level(level)), nil
	}
	return logr.Logger{}, fmt.Errorf("--log-format %q: want console or json", format)
}

//nolint:funlen,gocyclo // the wiring of every loop, one switch each; the decisions are config.go's
func run(o *runOptions) error {
	logger, err := newLogger(o.LogFormat, o.LogLevel)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	log := ctrl.Log.WithName("setup")
	if err := checkLoops(o.Controllers); err != nil {
		return err
	}
	// a loop-driven Kind (Entry.Loop) says whether its loop runs in this process
	o.Build.Loops = slices.Clone(o.Controllers)
	if o.CommitStatus, err = resolveCommitStatus(o); err != nil {
		return err
	}
	if err := resolvePreview(o); err != nil {
		return err
	}
	registerMetrics()
	if err := validateBuild(o.Build); err != nil {
		return err
	}
	if o.loaded != nil {
		for _, w := range o.loaded.Warnings {
			log.Info("WARNING " + w)
		}
		for _, d := range o.loaded.Loops {
			state := "off"
			if d.On {
				state = "on"
			}
			log.Info("loop "+d.Loop+" "+state, "loop", d.Loop, "on", d.On, "why", d.Why)
		}
	}
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := managerScheme(o.APIGroup)
	if err != nil {
		return err
	}
	leaderID := o.LeaderID
	if leaderID == "" {
		leaderID = o.Shard.LeaseID("universe-operator." + o.APIGroup)
	}
	mapper, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	shardCache, err := o.Shard.CacheOptions(kinds.Builtin(), o.APIGroup, mapper.RESTMapper())
	if err != nil {
		return err
	}
	metrics := metricsserver.Options{BindAddress: o.MetricsAddr}
	if o.MetricsSecure {
		metrics.SecureServing, metrics.FilterProvider = true, filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// children are watched (Owns) as unstructured objects: read them from those caches,
		// which keep the built-in kinds typed (reconcile.TypedChildren)
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:                         shardCache,
		NewCache:                      reconcile.TypedChildren(kinds.Builtin(), o.APIGroup),
		Metrics:                       metrics,
		HealthProbeBindAddress:        "0", // probes are served below, alone on their listener; the webhook has its own
		PprofBindAddress:              o.PprofAddr,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              leaderID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	probes := http.NewServeMux() // /healthz and /readyz, and nothing else
	probes.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
	ready := gitops.Readiness{"caches": cacheSynced(mgr)} // the sweep adds its own check
	probes.Handle("/readyz", ready)
	if o.ProbeAddr != "0" {
		if err := mgr.Add(&manager.Server{Name: "probes", Server: hardenedServer(o.ProbeAddr, probes)}); err != nil {
			return err
		}
	}
	mux := http.NewServeMux() // POST /reconcile and GET /gitops
	if err := setupAlerts(mgr, mapper, o, ctrl.Log.WithName("alerts")); err != nil {
		return err
	}

	var gw *gitWrite // the write path to the universe repository; nil without the sweep
	kindOpts := []reconcile.SetupOption{reconcile.WithUpgrades(o.UpgradeFSM), reconcile.WithPreflightGC(o.PreflightGCEvery, o.PreflightGCGrace),
		reconcile.WithConcurrency(o.KindConcurrency), reconcile.WithBuildContext(o.Build), reconcile.WithAlerts(o.alertHook())}
	if wantGitWrite(o) {
		gw = &gitWrite{}
		kindOpts = append(kindOpts, reconcile.WithGitWriter(gw))
	}
	if slices.Contains(o.Controllers, "kinds") {
		// the sweeps (this cluster's and the fleet's) hold a CR of ours InProgress until its
		// Kind controller's first status
		o.GitOps.AwaitsStatus = awaitsStatus(kindRegistry(kinds.Builtin(), o.Controllers), o.APIGroup)
	}
	clusters := runFleet(mgr, o) // the one fleet: its sweeps, its Kind controllers and the cluster plane reach through it
	if slices.Contains(o.Controllers, "kinds") {
		if err := reconcile.SetupKinds(mgr, kindRegistry(kinds.Builtin(), o.Controllers), o.APIGroup, ctrl.Log.WithName("kinds"), kindOpts...); err != nil {
			return err
		}
		if err := setupFleetKinds(mgr, o, clusters, kindOpts, ctrl.Log.WithName("fleet-kinds")); err != nil {
			return err
		}
	}
	var wake func(context.Context) error // asks the git sweep for a pass; nil while it is off
	var ask *sweepAsk
	if slices.Contains(o.Controllers, "gitops") {
		ask, err = setupGitOps(mgr, cfg, o, clusters, mux, ready, log)
		if err != nil {
			return err
		}
		if ask != nil {
			wake = ask.ask
		}
		if gw != nil {
			if err := gw.open(o, wake, ctrl.Log.WithName("git-write")); err != nil {
				return err
			}
		}
	}
	if slices.Contains(o.Controllers, "imageupdate") {
		creds, err := o.Source.Credentials()
		if err != nil {
			return fmt.Errorf("--gitops-token-file: %w", err)
		}
		if err := setupImageUpdate(mgr, o, creds, wake); err != nil {
			return err
		}
	}
	var tags source.CRCommitter // a nil *gitWrite must stay a nil interface
	if gw != nil {
		tags = gw
	}
	if err := setupDriveLoops(mgr, o, tags, log); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if o.Plane.Enabled() {
		deps := planeDeps{APIGroup: o.APIGroup, Namespace: o.Namespace, Sweeper: o.sweeper, Commits: o.commits, Ask: ask, RepoURL: repoURL(o), Branch: o.Git.Branch, Tenancy: o.Tenancy, Build: o.Build}
		if gw != nil {
			deps.Committer = gw
		}
		if o.fleet != nil {
			deps.Fleet = &o.fleet.fleet.Registry
		}
		if err := setupPlane(ctx, mgr, o.Plane, deps, ctrl.Log.WithName("deploy-plane")); err != nil {
			return err
		}
	}
	if o.K8sPlane.Enabled() {
		if err := setupK8sPlane(ctx, mgr, o, clusters, ctrl.Log.WithName("k8s-plane")); err != nil {
			return err
		}
	}
	if o.WebhookAddr != "0" && slices.Contains(o.Controllers, "gitops") {
		h, err := reportAuthz(mgr.GetConfig(), mgr.GetHTTPClient(), o.GitOpsReportAuthz, mux)
		if err != nil {
			return err
		}
		if err := mgr.Add(&manager.Server{Name: "webhook", Server: hardenedServer(o.WebhookAddr, h)}); err != nil {
			return err
		}
	}
	go func() {
		<-mgr.Elected()
		log.Info("elected leader", "lease", o.Namespace+"/"+leaderID)
	}()
	log.Info("starting operator", "version", version, "apiGroup", o.APIGroup, "namespace", o.Namespace,
		"controllers", o.Controllers, "leaderElect", o.LeaderElect, "watchNamespaces", o.Shard.Namespaces, "watchLabelSelector", o.Shard.LabelSelector)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("stopped")
	return nil
}

// setupGitOps adds the git sweep (leader only) and its webhook and report endpoints, and
// returns how this process asks it for a pass. With no repository configured the loop is
// off, and says so (nil).
// gitSource is the sweep's source from --git-url or --github-repository; nil (and no error)
// when neither is set.
func gitSource(o *runOptions, creds *source.TokenFile) (source.Source, error) {
	var (
		src source.Source
		err error
	)
	o.Git.MaxFileBytes, o.GitHub.MaxFileBytes = o.GitOps.Limits.FileBytes, o.GitOps.Limits.FileBytes // oversized blobs are never read
	switch {
	case o.Git.URL != "" && o.GitHub.Repository != "":
		return nil, errors.New("set one of --git-url and --github-repository, not both")
	case o.Git.URL != "":
		src, err = gitclone.New(credsOrNil(creds), o.Git)
	case o.GitHub.Repository != "":
		src, err = github.New(credsOrNil(creds), o.GitHub)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("git source: %w", err)
	}
	return src, nil
}

func setupGitOps(mgr ctrl.Manager, cfg *rest.Config, o *runOptions, clusters *fleet.Fleet, mux *http.ServeMux, ready gitops.Readiness, log logr.Logger) (*sweepAsk, error) {
	creds, err := o.Source.Credentials()
	if err != nil {
		return nil, fmt.Errorf("--gitops-token-file: %w", err)
	}
	src, err := gitSource(o, creds)
	if err != nil || src == nil {
		if src == nil && err == nil {
			log.Info("git sweep off: no --git-url or --github-repository")
		}
		return nil, err
	}
	o.commits = src
	var fl *fleetSweeps // the registered clusters' sweeps; nil without --fleet
	if fl, src, err = setupFleet(mgr, o, clusters, src, ctrl.Log.WithName("fleet")); err != nil {
		return nil, err
	}
	scope, err := o.GitOps.Scope(self(o.Namespace, o.APIGroup, o.ProtectedSecrets))
	if err != nil {
		return nil, fmt.Errorf("gitops scope: %w", err)
	}
	o.GitOps.State = gitState(o.Namespace)
	o.GitOps.State.Status, o.GitOps.State.APIGroup = install.GitOpsStatus, o.APIGroup // the GitSync object `kubectl wait` reads
	sweeper, err := gitops.NewSweeper(cfg, src, scope, o.GitOps)
	if err != nil {
		return nil, err
	}
	sweeper.Recorder = mgr.GetEventRecorder(apply.RecorderGitOps)
	statuses, err := setupCommitStatus(mgr, o.CommitStatus, sweeper, fl, ctrl.Log.WithName("commit-status"))
	if err != nil {
		return nil, err
	}
	sweeper.Alerts = o.alertHook()
	secret, err := o.GitOps.WebhookSecret()
	switch {
	case err != nil:
		return nil, fmt.Errorf("--gitops-webhook-secret-file: %w", err)
	case secret == nil:
		log.Info("Accepting unsigned webhooks: anyone reaching POST /reconcile can trigger sweeps (--gitops-webhook-insecure)",
			"address", o.WebhookAddr)
	default:
		if err := mgr.Add(watchFile(secret, log.WithName("webhook-secret"))); err != nil {
			return nil, err
		}
	}
	if creds != nil {
		if err := mgr.Add(watchFile(creds, log.WithName("token"))); err != nil {
			return nil, err
		}
	}
	wh := sweeper.Webhook(secret, o.GitOps, ctrl.Log.WithName("webhook"))
	if err := setupPreview(mgr, cfg, o, o.commits, statuses, scope, wh, ctrl.Log.WithName("preview")); err != nil {
		return nil, err
	}
	ask := &sweepAsk{sweeper: sweeper, elected: mgr.Elected()}
	if o.LeaderElect {
		// a standby accepts webhooks too and relays them to the leader
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		relay := &gitops.Relay{Client: cs, Namespace: o.Namespace, Name: install.WebhookRelay, Now: time.Now,
			MinInterval: o.GitOps.MinInterval(), Log: ctrl.Log.WithName("webhook-relay")}
		var leading atomic.Bool
		go func() { <-mgr.Elected(); leading.Store(true) }()
		wh.Leader, wh.Relay, ask.relay = leading.Load, relay, relay
		err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { // leader only
			return relay.Watch(ctx, sweeper.Trigger(), ctrl.Log.WithName("webhook-relay"))
		}))
		if err != nil {
			return nil, err
		}
	}
	if err := attachFleet(mgr, o, fl, sweeper, mux, wh); err != nil {
		return nil, err
	}
	// Without an election this process leads from the start: ready only after its first
	// sweep (the manager closes Elected a moment after the caches sync, and /readyz was 200
	// in between).
	ready["gitops"] = sweeper.Ready(func() bool { return !o.LeaderElect || isClosed(mgr.Elected()) })
	o.sweeper = sweeper
	if err := mgr.Add(sweeper); err != nil {
		return nil, err
	}
	return ask, nil
}

// reportAuthz puts GET /gitops behind the apiserver's authentication (TokenReview) and
// authorization (SubjectAccessReview of get on the non-resource URL /gitops) when on, the
// filter --metrics-secure puts in front of /metrics. POST /reconcile keeps its own check
// (the webhook's HMAC secret): a git host holds no cluster token.
func reportAuthz(cfg *rest.Config, hc *http.Client, on bool, mux *http.ServeMux) (http.Handler, error) {
	if !on {
		return mux, nil
	}
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("--gitops-report-authz: %w", err)
	}
	report, err := filter(ctrl.Log.WithName("gitops-report-authz"), mux)
	if err != nil {
		return nil, fmt.Errorf("--gitops-report-authz: %w", err)
	}
	outer := http.NewServeMux()
	outer.Handle("/gitops", report)
	outer.Handle("/", mux)
	return outer, nil
}

// cacheSynced is the readiness check of the manager's caches: every informer started and
// synced.
func cacheSynced(mgr ctrl.Manager) func(*http.Request) error {
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("caches not synced")
		}
		return nil
	}
}

// isClosed reports whether ch is closed; mgr.Elected() is, from the start without leader
// election.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// credsOrNil keeps a nil *TokenFile from becoming a non-nil interface.
func credsOrNil(tf *source.TokenFile) source.Credentials {
	if tf == nil {
		return nil
	}
	return tf
}

// watchFile reloads a token file on change on every replica (standbys verify webhooks
// too, and a new leader starts with the current token): it is not leader-elected.
func watchFile(tf *source.TokenFile, log logr.Logger) manager.Runnable {
	return everyReplica(func(ctx context.Context) error {
		if err := tf.Watch(ctx, log); err != nil && ctx.Err() == nil {
			log.Error(err, "watching token file stopped; the token is still re-read after an authentication failure")
		}
		return nil
	})
}

// everyReplica is a Runnable that runs on standbys as well as on the leader (a bare
// RunnableFunc runs on the leader only).
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

// hardenedServer bounds what one client can hold: headers 64 KiB and 10 s, a request
// 30 s to read and its answer 30 s to write, an idle connection 2 minutes.
func hardenedServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
}

// restConfig loads the cluster config from kubeconfig, else $KUBECONFIG or in-cluster. A
// config that sets no client-side rate limit gets Flux's controller defaults (50 QPS, burst
// 300) instead of client-go's 5 QPS, which made installing the CRD bundle alone take half a
// minute; the apiserver's priority and fairness governs beyond that.
// managerScheme is the scheme of a manager: the built-in types and every Kind served at apiGroup.
func managerScheme(apiGroup string) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := kinds.AddToScheme(scheme, apiGroup); err != nil {
		return nil, fmt.Errorf("--api-group: %w", err)
	}
	return scheme, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
	} else if cfg, err = ctrl.GetConfig(); err != nil {
		return nil, fmt.Errorf("find cluster config: %w", err)
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 300
	}
	return cfg, nil
}
