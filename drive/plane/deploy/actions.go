package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/upgrade/image"
)

// FieldManager is the field manager of the plane's writes (kinds, the one list).
const FieldManager = kinds.ManagerDeployPlane

// ErrNoSweep is what RequestSweep returns where no git sweep can be reached.
var ErrNoSweep = errors.New("no git sweep configured")

// Requester is the default Actions: it asks for a reconcile the way Flux's
// reconcile.fluxcd.io/requestedAt does, by changing an annotation on the CR, which the Kind
// controller watches (every change of a CR reconciles it); SetImage merge-patches spec.image.
// SweepFunc, when set, asks the git sweep for a pass (cmd/operator wires the sweep's trigger, or
// the webhook relay a standby replica uses).
type Requester struct {
	Client    client.Client // direct (uncached) writes
	Now       func() time.Time
	SweepFunc func(ctx context.Context) error
}

func (q *Requester) patch(ctx context.Context, cr *unstructured.Unstructured, body map[string]any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(cr.GroupVersionKind())
	target.SetNamespace(cr.GetNamespace())
	target.SetName(cr.GetName())
	if err := q.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("patch %s %s/%s: %w", cr.GetKind(), cr.GetNamespace(), cr.GetName(), err)
	}
	return nil
}

func (q *Requester) stamp(by string) map[string]any {
	now := time.Now
	if q.Now != nil {
		now = q.Now
	}
	return map[string]any{AnnotationSyncRequestedAt: now().UTC().Format(time.RFC3339Nano), AnnotationSyncInitiatedBy: by}
}

// Reconcile stamps the sync annotations; the Kind controller reconciles on the change.
func (q *Requester) Reconcile(ctx context.Context, cr *unstructured.Unstructured, by string) error {
	return q.patch(ctx, cr, map[string]any{"metadata": map[string]any{"annotations": q.stamp(by)}})
}

// RequestSweep asks the git sweep for a pass.
func (q *Requester) RequestSweep(ctx context.Context) error {
	if q.SweepFunc == nil {
		return ErrNoSweep
	}
	return q.SweepFunc(ctx)
}

// SetImage sets spec.image.repository and tag (kinds.ImageSpecParts: a digest rides with the
// tag), and stamps the sync annotations.
func (q *Requester) SetImage(ctx context.Context, cr *unstructured.Unstructured, image, by string) error {
	repo, tag := kinds.ImageSpecParts(image)
	return q.patch(ctx, cr, map[string]any{
		"metadata": map[string]any{"annotations": q.stamp(by)},
		"spec":     map[string]any{"image": map[string]any{"repository": repo, "tag": tag}},
	})
}

// AnnotationRestartedAt is the pod-template annotation a restart sets (kubectl rollout
// restart's and Argo CD's restart action's).
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// Restart merge-patches the workload's pod template with a new restartedAt annotation, as
// kubectl rollout restart does: the workload controller rolls its pods. The Kind controller
// leaves the field alone (its applies never name it; the plane's field manager owns it).
func (q *Requester) Restart(ctx context.Context, workload *unstructured.Unstructured, _ string) error {
	now := time.Now
	if q.Now != nil {
		now = q.Now
	}
	return q.patch(ctx, workload, map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{AnnotationRestartedAt: now().UTC().Format(time.RFC3339)}}}}})
}

// readBody decodes an optional JSON body into v (an empty body is the zero request).
func readBody(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}

// mutable returns the application if the caller may see it and is an admin.
func (s *Server) mutable(w http.ResponseWriter, r *http.Request) (*Observed, Identity, bool) {
	o, id, ok := s.app(w, r, false)
	if !ok {
		return nil, id, false
	}
	if !CanMutate(id) {
		writeError(w, codePermissionDenied, "permission denied: sync, rollback and reconcile are admin-only")
		return nil, id, false
	}
	if s.c.Actions == nil {
		writeError(w, codeUnimplemented, "imperatives are not wired in this process")
		return nil, id, false
	}
	return o, id, true
}

func initiator(id Identity) string {
	if id.Name != "" {
		return id.Name
	}
	return id.Subject
}

// sync triggers the CR's reconcile and, for a CR that came from git, a sweep.
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	var req SyncRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, codeInvalidArgument, "sync request body: "+err.Error())
		return
	}
	o, id, ok := s.mutable(w, inBody(r, req.AppNamespace))
	if !ok {
		return
	}
	app := Project(*o, s.store.opts)
	app.Operation = &Operation{Sync: &SyncOperation{Revision: app.Status.Sync.Revision, DryRun: req.DryRun, Prune: req.Prune},
		InitiatedBy: OperationInitiator{Username: initiator(id)}}
	if req.DryRun {
		writeJSON(w, r, app, nil)
		return
	}
	if o.Git != nil {
		if err := s.c.Actions.RequestSweep(r.Context()); err != nil && !errors.Is(err, ErrNoSweep) {
			writeError(w, codeUnavailable, "trigger git sweep: "+err.Error())
			return
		}
	}
	if err := s.c.Actions.Reconcile(r.Context(), o.CR, initiator(id)); err != nil {
		writeError(w, codeUnavailable, "trigger reconcile: "+err.Error())
		return
	}
	s.c.Log.Info("Sync requested", "application", o.CR.GetNamespace()+"/"+o.Name, "by", initiator(id), "fromGit", o.Git != nil)
	writeJSON(w, r, app, nil)
}

