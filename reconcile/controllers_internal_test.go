package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/kinds"
)

// TestKindServedLaterRestarts: with only some CRDs installed, the served Kinds get their
// controllers and the manager keeps running; installing a missing CRD later ends the
// manager with an error, so the process restarts with that Kind's controller.
func TestKindServedLaterRestarts(t *testing.T) {
	cfg := testbed.APIServer(t)
	const group = "served-later.example"
	crds, err := kinds.CRDs(group)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range crds {
		byName[crds[i].Name] = &crds[i]
	}
	install := func(names ...string) {
		t.Helper()
		var objs []*apiextensionsv1.CustomResourceDefinition
		for _, n := range names {
			objs = append(objs, byName[n].DeepCopy())
		}
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: objs}); err != nil {
			t.Fatal(err)
		}
	}
	install("services." + group)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kinds.AddToScheme(scheme, group); err != nil {
		t.Fatal(err)
	}
	recheckServed = 200 * time.Millisecond
	t.Cleanup(func() { recheckServed = 30 * time.Second })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// SetupKinds runs more than once in this test binary; controller names repeat
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetupKinds(mgr, kinds.Builtin(), group, ctrl.Log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	select {
	case err := <-done:
		t.Fatalf("manager stopped with only served Kinds present: %v", err)
	case <-time.After(2 * time.Second):
	}
	install("sqls." + group)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "SQL") {
			t.Fatalf("manager stopped with %v, want an error naming the newly served SQL Kind", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("manager kept running after the SQL CRD was installed")
	}
}
