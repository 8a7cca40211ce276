package render

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/source"
)

// ListInputs lists, in namespace ns, the objects of the input kinds gvks (an Entry's Inputs:
// a LuxNetwork's LuxChains) that its build reads. It is the one way inputs are gathered from
// a cluster: the Kind controller (from its cache), render --from-cluster, diff --takeover and
// the deploy plane's live diff all call it, so each builds the CR from the same objects. An
// input Kind the cluster does not serve is skipped: the build goes without it.
func ListInputs(ctx context.Context, c client.Reader, gvks []schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, gvk := range gvks {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		err := c.List(ctx, list, client.InNamespace(ns))
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s in %s: %w", gvk.Kind, ns, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// FromCluster returns the Renderer with, as its Inputs, the objects the build of cr reads
// from the cluster (ListInputs in the CR's namespace): what the Kind controller builds cr
// from. An object no Kind serves, or a Kind without inputs, needs no request.
func (r Renderer) FromCluster(ctx context.Context, c client.Reader, cr *unstructured.Unstructured) (Renderer, error) {
	e, ok := r.Registry.Lookup(cr.GroupVersionKind(), r.APIGroup)
	if !ok || len(e.Inputs) == 0 {
		r.Inputs = []*unstructured.Unstructured{}
		return r, nil
	}
	in, err := ListInputs(ctx, c, e.Inputs, cr.GetNamespace())
	if err != nil {
		return r, fmt.Errorf("inputs of %s: %w", apply.RefOf(cr), err)
	}
	if in == nil {
		in = []*unstructured.Unstructured{}
	}
	r.Inputs = in
	return r, nil
}

// RenderFromCluster renders cr, read from the cluster, with its inputs read from the
// cluster too, as the Kind controller builds it.
func (r Renderer) RenderFromCluster(ctx context.Context, c client.Reader, o source.Object) Rendered {
	withInputs, err := r.FromCluster(ctx, c, o.Obj)
	if err != nil {
		return Rendered{From: o, CR: true, Err: fmt.Errorf("%s: %w", Location(o), err)}
	}
	return withInputs.RenderOne(o)
}
