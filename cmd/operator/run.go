package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// runOptions configures `operator run`. Every flag is mirrored by OPERATOR_<FLAG>.
type runOptions struct {
	APIGroup      string
	Namespace     string
	Kubeconfig    string
	MetricsAddr   string
	ProbeAddr     string
	LeaderElect   bool
	LeaderID      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	LogLevel      string
}

func (o *runOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.APIGroup, "api-group", "hanzo.ai", "API group of the universe Kinds (hanzo.ai, lux.cloud, zoo.cloud, osage.cloud, …).")
	fs.StringVar(&o.Namespace, "namespace", "universe-system", "Namespace the operator runs in; holds the leader-election Lease.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means $KUBECONFIG or in-cluster.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "Elect one leader through a Lease; only the leader writes.")
	fs.StringVar(&o.LeaderID, "leader-election-id", "", "Name of the Lease; empty means universe-operator.<api-group>.")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "How long a lease is valid before others may take it.")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "How long the leader retries renewing before it gives up and exits.")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "How often candidates retry acquiring the lease.")
	fs.StringVar(&o.LogLevel, "log-level", "info", "Log level: debug, info or error. Logs are JSON.")
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the operator: controllers, probes and metrics, with leader election",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(o)
		},
	}
	o.BindFlags(cmd.Flags())
	return cmd
}

func run(o *runOptions) error {
	level := zapcore.InfoLevel
	if err := level.Set(o.LogLevel); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.JSONEncoder(), zap.Level(level)))
	log := ctrl.Log.WithName("setup")

	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	leaderID := o.LeaderID
	if leaderID == "" {
		leaderID = "universe-operator." + o.APIGroup
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
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
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	go func() {
		<-mgr.Elected()
		log.Info("elected leader", "lease", o.Namespace+"/"+leaderID)
	}()
	log.Info("starting operator", "version", version, "apiGroup", o.APIGroup, "namespace", o.Namespace, "leaderElect", o.LeaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	log.Info("stopped")
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("find cluster config: %w", err)
	}
	return cfg, nil
}
