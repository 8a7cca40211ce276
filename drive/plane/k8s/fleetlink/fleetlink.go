// Package fleetlink links the /v1/k8s plane to reconcile/fleet: it implements the plane's
// Fleet and Bound interfaces over fleet.Fleet (Reach, the registry, the credential store),
// turning the org of a validated caller into a fleet.Caller. Registration writes the
// Cluster object and its credential Secret on the home cluster.
package fleetlink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/drive/plane/k8s"
	"github.com/openuniverse/operator/drive/plane/k8s/ops"
	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/fleet"
)

// Link is the plane's fleet.
type Link struct {
	Fleet *fleet.Fleet
	// Home writes registrations (Cluster objects) and credentials (Secrets in Namespace,
	// the SecretStore's); nil makes clusters.register and deregister answer Forbidden.
	Home      client.Client
	Namespace string
}

var _ k8s.Fleet = (*Link)(nil)

func caller(org string) (fleet.Caller, error) { return fleet.PathCaller(org) }

func view(c fleet.Cluster) ops.Cluster {
	out := ops.Cluster{Name: c.Name, Org: c.Org, Provider: c.Provider, Endpoint: c.Endpoint, Nodes: c.Nodes,
		Namespaces: slices.Clone(c.Namespaces), Default: c.Default}
	if !c.Registered.IsZero() {
		out.Registered = c.Registered.UTC().Format(time.RFC3339)
	}
	return out
}

// List is the org's registrations.
func (l *Link) List(ctx context.Context, org string) ([]ops.Cluster, error) {
	cl, err := caller(org)
	if err != nil {
		return nil, err
	}
	list, err := l.Fleet.Registry.List(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make([]ops.Cluster, 0, len(list))
	for _, c := range list {
		out = append(out, view(c))
	}
	return out, nil
}

// Get is one registration of the org.
func (l *Link) Get(ctx context.Context, org, name string) (ops.Cluster, error) {
	cl, err := caller(org)
	if err != nil {
		return ops.Cluster{}, err
	}
	c, err := l.Fleet.Registry.Lookup(ctx, cl, name)
	if err != nil {
		return ops.Cluster{}, err
	}
	return view(c), nil
}

// Register validates the kubeconfig (fleet.SafeConfig: self-contained, inert, its server
// the endpoint), then writes the credential at the derived ref and the Cluster object. A
// name another org registered is a conflict, without saying whose.
func (l *Link) Register(ctx context.Context, org string, req ops.ClustersRegisterRequest) (ops.Cluster, error) {
	if l.Home == nil {
		return ops.Cluster{}, &k8s.Error{Code: k8s.CodeForbidden, Msg: "this plane registers no clusters (no home client)"}
	}
	if _, err := caller(org); err != nil {
		return ops.Cluster{}, err
	}
	ref, err := fleet.RefOf(org, req.Cluster)
	if err != nil {
		return ops.Cluster{}, &k8s.Error{Code: k8s.CodeBadRequest, Msg: err.Error()}
	}
	if _, err := fleet.SafeConfig([]byte(req.Kubeconfig), req.Endpoint, l.Fleet.AllowNonRoutable); err != nil {
		return ops.Cluster{}, &k8s.Error{Code: k8s.CodeBadRequest, Msg: err.Error()}
	}
	var existing fleetv1.Cluster
	err = l.Home.Get(ctx, client.ObjectKey{Name: req.Cluster}, &existing)
	switch {
	case err == nil && existing.Spec.Org != org:
		return ops.Cluster{}, &k8s.Error{Code: k8s.CodeConflict, Msg: fmt.Sprintf("cluster name %q is taken: choose another", req.Cluster)}
	case err != nil && !apierrors.IsNotFound(err):
		return ops.Cluster{}, err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleet.SecretName(ref), Namespace: l.Namespace,
		Labels: map[string]string{"fleet.openuniverse.dev/credential": "true"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{fleet.SecretKey: []byte(req.Kubeconfig)}}
	if err := l.Home.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
		err = l.Home.Update(ctx, sec)
		if err != nil {
			return ops.Cluster{}, fmt.Errorf("store the credential: %w", err)
		}
	} else if err != nil {
		return ops.Cluster{}, fmt.Errorf("store the credential: %w", err)
	}
	cr := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: req.Cluster},
		Spec: fleetv1.ClusterSpec{Org: org, Endpoint: req.Endpoint, Provider: req.Provider, Namespaces: req.Namespaces}}
	if existing.Name != "" {
		existing.Spec = cr.Spec
		err = l.Home.Update(ctx, &existing)
	} else {
		err = l.Home.Create(ctx, cr)
	}
	if err != nil {
		return ops.Cluster{}, err
	}
	return l.Get(ctx, org, req.Cluster)
}

// Deregister deletes the org's Cluster object and its credential.
func (l *Link) Deregister(ctx context.Context, org, name string) error {
	if l.Home == nil {
		return &k8s.Error{Code: k8s.CodeForbidden, Msg: "this plane deregisters no clusters (no home client)"}
	}
	cl, err := caller(org)
	if err != nil {
		return err
	}
	if _, err := l.Fleet.Registry.Lookup(ctx, cl, name); err != nil {
		return err
	}
	if err := l.Home.Delete(ctx, &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	ref, err := fleet.RefOf(org, name)
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fleet.SecretName(ref), Namespace: l.Namespace}}
	if err := l.Home.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	l.Fleet.Forget(org, name)
	return nil
}

// Reach is fleet.Reach as the org.
func (l *Link) Reach(ctx context.Context, org, name string) (k8s.Bound, error) {
	cl, err := caller(org)
	if err != nil {
		return nil, err
	}
	b, err := l.Fleet.Reach(fleet.WithCaller(ctx, cl), name)
	if err != nil {
		return nil, err
	}
	return bound{b}, nil
}

// Refusal classifies the fleet's refusals.
func (l *Link) Refusal(err error) string {
	var oob *fleet.OutOfBoundError
	switch {
	case errors.Is(err, fleet.ErrNoCluster):
		return k8s.CodeNotFound
	case errors.As(err, &oob):
		return k8s.CodeOutOfBound
	case errors.Is(err, fleet.ErrNoCredential), errors.Is(err, fleet.ErrNoCaller):
		return k8s.CodeForbidden
	}
	return ""
}

type bound struct{ b *fleet.Bound }

func (b bound) Cluster() ops.Cluster                 { return view(b.b.Cluster()) }
func (b bound) Bounded() bool                        { return b.b.Bounded() }
func (b bound) Admits(ns string) error               { return b.b.Admits(ns) }
func (b bound) One(ns string) (client.Client, error) { return b.b.One(ns) }
func (b bound) Typed() kubernetes.Interface          { return b.b.Typed() }
func (b bound) Dynamic() dynamic.Interface           { return b.b.Dynamic() }
func (b bound) Status() (string, error)              { return b.b.Status() }
func (b bound) Whole() (client.Client, error) {
	c, err := b.b.WholeCluster()
	return c.Client, err
}
