package k8s

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

func accessReview(ctx context.Context, p *Plane, c Caller, req ops.AccessReviewRequest) (ops.AccessReviewReply, error) {
	if err := required("verb", req.Verb, "resource", req.Resource); err != nil {
		return ops.AccessReviewReply{}, err
	}
	b, _, err := p.whole(ctx, c, req.Cluster)
	if err != nil {
		return ops.AccessReviewReply{}, err
	}
	r, err := b.Typed().AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: req.Namespace, Verb: req.Verb, Group: req.APIGroup, Resource: req.Resource}}}, metav1.CreateOptions{})
	if err != nil {
		return ops.AccessReviewReply{}, err
	}
	return ops.AccessReviewReply{Allowed: r.Status.Allowed, Reason: r.Status.Reason}, nil
}
