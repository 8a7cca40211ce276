package render

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// KindMapper resolves kind names as kubectl does: Kind, singular, plural or short name,
// optionally qualified by group (luxruntime.bootno.de).
func KindMapper(cfg *rest.Config) (meta.RESTMapper, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := cacheddiscovery.NewMemCacheClient(dc)
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil), nil
}

// FetchCR reads, for `operator render --from-cluster <kind>/<name> -n <ns>`, the CR a Kind
// of reg serves. kind is resolved through mapper; when it names several served Kinds (a
// LuxRuntime at bootno.de and at the universe group), the one where the CR exists is taken.
func FetchCR(ctx context.Context, c client.Reader, mapper meta.RESTMapper, reg kinds.Registry, group, namespace, kindName string) (*unstructured.Unstructured, error) {
	kind, name, ok := strings.Cut(kindName, "/")
	if !ok || kind == "" || name == "" {
		return nil, fmt.Errorf("%q: want <kind>/<name>, e.g. hanzodns/dns", kindName)
	}
	gr := schema.ParseGroupResource(strings.ToLower(kind))
	// A short name resolves to the first group that declares it (the shortcut expander), so
	// an unqualified kind is looked up in this universe's groups first, then anywhere.
	lookups := []schema.GroupResource{gr}
	if gr.Group == "" {
		lookups = nil
		for _, f := range []kinds.Family{kinds.FamilyUniverse, kinds.FamilyKMS, kinds.FamilyChain} {
			lookups = append(lookups, schema.GroupResource{Group: f.Group(group), Resource: gr.Resource})
		}
		lookups = append(lookups, gr)
	}
	var gvks []schema.GroupVersionKind
	for _, l := range lookups {
		found, err := mapper.KindsFor(l.WithVersion(""))
		if err != nil && !meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("resolve kind %q: %w", kind, err)
		}
		gvks = append(gvks, found...)
	}
	var candidates []schema.GroupVersionKind
	seen := map[schema.GroupKind]bool{}
	for _, gvk := range gvks {
		if _, ok := reg.Lookup(gvk, group); ok && !seen[gvk.GroupKind()] {
			seen[gvk.GroupKind()] = true
			candidates = append(candidates, gvk)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("%q is no Kind of universe %s served by the cluster (resolved to %v)", kind, group, gvks)
	}
	return fetchOne(ctx, c, candidates, namespace, name)
}

// networkKinds are the Kinds `operator render --from-cluster <ns> <name>` looks for, as the
// Lux operators' users name a network.
var networkKinds = []string{"LuxRuntime", "Network", "LuxNetwork"}

// FetchNetwork reads, for `operator render --from-cluster <ns> <name>`, the LuxRuntime,
// Network or LuxNetwork named name in namespace.
func FetchNetwork(ctx context.Context, c client.Reader, reg kinds.Registry, group, namespace, name string) (*unstructured.Unstructured, error) {
	var candidates []schema.GroupVersionKind
	for ref, e := range reg {
		for _, k := range networkKinds {
			if ref.Kind == k {
				candidates = append(candidates, e.GroupVersionKind(group))
			}
		}
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].String() < candidates[j].String() })
	return fetchOne(ctx, c, candidates, namespace, name)
}

// fetchOne gets name from each candidate GVK the cluster serves; exactly one must have it.
func fetchOne(ctx context.Context, c client.Reader, candidates []schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	var found []*unstructured.Unstructured
	var kinds []string
	for _, gvk := range candidates {
		kinds = append(kinds, strings.ToLower(gvk.Kind)+"."+gvk.Group)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		case err != nil:
			return nil, fmt.Errorf("read %s %s/%s: %w", gvk.Kind, namespace, name, err)
		default:
			found = append(found, u)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("%s/%s: not found as %s", namespace, name, strings.Join(kinds, ", "))
	}
	var names []string
	for _, u := range found {
		gvk := u.GroupVersionKind()
		names = append(names, strings.ToLower(gvk.Kind)+"."+gvk.Group+"/"+name)
	}
	return nil, fmt.Errorf("%s/%s exists as several Kinds: name one of %s", namespace, name, strings.Join(names, ", "))
}