// reconcile asks the CR's Kind controller only.
func (s *Server) reconcile(w http.ResponseWriter, r *http.Request) {
	o, id, ok := s.mutable(w, r)
	if !ok {
		return
	}
	if err := s.c.Actions.Reconcile(r.Context(), o.CR, initiator(id)); err != nil {
		writeError(w, codeUnavailable, "trigger reconcile: "+err.Error())
		return
	}
	writeJSON(w, r, Project(*o, s.store.opts), nil)
}

// reconcileAll asks the git sweep for a pass over the whole universe (POST /v1/deploy/reconcile).
func (s *Server) reconcileAll(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	if !CanMutate(id) {
		writeError(w, codePermissionDenied, "permission denied: reconcile is admin-only")
		return
	}
	if s.c.Actions == nil {
		writeError(w, codeUnimplemented, "imperatives are not wired in this process")
		return
	}
	if err := s.c.Actions.RequestSweep(r.Context()); err != nil {
		if errors.Is(err, ErrNoSweep) {
			writeError(w, codeFailedPrecondition, "no git sweep runs for this universe (no --git-url or --github-repository)")
			return
		}
		writeError(w, codeUnavailable, "trigger git sweep: "+err.Error())
		return
	}
	s.c.Log.Info("Sweep requested", "by", initiator(id))
	writeJSON(w, r, map[string]any{}, nil)
}

// rollback returns the CR to the image of a history row: through a commit to the universe
// repository when the CR came from git (the repository stays the only interface), else by
// setting the CR's spec.image.
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	var req RollbackRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, codeInvalidArgument, "rollback request body: "+err.Error())
		return
	}
	o, id, ok := s.mutable(w, inBody(r, req.AppNamespace))
	if !ok {
		return
	}
	if o.CR.GetDeletionTimestamp() != nil {
		writeError(w, codeFailedPrecondition, "application is being deleted")
		return
	}
	var target *RevisionHistory
	for _, h := range History(o.CR, o.Git) {
		if h.ID == req.ID {
			target = &h
			break
		}
	}
	if target == nil {
		writeError(w, codeInvalidArgument, fmt.Sprintf("application %s has no history id %d", o.Name, req.ID))
		return
	}
	app := Project(*o, s.store.opts)
	app.Operation = &Operation{Sync: &SyncOperation{Revision: target.Revision, DryRun: req.DryRun, Prune: req.Prune},
		InitiatedBy: OperationInitiator{Username: initiator(id)}}
	if req.DryRun {
		writeJSON(w, r, app, nil)
		return
	}
	ctx := r.Context()
	if o.Git != nil {
		if s.c.Committer == nil {
			writeError(w, codeUnimplemented, fmt.Sprintf("rollback of a CR from git needs the git write path, which this process does not have (no git sweep runs here): "+
				"commit image %s to %s in %s instead", target.Revision, fileOr(o.Git.File), fileOr(o.Git.RepoURL)))
			return
		}
		msg := fmt.Sprintf("rollback %s %s/%s to %s\n\nRequested through the deploy plane by %s (history id %d).",
			o.CR.GetKind(), o.CR.GetNamespace(), o.CR.GetName(), target.Revision, initiator(id), req.ID)
		// The committer finds the file declaring the CR at the head (File is the sweep's hint)
		// and wakes the sweep after the commit.
		gvk := o.CR.GroupVersionKind()
		res, err := s.c.Committer.CommitImage(ctx, source.CRImage{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Namespace: o.CR.GetNamespace(), Name: o.CR.GetName(), Image: target.Revision, MoveRepository: true, File: o.Git.File, Message: msg})
		commit := res.Commit
		if commit == "" {
			commit = res.Parent // the repository already names the image
		}
		switch {
		case errors.Is(err, image.ErrCRNotFound), errors.Is(err, image.ErrCRAmbiguous), errors.Is(err, image.ErrRepositoryChange):
			writeError(w, codeFailedPrecondition, "commit rollback: "+err.Error())
			return
		case err != nil:
			writeError(w, codeUnavailable, "commit rollback: "+err.Error())
			return
		}
		app.Operation.Sync.Revision = commit
		s.c.Log.Info("Rollback committed", "application", o.CR.GetNamespace()+"/"+o.Name, "image", target.Revision, "commit", commit, "by", initiator(id))
		writeJSON(w, r, app, nil)
		return
	}
	if err := s.c.Actions.SetImage(ctx, o.CR, target.Revision, initiator(id)); err != nil {
		writeError(w, codeUnavailable, "roll back: "+err.Error())
		return
	}
	s.c.Log.Info("Rollback applied", "application", o.CR.GetNamespace()+"/"+o.Name, "image", target.Revision, "by", initiator(id))
	writeJSON(w, r, app, nil)
}

// inBody is r with appNamespace from the request body when the query has none (the
// dashboard sends a sync's and a rollback's appNamespace in the body).
func inBody(r *http.Request, appNamespace string) *http.Request {
	if appNamespace == "" || r.URL.Query().Get("appNamespace") != "" {
		return r
	}
	return withQuery(r, "appNamespace", appNamespace)
}

func fileOr(s string) string {
	if s == "" {
		return "the universe repository"
	}
	return s
}
