package fleet

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OutOfBoundError refuses a namespace outside a registration's bound. It names the
// cluster, the namespace (and the object, when there is one) and the bound.
type OutOfBoundError struct {
	Cluster   string
	Namespace string // "" for a cluster-scoped object or an all-namespaces list
	Object    string // kind/name, when the refusal is of an object
	Bound     []string
}

func (e *OutOfBoundError) Error() string {
	what := fmt.Sprintf("namespace %q", e.Namespace)
	switch {
	case e.Object != "" && e.Namespace == "":
		what = e.Object + " (cluster-wide)"
	case e.Object != "":
		what = fmt.Sprintf("%s in namespace %q", e.Object, e.Namespace)
	case e.Namespace == "":
		what = "every namespace"
	}
	return fmt.Sprintf("cluster %s: %s is outside the registration's namespaces bound [%s]: refused, not narrowed",
		e.Cluster, what, strings.Join(e.Bound, " "))
}

// Clients are the clients of one registered cluster, sharing one HTTP client.
type Clients struct {
	Config  *rest.Config
	Client  client.Client
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
	http    *http.Client
}

// Bound is one registered cluster as its caller may reach it: every namespaced operation
// goes through One, Scope or WholeCluster, which refuse a namespace outside the bound.
type Bound struct {
	cluster    Cluster
	clients    Clients
	credential string // the credential's version
}

// Cluster is the registration the Bound reaches.
func (b *Bound) Cluster() Cluster { return b.cluster }

// Version changes whenever the registration or its credential does (a rotation): a
// client built from an earlier Bound's Config is to be rebuilt.
func (b *Bound) Version() string { return b.cluster.version + "/" + b.credential }

// Bounded reports whether the registration is limited to its Namespaces.
func (b *Bound) Bounded() bool { return len(b.cluster.Namespaces) > 0 }

// Admits reports, with the refusal, whether namespace ns is inside the bound.
func (b *Bound) Admits(ns string) error {
	if !b.Bounded() {
		return nil
	}
	if ns == "" || !slices.Contains(b.cluster.Namespaces, ns) {
		return &OutOfBoundError{Cluster: b.cluster.Name, Namespace: ns, Bound: b.cluster.Namespaces}
	}
	return nil
}

// One returns a client of namespace ns: every object it reads or writes must be in ns.
func (b *Bound) One(ns string) (client.Client, error) { return b.Scope(ns) }

// Scope returns a client limited to namespaces, each of which must be inside the bound (all
// refused, by name, if one is not). Objects in other namespaces, cluster-scoped objects and
// all-namespace lists are refused by the client.
func (b *Bound) Scope(namespaces ...string) (client.Client, error) {
	if len(namespaces) == 0 {
		return nil, fmt.Errorf("cluster %s: a scope of no namespace", b.cluster.Name)
	}
	for _, ns := range namespaces {
		if err := b.Admits(ns); err != nil {
			return nil, err
		}
	}
	allowed := slices.Sorted(slices.Values(namespaces))
	return &gated{Client: b.clients.Client, cluster: b.cluster.Name, allowed: slices.Compact(allowed)}, nil
}

// Config returns a copy of the cluster's REST config, for a client the caller builds itself
// (a git sweep's): for a bounded registration its transport refuses, before the request
// leaves, everything outside the bound (see admitPath).
func (b *Bound) Config() *rest.Config { return rest.CopyConfig(b.clients.Config) }

// WholeCluster returns every client of the cluster, for cluster-wide operations (a
// cluster-scoped object, a list across namespaces). A bounded registration refuses it.
func (b *Bound) WholeCluster() (Clients, error) {
	if b.Bounded() {
		return Clients{}, &OutOfBoundError{Cluster: b.cluster.Name, Bound: b.cluster.Namespaces}
	}
	return b.clients, nil
}

