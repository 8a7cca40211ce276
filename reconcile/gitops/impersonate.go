package gitops

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// impersonator holds the git path's clients as --gitops-service-account: in each target
// namespace, the ServiceAccount of that name there (Flux's multi-tenancy lockdown), so an
// object from git lands only where the namespace's own RBAC lets that ServiceAccount write
// it. One applier, one metadata and one dynamic client per namespace, built on first use and kept.
// Namespaces and CRDs (cluster-scoped, gated by the scope) stay the operator's own.
type impersonator struct {
	cfg    *rest.Config
	name   string
	mapper meta.RESTMapper

	mu   sync.Mutex
	byNS map[string]*tenantClients
}

type tenantClients struct {
	applier *apply.Applier
	meta    metadata.Interface
	dyn     dynamic.Interface
	err     error
}

// User is the user name the git path acts as in namespace ns.
func (im *impersonator) User(ns string) string {
	return "system:serviceaccount:" + ns + ":" + im.name
}

// get returns the clients of namespace ns, building them once.
func (im *impersonator) get(ns string) *tenantClients {
	im.mu.Lock()
	defer im.mu.Unlock()
	if tc, ok := im.byNS[ns]; ok {
		return tc
	}
	tc := &tenantClients{}
	im.byNS[ns] = tc
	cfg := rest.CopyConfig(im.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: im.User(ns)}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		tc.err = fmt.Errorf("gitops client as %s: %w", im.User(ns), err)
		return tc
	}
	c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: hc, Mapper: im.mapper})
	if err != nil {
		tc.err = fmt.Errorf("gitops client as %s: %w", im.User(ns), err)
		return tc
	}
	if tc.meta, err = metadata.NewForConfigAndClient(cfg, hc); err != nil {
		tc.err = fmt.Errorf("gitops metadata client as %s: %w", im.User(ns), err)
		return tc
	}
	if tc.dyn, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
		tc.err = fmt.Errorf("gitops dynamic client as %s: %w", im.User(ns), err)
		return tc
	}
	tc.applier = &apply.Applier{Client: NeverDelete(c), Manager: kinds.ManagerGitOps, Concurrency: 1}
	return tc
}

// applierFor is the applier of one object: as the namespace's ServiceAccount with
// --gitops-service-account, else (and for cluster-scoped objects) the operator's.
func (s *Sweeper) applierFor(it *item) (*apply.Applier, error) {
	if s.as == nil || it.key.Namespace == "" || it.mapping == nil || it.mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return s.applier, nil
	}
	tc := s.as.get(it.key.Namespace)
	return tc.applier, tc.err
}
