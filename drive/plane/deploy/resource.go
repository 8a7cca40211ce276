package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The routes about one object under an application: the object (resource), its Events,
// the desired objects (manifests), the actions (restart), and the update of the application
// the dashboard sends before a rollback.

// resourceRef is what a query names of one object of an application's tree.
type resourceRef struct {
	Group, Version, Kind, Namespace, Name, UID string
}

func (q resourceRef) matches(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	switch {
	case q.UID != "" && string(u.GetUID()) != q.UID,
		q.Name != "" && u.GetName() != q.Name,
		q.Kind != "" && gvk.Kind != q.Kind,
		q.Group != gvk.Group && q.Kind != "", // the core group is ""
		q.Version != "" && gvk.Version != q.Version,
		q.Namespace != "" && u.GetNamespace() != q.Namespace:
		return false
	}
	return true
}

// node finds the one object of o's tree (children, their ReplicaSets and Pods) that q names.
// A Secret is never in the tree, so never found.
func node(o *Observed, q resourceRef) *unstructured.Unstructured {
	for _, set := range [][]*unstructured.Unstructured{o.Children, o.Descendants} {
		for _, u := range set {
			if !IsSecret(u.GroupVersionKind()) && q.matches(u) {
				return u
			}
		}
	}
	return nil
}

// resourceQuery reads ApplicationResourceRequest's query parameters.
func resourceQuery(r *http.Request) resourceRef {
	q := r.URL.Query()
	return resourceRef{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"), Namespace: q.Get("namespace"),
		Name: q.Get("resourceName")}
}

func notInTree(q resourceRef) string {
	return fmt.Sprintf("%s %s/%s is not a resource of this application", strings.TrimPrefix(q.Group+"/"+q.Kind, "/"), q.Namespace, q.Name)
}

// resource answers GET applications/{name}/resource: one live object of the application's
// tree as a JSON string (managedFields dropped); never a Secret, never an object outside it.
func (s *Server) resource(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, true)
	if !ok {
		return
	}
	q := resourceQuery(r)
	if q.Name == "" || q.Kind == "" {
		writeError(w, codeInvalidArgument, "resourceName and kind are required")
		return
	}
	u := node(o, q)
	if u == nil {
		writeError(w, codeNotFound, notInTree(q))
		return
	}
	live, code, msg := s.whole(r, u)
	if live == nil {
		writeError(w, code, msg)
		return
	}
	unstructured.RemoveNestedField(live.Object, "metadata", "managedFields")
	writeJSON(w, r, ApplicationResourceResponse{Manifest: stateJSON(live)}, nil)
}

// whole returns the object of the tree u as a whole. The caches keep Pods trimmed to what
// the controllers read (reconcile.TrimPod: no volumes, env, probes or annotations), so a
// Pod is read from the apiserver, and answered only while it is still the same pod (its
// uid); every other kind is cached whole (less its status managedFields, which the route
// drops anyway). Without Live the cached pod is answered as it is.
func (s *Server) whole(r *http.Request, u *unstructured.Unstructured) (*unstructured.Unstructured, int, string) {
	gvk := u.GroupVersionKind()
	if s.c.Live == nil || gvk.Group != "" || gvk.Kind != "Pod" {
		return u.DeepCopy(), 0, ""
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err := s.c.Live.Get(r.Context(), client.ObjectKeyFromObject(u), live)
	switch {
	case apierrors.IsNotFound(err) || err == nil && live.GetUID() != u.GetUID():
		return nil, codeNotFound, fmt.Sprintf("pod %s/%s is gone", u.GetNamespace(), u.GetName())
	case err != nil:
		return nil, codeUnavailable, fmt.Sprintf("get pod %s/%s: %s", u.GetNamespace(), u.GetName(), err.Error())
	}
	return live, 0, ""
}

// events answers GET applications/{name}/events: the Events of the application's CR, or,
// with resourceUID or resourceName, of one object of its tree (read from the apiserver: the
// caches hold no Events).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, true)
	if !ok {
		return
	}
	if s.c.Live == nil {
		writeError(w, codeUnimplemented, "events are not wired in this process")
		return
	}
	q := r.URL.Query()
	target := o.CR
	if q.Get("resourceUID") != "" || q.Get("resourceName") != "" {
		ref := resourceRef{UID: q.Get("resourceUID"), Name: q.Get("resourceName"), Namespace: q.Get("resourceNamespace")}
		if target = node(o, ref); target == nil {
			writeError(w, codeNotFound, notInTree(ref))
			return
		}
	}
	list := &corev1.EventList{}
	err := s.c.Live.List(r.Context(), list, client.InNamespace(target.GetNamespace()),
		client.MatchingFields{"involvedObject.uid": string(target.GetUID())}, client.Limit(maxEvents))
	if err != nil {
		writeError(w, codeUnavailable, "list events: "+err.Error())
		return
	}
	list.Continue = ""
	if list.Items == nil {
		list.Items = []corev1.Event{}
	}
	writeJSON(w, r, list, nil)
}

