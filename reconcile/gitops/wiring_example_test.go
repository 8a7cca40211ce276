package gitops_test

import (
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
)

// How `operator run` wires the sweep: flags, the source, the sweeper as a
// leader-only Runnable, and POST /reconcile and GET /gitops next to the
// probes on the health address (the manager's own probe server is turned
// off with HealthProbeBindAddress "0", since its mux cannot take handlers).
func ExampleNewSweeper() {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	gopts := gitops.DefaultOptions()
	gopts.BindFlags(fs) // --gitops-namespaces, --gitops-apply-scope, --gitops-resync, --gitops-webhook-*, --gitops-concurrency
	sopts := source.Options{}
	sopts.BindFlags(fs) // --gitops-token-file
	copts := gitclone.DefaultOptions()
	copts.BindFlags(fs) // --git-url, --git-branch, --git-path … (or github.Options for the REST source)
	_ = fs.Parse(nil)

	ctx := ctrl.SetupSignalHandler()
	log := ctrl.Log.WithName("gitops")
	run := func() error {
		cfg := ctrl.GetConfigOrDie()
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{HealthProbeBindAddress: "0", LeaderElection: true, LeaderElectionID: "universe-operator.hanzo.ai"})
		if err != nil {
			return err
		}
		scope, err := gopts.Scope(gitops.Self{Namespace: "universe-system"}) // --gitops-namespaces is required; the operator's own objects are never written
		if err != nil {
			return err
		}
		creds, err := sopts.Credentials() // nil when anonymous
		if err != nil {
			return err
		}
		if creds != nil {
			go func() { _ = creds.Watch(ctx, log) }()
		}
		src, err := gitclone.New(creds, copts)
		if err != nil {
			return err
		}
		sw, err := gitops.NewSweeper(cfg, src, scope, gopts)
		if err != nil {
			return err
		}
		if err := mgr.Add(sw); err != nil { // NeedLeaderElection: sweeps on the leader only
			return err
		}
		hookSecret, err := gopts.WebhookSecret() // an error without a secret, unless --gitops-webhook-insecure (then nil)
		if err != nil {
			return err
		}
		if hookSecret != nil {
			go func() { _ = hookSecret.Watch(ctx, log) }()
		}
		mux := http.NewServeMux()
		mux.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
		mux.Handle("/readyz", http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
		sw.Routes(mux, sw.Webhook(hookSecret, gopts, log))
		if err := mgr.Add(&manager.Server{Name: "health", Server: &http.Server{Addr: ":8081", Handler: mux, ReadHeaderTimeout: 10 * time.Second}}); err != nil {
			return err
		}
		return mgr.Start(logr.NewContext(ctx, log))
	}
	_ = run // compiled, not run: an example without output
}
