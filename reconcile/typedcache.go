package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// The Kind controllers, the deploy plane and the drive's rollout wait read and watch the
// children as unstructured objects: one shape for every Kind's children, the shape ssa and
// kstatus take. Kept that way in the cache, each child was a tree of JSON maps decoded from
// a JSON watch (~19 KiB for a Deployment and its Service at 5 000 CRs, 188 MiB of the 397
// live), and the apiserver encoded every change of a Deployment to JSON for this operator
// alone (the controller-manager and kwok watch in protobuf). typedCache keeps the children
// of built-in kinds in typed informers instead — protobuf on the wire, Go structs in
// memory — and converts on each read, so every caller still gets the unstructured object
// the apiserver's JSON would have given (runtime.DefaultUnstructuredConverter follows the
// JSON encoding: the same fields, nulls and numbers).

// TypedChildren returns the manager's (or a fleet cluster's) cache constructor: the cache
// of opts in which the children of reg's Kinds of a built-in kind (client-go's scheme:
// Deployments, Services, ConfigMaps, HPAs…) are kept typed, whatever type the caller asks
// for. A child of a CRD kind (a KMSSecret) stays unstructured: its Go type's encoding is not
// the apiserver's.
func TypedChildren(reg kinds.Registry, group string) cache.NewCacheFunc {
	typed := map[schema.GroupVersionKind]bool{}
	for _, e := range reg {
		for _, gvk := range e.OwnedGVKs(group) {
			if clientgoscheme.Scheme.Recognizes(gvk) {
				typed[gvk] = true
			}
		}
	}
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &typedCache{Cache: c, scheme: opts.Scheme, typed: typed}, nil
	}
}

// typedCache is a cache.Cache whose unstructured objects of the kinds in typed are kept by
// the typed informers of those kinds: Get and List convert what they read, GetInformer,
// RemoveInformer and IndexField go to the typed informer (its handlers and index functions
// see typed objects, which every one of ours takes as a client.Object).
type typedCache struct {
	cache.Cache
	scheme *runtime.Scheme
	typed  map[schema.GroupVersionKind]bool
}

// typedFor returns the typed object that stands for obj in the cache, nil when obj is not
// an unstructured object of a typed kind.
func (c *typedCache) typedFor(obj runtime.Object) client.Object {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return nil
	}
	gvk := u.GetObjectKind().GroupVersionKind()
	if _, list := obj.(*unstructured.UnstructuredList); list {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if !c.typed[gvk] {
		return nil
	}
	t, err := c.scheme.New(gvk)
	if err != nil {
		return nil
	}
	o, _ := t.(client.Object)
	return o
}

func (c *typedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	t := c.typedFor(obj)
	if t == nil {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	// no deep copy: the conversion below copies every value out of the cache's object
	if err := c.Cache.Get(ctx, key, t, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	return intoUnstructured(t, obj.(*unstructured.Unstructured), obj.GetObjectKind().GroupVersionKind())
}

func (c *typedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok || c.typedFor(list) == nil {
		return c.Cache.List(ctx, list, opts...)
	}
	gvk := ul.GroupVersionKind()
	item := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
	tl, err := c.scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("no list type for %s: %w", item, err)
	}
	typedList, ok := tl.(client.ObjectList)
	if !ok {
		return fmt.Errorf("%s is not a list type", gvk)
	}
	if err := c.Cache.List(ctx, typedList, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	ul.SetResourceVersion(typedList.GetResourceVersion())
	ul.Items = make([]unstructured.Unstructured, 0, meta.LenList(typedList))
	into := intoUnstructured
	if slices.ContainsFunc(opts, func(o client.ListOption) bool { _, ok := o.(MetadataOnly); return ok }) {
		into = metadataInto
	}
	return meta.EachListItem(typedList, func(o runtime.Object) error {
		var u unstructured.Unstructured
		if err := into(o, &u, item); err != nil {
			return err
		}
		ul.Items = append(ul.Items, u)
		return nil
	})
}

// MetadataOnly is a List option for a cache of TypedChildren: items of a typed kind come
// back with their apiVersion, kind and metadata only, not converted whole. For a reader
// that needs no more (prune and the leftover check: who controls a child, who applied it),
// on every reconcile. Any other cache ignores it, and lists whole objects.
type MetadataOnly struct{}

// ApplyToList implements client.ListOption: it sets nothing.
func (MetadataOnly) ApplyToList(*client.ListOptions) {}

// metadataInto sets u to the apiVersion, kind and metadata of typed object t, of kind gvk.
func metadataInto(t runtime.Object, u *unstructured.Unstructured, gvk schema.GroupVersionKind) error {
	a, ok := t.(metav1.ObjectMetaAccessor)
	if !ok {
		return intoUnstructured(t, u, gvk)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a.GetObjectMeta())
	if err != nil {
		return fmt.Errorf("convert the metadata of %s from the typed cache: %w", gvk.Kind, err)
	}
	u.Object = map[string]any{"metadata": m}
	u.SetGroupVersionKind(gvk)
	return nil
}

func (c *typedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if t := c.typedFor(obj); t != nil {
		obj = t
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

func (c *typedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if t := c.typedFor(obj); t != nil {
		obj = t
	}
	return c.Cache.RemoveInformer(ctx, obj)
}

func (c *typedCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if t := c.typedFor(obj); t != nil {
		obj = t
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// intoUnstructured sets u to the unstructured form of typed object t, of kind gvk.
func intoUnstructured(t runtime.Object, u *unstructured.Unstructured, gvk schema.GroupVersionKind) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t)
	if err != nil {
		return fmt.Errorf("convert %s from the typed cache: %w", gvk.Kind, err)
	}
	u.Object = m
	u.SetGroupVersionKind(gvk)
	embeddedKinds(u.Object, gvk.GroupKind())
	return nil
}

// embeddedKinds sets in obj, the unstructured form of a typed object of kind gk, the kind of
// each embedded object the apiserver's JSON names and its protobuf cannot: a StatefulSet's
// volume claim templates are PersistentVolumeClaims with apiVersion and kind in JSON, but an
// embedded object's TypeMeta has no protobuf field, so a StatefulSet from a protobuf watch
// has neither. Read without them, every StatefulSet with a claim template differed from the
// dry-run of its own apply (ssa compares them as JSON): each reconcile after a restart
// applied it again, changing nothing but logging "Updated child".
func embeddedKinds(obj map[string]any, gk schema.GroupKind) {
	if gk != (schema.GroupKind{Group: "apps", Kind: "StatefulSet"}) {
		return
	}
	templates, _, _ := unstructured.NestedSlice(obj, "spec", "volumeClaimTemplates")
	for _, t := range templates {
		if m, ok := t.(map[string]any); ok {
			m["apiVersion"], m["kind"] = "v1", "PersistentVolumeClaim"
		}
	}
	if len(templates) > 0 {
		_ = unstructured.SetNestedSlice(obj, templates, "spec", "volumeClaimTemplates")
	}
}