// maxEvents bounds the events route's list.
const maxEvents = 500

// manifests answers GET applications/{name}/manifests: the objects the CR builds, as the
// builders make them (the desired state), Secrets left out.
func (s *Server) manifests(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, false)
	if !ok {
		return
	}
	if o.BuildErr != "" {
		writeError(w, codeFailedPrecondition, "build: "+o.BuildErr)
		return
	}
	app := Project(*o, s.store.opts)
	resp := ManifestResponse{Manifests: []string{}, Namespace: o.CR.GetNamespace(), Server: InClusterServer,
		Revision: app.Status.Sync.Revision, SourceType: app.Status.SourceType}
	for _, d := range o.Desired {
		if !IsSecret(d.GroupVersionKind()) {
			resp.Manifests = append(resp.Manifests, stateJSON(d))
		}
	}
	writeJSON(w, r, resp, nil)
}

// ActionRestart is the one resource action: a rolling restart of a Deployment or
// StatefulSet (Argo CD's built-in restart: a new kubectl.kubernetes.io/restartedAt on the
// pod template).
const ActionRestart = "restart"

func restartable(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet")
}

// resourceActions answers GET applications/{name}/resource/actions: restart for a Deployment
// or StatefulSet of the tree (disabled for a caller who may not run it), none otherwise.
func (s *Server) resourceActions(w http.ResponseWriter, r *http.Request) {
	o, id, ok := s.app(w, r, true)
	if !ok {
		return
	}
	q := resourceQuery(r)
	u := node(o, q)
	if u == nil {
		writeError(w, codeNotFound, notInTree(q))
		return
	}
	resp := ResourceActionsListResponse{}
	if restartable(u) {
		resp.Actions = []ResourceAction{{Name: ActionRestart, DisplayName: "Restart", IconClass: "fa fa-fw fa-redo", Disabled: !CanMutate(id)}}
	}
	writeJSON(w, r, resp, nil)
}

// runResourceAction answers POST applications/{name}/resource/actions (the body is the action
// name, the object in the query) and .../resource/actions/v2 (all in the body): an admin
// write through the plane's imperatives, as a sync is.
func (s *Server) runResourceAction(w http.ResponseWriter, r *http.Request) {
	var req ResourceActionRunRequest
	raw, err := readRaw(r)
	if err != nil {
		writeError(w, codeInvalidArgument, "resource action body: "+err.Error())
		return
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &req.Action); err != nil {
			writeError(w, codeInvalidArgument, "resource action body: "+err.Error())
			return
		}
		q := resourceQuery(r)
		req.Group, req.Version, req.Kind, req.Namespace, req.ResourceName = q.Group, q.Version, q.Kind, q.Namespace, q.Name
	} else if len(raw) > 0 {
		if err := json.Unmarshal(raw, &req); err != nil {
			writeError(w, codeInvalidArgument, "resource action body: "+err.Error())
			return
		}
	}
	o, id, ok := s.mutable(w, inBody(r, req.AppNamespace))
	if !ok {
		return
	}
	q := resourceRef{Group: req.Group, Version: req.Version, Kind: req.Kind, Namespace: req.Namespace, Name: req.ResourceName}
	if q.Name == "" || q.Kind == "" {
		writeError(w, codeInvalidArgument, "resourceName and kind are required")
		return
	}
	// the tree: the Deployment is a child, so the cache read with descendants is not needed
	u := node(o, q)
	if u == nil {
		writeError(w, codeNotFound, notInTree(q))
		return
	}
	if req.Action != ActionRestart || !restartable(u) {
		writeError(w, codeInvalidArgument, fmt.Sprintf("action %q is not available for %s %s (the one action is %q, on a Deployment or StatefulSet)",
			req.Action, u.GetKind(), u.GetName(), ActionRestart))
		return
	}
	if err := s.c.Actions.Restart(r.Context(), u, initiator(id)); err != nil {
		writeError(w, codeUnavailable, "restart: "+err.Error())
		return
	}
	s.c.Log.Info("Restart requested", "application", o.CR.GetNamespace()+"/"+o.Name, "kind", u.GetKind(), "name", u.GetName(), "by", initiator(id))
	writeJSON(w, r, map[string]any{}, nil)
}

