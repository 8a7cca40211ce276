package image

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/source"
)

// CRCommitter is CRWriter in the shape reconcile.GitWriter still asks for (reconcile's revert
// test builds one), until reconcile takes source.CRCommitter after the layout move; then it
// goes. It wakes no sweep: the operator's writers do (cmd/operator).
type CRCommitter struct {
	Source source.Source
	Writer source.Writer
	Branch string
}

// SetImage commits image (repository:tag) as the CR's spec.image, moving the repository; it
// returns the commit, or the head already naming the image.
func (c *CRCommitter) SetImage(ctx context.Context, file string, gvk schema.GroupVersionKind, namespace, name, img, message string) (string, error) {
	w := &CRWriter{Source: c.Source, Writer: c.Writer, Branch: c.Branch}
	res, err := w.Commit(ctx, source.CRImage{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: namespace, Name: name,
		Image: img, MoveRepository: true, File: file, Message: message})
	if err != nil {
		return "", err
	}
	if res.Commit == "" {
		return res.Parent, nil
	}
	return res.Commit, nil
}
