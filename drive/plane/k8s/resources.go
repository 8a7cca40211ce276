package k8s

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// resource reaches ref's cluster and namespace and resolves its kind in the closed set.
func (p *Plane) resource(ctx context.Context, c Caller, ref ops.ResourceRef) (dynamic.ResourceInterface, schema.GroupVersionResource, error) {
	if err := required("apiVersion", ref.APIVersion, "kind", ref.Kind); err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	gvr, err := p.kindOf(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, gvr, err
	}
	b, err := p.namespaced(ctx, c, ref.Cluster, ref.Namespace)
	if err != nil {
		return nil, gvr, err
	}
	return b.Dynamic().Resource(gvr).Namespace(ref.Namespace), gvr, nil
}

func clean(u *unstructured.Unstructured) map[string]any {
	u.SetManagedFields(nil)
	return u.Object
}

const maxListLimit = 500

func resourcesList(ctx context.Context, p *Plane, c Caller, req ops.ResourcesListRequest) (ops.ResourcesListReply, error) {
	ri, _, err := p.resource(ctx, c, req.ResourceRef)
	if err != nil {
		return ops.ResourcesListReply{}, err
	}
	limit := req.Limit
	if limit <= 0 || limit > maxListLimit {
		limit = maxListLimit
	}
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: req.Selector, Limit: limit, Continue: req.Continue})
	if err != nil {
		return ops.ResourcesListReply{}, err
	}
	out := ops.ResourcesListReply{Items: []map[string]any{}, Continue: list.GetContinue()}
	for i := range list.Items {
		out.Items = append(out.Items, clean(&list.Items[i]))
	}
	return out, nil
}

func resourcesGet(ctx context.Context, p *Plane, c Caller, req ops.ResourcesGetRequest) (ops.ResourcesGetReply, error) {
	if err := required("name", req.Name); err != nil {
		return ops.ResourcesGetReply{}, err
	}
	ri, _, err := p.resource(ctx, c, req.ResourceRef)
	if err != nil {
		return ops.ResourcesGetReply{}, err
	}
	u, err := ri.Get(ctx, req.Name, metav1.GetOptions{})
	if err != nil {
		return ops.ResourcesGetReply{}, err
	}
	return ops.ResourcesGetReply{Object: clean(u)}, nil
}

func resourcesApply(ctx context.Context, p *Plane, c Caller, req ops.ResourcesApplyRequest) (ops.ResourcesApplyReply, error) {
	u := &unstructured.Unstructured{Object: req.Object}
	if req.Object == nil {
		return ops.ResourcesApplyReply{}, badf("object is required")
	}
	switch {
	case u.GetAPIVersion() != req.APIVersion || u.GetKind() != req.Kind:
		return ops.ResourcesApplyReply{}, badf("object is %s %s, the request names %s %s", u.GetAPIVersion(), u.GetKind(), req.APIVersion, req.Kind)
	case u.GetNamespace() != "" && u.GetNamespace() != req.Namespace:
		return ops.ResourcesApplyReply{}, badf("object's namespace %q is not the request's %q", u.GetNamespace(), req.Namespace)
	case u.GetName() == "":
		return ops.ResourcesApplyReply{}, badf("object has no metadata.name")
	}
	ri, _, err := p.resource(ctx, c, req.ResourceRef)
	if err != nil {
		return ops.ResourcesApplyReply{}, err
	}
	u.SetNamespace(req.Namespace)
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	data, err := json.Marshal(u.Object)
	if err != nil {
		return ops.ResourcesApplyReply{}, badf("object: %v", err)
	}
	force := true
	o := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if req.DryRun {
		o.DryRun = []string{metav1.DryRunAll}
	}
	got, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, o)
	if err != nil {
		return ops.ResourcesApplyReply{}, err
	}
	return ops.ResourcesApplyReply{Object: clean(got)}, nil
}

func resourcesDelete(ctx context.Context, p *Plane, c Caller, req ops.ResourcesDeleteRequest) (ops.ResourcesDeleteReply, error) {
	if err := required("name", req.Name); err != nil {
		return ops.ResourcesDeleteReply{}, err
	}
	ri, _, err := p.resource(ctx, c, req.ResourceRef)
	if err != nil {
		return ops.ResourcesDeleteReply{}, err
	}
	bg := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, req.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return ops.ResourcesDeleteReply{}, err
	}
	return ops.ResourcesDeleteReply{Deleted: true}, nil
}

// Watch bounds.
const (
	defaultWatchWait = 10
	maxWatchWait     = 30
	maxWatchEvents   = 500
)

func watchWait(s int) int {
	switch {
	case s <= 0:
		return defaultWatchWait
	case s > maxWatchWait:
		return maxWatchWait
	}
	return s
}

// expired reports whether err says a resourceVersion is too old to watch from.
func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func resourcesWatch(ctx context.Context, p *Plane, c Caller, req ops.ResourcesWatchRequest) (ops.ResourcesWatchReply, error) {
	ri, _, err := p.resource(ctx, c, req.ResourceRef)
	if err != nil {
		return ops.ResourcesWatchReply{}, err
	}
	fresh := func(exp bool) (ops.ResourcesWatchReply, error) {
		list, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return ops.ResourcesWatchReply{}, err
		}
		return ops.ResourcesWatchReply{Events: []ops.WatchEvent{}, Cursor: list.GetResourceVersion(), Expired: exp}, nil
	}
	if req.Cursor == "" {
		return fresh(false)
	}
	wait := watchWait(req.WaitSeconds)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(wait)*time.Second)
	defer cancel()
	timeout := int64(wait)
	w, err := ri.Watch(wctx, metav1.ListOptions{ResourceVersion: req.Cursor, TimeoutSeconds: &timeout, AllowWatchBookmarks: true})
	if expired(err) {
		return fresh(true)
	}
	if err != nil {
		return ops.ResourcesWatchReply{}, err
	}
	defer w.Stop()
	out := ops.ResourcesWatchReply{Events: []ops.WatchEvent{}, Cursor: req.Cursor}
	for len(out.Events) < maxWatchEvents {
		select {
		case <-wctx.Done():
			return out, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, nil
			}
			switch ev.Type {
			case watch.Error:
				if st := apierrors.FromObject(ev.Object); expired(st) || isGoneStatus(ev.Object) {
					return fresh(true)
				}
				return out, apierrors.FromObject(ev.Object)
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					out.Cursor = u.GetResourceVersion()
				}
			default:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				out.Cursor = u.GetResourceVersion()
				out.Events = append(out.Events, ops.WatchEvent{Type: string(ev.Type), Object: clean(u)})
			}
		}
	}
	return out, nil
}

func isGoneStatus(obj any) bool {
	if st, ok := obj.(*metav1.Status); ok {
		return st.Code == http.StatusGone
	}
	return false
}
