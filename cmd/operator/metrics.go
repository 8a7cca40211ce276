package main

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openuniverse/operator/drive"
	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/reconcile"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/preview"
	"github.com/openuniverse/operator/source/alert"
	"github.com/openuniverse/operator/source/commitstatus"
)

// registerMetrics registers the collectors of every loop on controller-runtime's registry,
// the one /metrics serves (the manager's metrics server), once per process: the one place
// that registers a metric. Packages declare their collectors and list them (drive.Metrics,
// ...); none registers itself, so tests that build loops many times never panic on a second
// registration.
var registerMetrics = sync.OnceFunc(func() {
	metrics.Registry.MustRegister(slices.Concat[[]prometheus.Collector](
		drive.Metrics(),
		reconcile.Metrics(),
		gitops.Metrics(),
		k8s.Metrics(),
		commitstatus.Metrics(),
		preview.Metrics(),
		alert.Metrics(),
	)...)
})
