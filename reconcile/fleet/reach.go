package fleet

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Fleet is the one entry point to registered clusters.
type Fleet struct {
	Registry Registry
	Store    CredentialStore
	// Scheme types the clusters' clients (the operator's scheme: built-in kinds and the
	// universe Kinds); nil means client-go's.
	Scheme *runtime.Scheme
	// AllowNonRoutable lets the clients dial loopback, private and link-local apiservers.
	// Tests only: the testbed's apiservers listen on loopback.
	AllowNonRoutable bool

	mu     sync.Mutex
	shared *clientCache // nil until first use; shared with the Fleets Reading returns
}

// clientCache holds the clients of the clusters reached, per org and name.
type clientCache struct {
	mu sync.Mutex
	m  map[cacheKey]*cached
}

// Reading returns a Fleet that reads the registrations from reg and the credentials from
// store, and shares f's clients (one set per registered cluster, whichever Fleet reached it),
// scheme and AllowNonRoutable: one fleet for callers that read differently (a cache, an
// uncached reader). Each Reach builds or reuses the clients of the versions its own readers
// answer.
func (f *Fleet) Reading(reg Registry, store CredentialStore) *Fleet {
	return &Fleet{Registry: reg, Store: store, Scheme: f.Scheme, AllowNonRoutable: f.AllowNonRoutable, shared: f.clientCache()}
}

func (f *Fleet) clientCache() *clientCache {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shared == nil {
		f.shared = &clientCache{m: map[cacheKey]*cached{}}
	}
	return f.shared
}

type cacheKey struct{ org, name string }

type cached struct {
	cluster, credential string // the versions the clients were built from
	clients             Clients
}

// Reach returns cluster name of the context's caller: the caller's org from WithCaller (never
// an argument) → name looked up in that org's registrations only (ErrNoCluster otherwise) →
// the credential at the derived ref, resolved as the caller → a safe REST config → clients
// cached per org and name, rebuilt when the registration or the credential changes.
func (f *Fleet) Reach(ctx context.Context, name string) (*Bound, error) {
	caller, err := CallerFrom(ctx)
	if err != nil {
		return nil, err
	}
	c, err := f.Registry.Lookup(ctx, caller, name)
	if err != nil {
		return nil, err
	}
	ref, err := c.Ref()
	if err != nil {
		return nil, fmt.Errorf("cluster %s of org %s: %w", name, caller.org, err)
	}
	cred, err := f.Store.Credential(ctx, caller, ref)
	if err != nil {
		return nil, fmt.Errorf("cluster %s of org %s: %w", name, caller.org, err)
	}
	key := cacheKey{caller.org, name}
	cc := f.clientCache()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if e, ok := cc.m[key]; ok && e.cluster == c.version && e.credential == cred.Version {
		return &Bound{cluster: c, clients: e.clients, credential: cred.Version}, nil
	}
	clients, err := f.clients(cred.Kubeconfig, c)
	if err != nil {
		return nil, fmt.Errorf("cluster %s of org %s: credential %s: %w", name, caller.org, ref, err)
	}
	if old, ok := cc.m[key]; ok {
		closeIdle(old.clients)
	}
	cc.m[key] = &cached{cluster: c.version, credential: cred.Version, clients: clients}
	return &Bound{cluster: c, clients: clients, credential: cred.Version}, nil
}

// Forget drops the cached clients of cluster name of org (a registration deleted).
func (f *Fleet) Forget(org, name string) {
	cc := f.clientCache()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if old, ok := cc.m[cacheKey{org, name}]; ok {
		closeIdle(old.clients)
		delete(cc.m, cacheKey{org, name})
	}
}

func (f *Fleet) clients(kubeconfig []byte, c Cluster) (Clients, error) {
	cfg, err := SafeConfig(kubeconfig, c.Endpoint, f.AllowNonRoutable)
	if err != nil {
		return Clients{}, err
	}
	if len(c.Namespaces) > 0 {
		bound := slices.Clone(c.Namespaces)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &gate{next: rt, cluster: c.Name, bound: bound} })
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, err
	}
	typed, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return Clients{}, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return Clients{}, err
	}
	opts := client.Options{HTTPClient: hc}
	if f.Scheme != nil {
		opts.Scheme = f.Scheme
	}
	cc, err := client.New(cfg, opts)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Config: cfg, Client: cc, Typed: typed, Dynamic: dyn, http: hc}, nil
}

// closeIdle closes the idle connections of a dropped credential's clients.
func closeIdle(c Clients) {
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
}

// Status probes the cluster's /version (a bounded registration would fail a namespace list
// and look dead while healthy) and returns the server's git version.
func (b *Bound) Status() (string, error) {
	v, err := b.clients.Typed.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("cluster %s: /version: %w", b.cluster.Name, err)
	}
	return v.GitVersion, nil
}
