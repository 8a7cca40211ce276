package main

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/source"
)

// SetImage is CommitImage in the shape reconcile.GitWriter and plane.GitWriter still ask
// for, until both take source.CRCommitter (after the layout move).
func (g *gitWrite) SetImage(ctx context.Context, file string, gvk schema.GroupVersionKind, namespace, name, img, message string) (string, error) {
	res, err := g.CommitImage(ctx, source.CRImage{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: namespace, Name: name,
		Image: img, MoveRepository: true, File: file, Message: message})
	if err != nil {
		return "", err
	}
	if res.Commit == "" {
		return res.Parent, nil
	}
	return res.Commit, nil
}