func withQuery(r *http.Request, k, v string) *http.Request {
	r2 := r.Clone(r.Context())
	q := r2.URL.Query()
	q.Set(k, v)
	r2.URL.RawQuery = q.Encode()
	return r2
}

// errNotAutomatable is the answer to an update that switches an automation on.
var errNotAutomatable = errors.New("this plane has no per-application auto-sync switch: the git sweep applies every commit and the Kind controller every change of the CR, always; a rollback changes the source and needs no switch")

// updateApplication answers PUT applications/{name}, which an Argo CD dashboard sends before a
// rollback to switch spec.syncPolicy.automated off. The plane advertises no automation switch
// (see Project), so the only update it accepts is one that leaves the spec as served
// (automated absent, null or enabled: false): it writes nothing and answers the application.
// Any other change is refused naming the field: the application is the CR, changed in its
// file or with kubectl.
func (s *Server) updateApplication(w http.ResponseWriter, r *http.Request) {
	var body Application
	if err := readBody(r, &body); err != nil {
		writeError(w, codeInvalidArgument, "application body: "+err.Error())
		return
	}
	o, _, ok := s.mutable(w, inBody(r, body.Namespace))
	if !ok {
		return
	}
	if body.Name != "" && body.Name != o.Name {
		writeError(w, codeInvalidArgument, fmt.Sprintf("metadata.name %q is not the application %q of the path", body.Name, o.Name))
		return
	}
	app := Project(*o, s.store.opts)
	if err := sameSpec(app.Spec, body.Spec); err != nil {
		writeError(w, codeInvalidArgument, err.Error()+fmt.Sprintf(": the application is %s %s/%s; change the CR (%s)",
			o.CR.GetKind(), o.CR.GetNamespace(), o.CR.GetName(), where(o)))
		return
	}
	if a := policyAutomated(body.Spec.SyncPolicy); a != nil && (a.Enabled == nil || *a.Enabled) {
		writeError(w, codeFailedPrecondition, errNotAutomatable.Error())
		return
	}
	writeJSON(w, r, app, nil)
}

func policyAutomated(p *SyncPolicy) *SyncPolicyAutomated {
	if p == nil {
		return nil
	}
	return p.Automated
}

func where(o *Observed) string {
	if o.Git != nil {
		return "in git: " + fileOr(o.Git.File)
	}
	return "kubectl edit " + strings.ToLower(o.CR.GetKind()) + " -n " + o.CR.GetNamespace() + " " + o.CR.GetName()
}

// sameSpec reports the first field of want (an update's spec) that differs from have (the
// served one), sync policy apart.
func sameSpec(have, want ApplicationSpec) error {
	switch {
	case !reflect.DeepEqual(have.Source, want.Source):
		return errors.New("spec.source cannot change through the plane")
	case have.Destination != want.Destination:
		return errors.New("spec.destination cannot change through the plane")
	case have.Project != want.Project:
		return errors.New("spec.project cannot change through the plane")
	}
	if p := want.SyncPolicy; p != nil && len(p.SyncOptions) > 0 {
		return errors.New("spec.syncPolicy.syncOptions cannot be set through the plane")
	}
	return nil
}

// readRaw reads a request body, bounded.
func readRaw(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, 1<<20))
	return buf.Bytes(), err
}
