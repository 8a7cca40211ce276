package k8s

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	"github.com/openuniverse/operator/kinds"
)

// FieldManager is the plane's field manager on the registered clusters.
const FieldManager = kinds.ManagerK8sPlane

func namespaceOf(ns *corev1.Namespace) ops.Namespace {
	return ops.Namespace{Name: ns.Name, Phase: string(ns.Status.Phase), Org: ns.Labels[kinds.OrgLabel]}
}

func namespacesList(ctx context.Context, p *Plane, c Caller, req ops.NamespacesListRequest) (ops.NamespacesListReply, error) {
	b, err := p.reach(ctx, c, req.Cluster, "")
	if err != nil {
		return ops.NamespacesListReply{}, err
	}
	out := ops.NamespacesListReply{Namespaces: []ops.Namespace{}}
	if b.Bounded() {
		// the bound's namespaces, each read by name: a list would be refused
		for _, name := range b.Cluster().Namespaces {
			ns, err := b.Typed().CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return ops.NamespacesListReply{}, err
			}
			out.Namespaces = append(out.Namespaces, namespaceOf(ns))
		}
		return out, nil
	}
	list, err := b.Typed().CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ops.NamespacesListReply{}, err
	}
	for i := range list.Items {
		out.Namespaces = append(out.Namespaces, namespaceOf(&list.Items[i]))
	}
	slices.SortFunc(out.Namespaces, func(a, b ops.Namespace) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func namespacesGet(ctx context.Context, p *Plane, c Caller, req ops.NamespacesGetRequest) (ops.NamespacesGetReply, error) {
	b, err := p.namespaced(ctx, c, req.Cluster, req.Namespace)
	if err != nil {
		return ops.NamespacesGetReply{}, err
	}
	ns, err := b.Typed().CoreV1().Namespaces().Get(ctx, req.Namespace, metav1.GetOptions{})
	if err != nil {
		return ops.NamespacesGetReply{}, err
	}
	return ops.NamespacesGetReply{Namespace: namespaceOf(ns)}, nil
}

func namespacesCreate(ctx context.Context, p *Plane, c Caller, req ops.NamespacesCreateRequest) (ops.NamespacesCreateReply, error) {
	if err := required("namespace", req.Namespace); err != nil {
		return ops.NamespacesCreateReply{}, err
	}
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.NamespacesCreateReply{}, err
	}
	ns, err := b.Typed().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace}},
		metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		ns, err = b.Typed().CoreV1().Namespaces().Get(ctx, req.Namespace, metav1.GetOptions{})
		if err != nil {
			return ops.NamespacesCreateReply{}, err
		}
		return ops.NamespacesCreateReply{Namespace: namespaceOf(ns)}, nil
	}
	if err != nil {
		return ops.NamespacesCreateReply{}, err
	}
	return ops.NamespacesCreateReply{Namespace: namespaceOf(ns), Created: true}, nil
}

func namespacesDelete(ctx context.Context, p *Plane, c Caller, req ops.NamespacesDeleteRequest) (ops.NamespacesDeleteReply, error) {
	if err := required("namespace", req.Namespace); err != nil {
		return ops.NamespacesDeleteReply{}, err
	}
	if !p.opts.AllowNamespaceDelete {
		return ops.NamespacesDeleteReply{}, errorf(CodeForbidden, "namespaces.delete is off: it deletes every object of the namespace, claims included (the plane's --k8s-plane-allow-namespace-delete turns it on)")
	}
	b, err := p.reach(ctx, c, req.Cluster, "")
	if err != nil {
		return ops.NamespacesDeleteReply{}, err
	}
	if b.Bounded() {
		return ops.NamespacesDeleteReply{}, errorf(CodeForbidden, "cluster %s is a bounded registration %v: namespaces.delete is refused for it (a scoped credential does not own the namespace)", req.Cluster, b.Cluster().Namespaces)
	}
	if req.Confirm != req.Namespace {
		return ops.NamespacesDeleteReply{}, badf("confirm must repeat the namespace's name %q", req.Namespace)
	}
	if _, err := b.Whole(); err != nil {
		return ops.NamespacesDeleteReply{}, err
	}
	if err := b.Typed().CoreV1().Namespaces().Delete(ctx, req.Namespace, metav1.DeleteOptions{}); err != nil {
		return ops.NamespacesDeleteReply{}, err
	}
	return ops.NamespacesDeleteReply{Deleting: true}, nil
}