// Typed and Dynamic return the cluster's typed and dynamic clients for calls of the
// caller's choosing (eviction, logs, the node proxy, a closed set of kinds): for a bounded
// registration their transport refuses, before the request leaves, everything outside the
// bound (see admitPath), so check Admits first for a refusal that names the namespace.
func (b *Bound) Typed() kubernetes.Interface { return b.clients.Typed }

// Dynamic: see Typed.
func (b *Bound) Dynamic() dynamic.Interface { return b.clients.Dynamic }

// Client returns a client of the cluster that admits exactly the bound: any namespace of a
// whole-cluster registration (and cluster-scoped objects), else only the bound's namespaces.
func (b *Bound) Client() client.Client {
	if !b.Bounded() {
		return b.clients.Client
	}
	return &gated{Client: b.clients.Client, cluster: b.cluster.Name, allowed: b.cluster.Namespaces}
}

// gated is a client whose every call is checked against its namespaces first.
type gated struct {
	client.Client
	cluster string
	allowed []string
}

func (g *gated) refuse(ns, object string) error {
	return &OutOfBoundError{Cluster: g.cluster, Namespace: ns, Object: object, Bound: g.allowed}
}

func (g *gated) check(obj runtime.Object, ns, name string) error {
	namespaced, err := g.IsObjectNamespaced(obj)
	if err != nil {
		return fmt.Errorf("cluster %s: scope of %s: %w", g.cluster, name, err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvk, err := g.GroupVersionKindFor(obj); err == nil {
			kind = gvk.Kind
		}
	}
	ref := kind + "/" + name
	if !namespaced {
		return g.refuse("", ref)
	}
	if !slices.Contains(g.allowed, ns) {
		return g.refuse(ns, ref)
	}
	return nil
}

func (g *gated) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := g.check(obj, key.Namespace, key.Name); err != nil {
		return err
	}
	return g.Client.Get(ctx, key, obj, opts...)
}

func (g *gated) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Namespace == "" || !slices.Contains(g.allowed, lo.Namespace) {
		return g.refuse(lo.Namespace, "")
	}
	return g.Client.List(ctx, list, opts...)
}

func (g *gated) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return g.Client.Create(ctx, obj, opts...)
}

func (g *gated) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return g.Client.Update(ctx, obj, opts...)
}

func (g *gated) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return g.Client.Patch(ctx, obj, patch, opts...)
}

// Apply gates an apply configuration made from an object (client.ApplyConfigurationFromUnstructured,
// the Applier's) by that object's namespace; a typed apply configuration, which has no
// namespace accessor to check, is refused.
func (g *gated) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return fmt.Errorf("cluster %s: typed apply configurations are not gated by namespace; apply an unstructured object", g.cluster)
	}
	o := &unstructured.Unstructured{Object: u.UnstructuredContent()}
	if err := g.check(o, o.GetNamespace(), o.GetName()); err != nil {
		return err
	}
	return g.Client.Apply(ctx, obj, opts...)
}

func (g *gated) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return g.Client.Delete(ctx, obj, opts...)
}

func (g *gated) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	do := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	if do.Namespace == "" || !slices.Contains(g.allowed, do.Namespace) {
		return g.refuse(do.Namespace, "")
	}
	return g.Client.DeleteAllOf(ctx, obj, opts...)
}

func (g *gated) Status() client.SubResourceWriter { return g.SubResource("status") }

func (g *gated) SubResource(sub string) client.SubResourceClient {
	return &gatedSub{SubResourceClient: g.Client.SubResource(sub), g: g}
}

type gatedSub struct {
	client.SubResourceClient
	g *gated
}

func (s *gatedSub) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	if err := s.g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.SubResourceClient.Get(ctx, obj, sub, opts...)
}

func (s *gatedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *gatedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *gatedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.g.check(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *gatedSub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return fmt.Errorf("cluster %s: apply configurations are not gated by namespace; use Patch with client.Apply", s.g.cluster)
}
