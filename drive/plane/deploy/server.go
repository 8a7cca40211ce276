package deploy

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/fleet"
	"github.com/openuniverse/operator/source"
)

// Prefix is where the plane is served. Under it, the Argo CD API sits at its usual paths
// (api/v1/..., api/version), so a dashboard built with base href /v1/deploy speaks to it
// unchanged; the same routes answer without the api/v1 segment too (/v1/deploy/applications).
const Prefix = "/v1/deploy"

// Differ dry-runs what a CR builds against the cluster: the builders and dry-run of
// `operator diff`, wired in cmd/operator.
type Differ interface {
	Diff(ctx context.Context, cr *unstructured.Unstructured) ([]ChildDiff, error)
}

// ChildDiff is how one child the CR builds compares with the cluster.
type ChildDiff struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Live is the object in the cluster, Target the dry-run result of applying what the CR
	// builds; nil when absent. Both are masked by the Differ.
	Live, Target *unstructured.Unstructured
	Modified     bool
	// Diff is the unified diff `operator diff` prints.
	Diff string
	Err  error
}

// Actions are the imperatives, wired in cmd/operator (Requester is the default).
type Actions interface {
	// Reconcile asks the CR's Kind controller to reconcile it now.
	Reconcile(ctx context.Context, cr *unstructured.Unstructured, by string) error
	// RequestSweep asks the git sweep for a pass now.
	RequestSweep(ctx context.Context) error
	// SetImage sets a CR's spec.image (the rollback of a CR that did not come from git).
	SetImage(ctx context.Context, cr *unstructured.Unstructured, image, by string) error
	// Restart restarts a workload of an application (the restart resource action).
	Restart(ctx context.Context, workload *unstructured.Unstructured, by string) error
}

// RevisionSource describes a commit of the universe repository.
type RevisionSource interface {
	Metadata(ctx context.Context, revision string) (*RevisionMetadata, error)
}

// Config is everything the plane needs; cmd/operator fills it.
type Config struct {
	Options Options
	Auth    *Authenticator
	// Reader reads from the manager's cache; Informers feed the streams.
	Reader    client.Reader
	Informers crcache.Informers
	Scheme    *runtime.Scheme
	Registry  kinds.Registry
	APIGroup  string
	// Served reports whether the cluster serves a GVK (the RESTMapper).
	Served func(schema.GroupVersionKind) bool
	// Namespace is the operator's namespace.
	Namespace string
	// Tenancy is the one tenancy rule: an application's org is its namespace's.
	Tenancy kinds.Tenancy

	Git                         GitState
	GitManager, RepoURL, Branch string

	Differ  Differ
	Actions Actions
	// Committer commits the rollback of a CR from git (the repository stays the only
	// interface) and wakes the sweep; nil: the rollback answers 501.
	Committer source.CRCommitter
	Revisions RevisionSource

	// Live reads what the caches do not hold (Events), uncached; nil: events answers 501.
	Live client.Reader
	// Logs opens pod logs (the apiserver's pods/log); nil: logs answers 501.
	Logs PodLogSource
	// Sweep is the git sweep's last report (the gitops route); nil: no sweep to report.
	Sweep SweepReports
	// Fleet is the registry of the clusters the operator's git sweep reaches (--fleet): the
	// clusters route lists them beside in-cluster, each caller its org's; nil: in-cluster only.
	Fleet *fleet.Registry

	Version       VersionMessage
	ServerVersion string
	Metrics       prometheus.Registerer
	Log           logr.Logger
	Now           func() time.Time
}

// Server is the /v1/deploy plane.
type Server struct {
	c       Config
	store   *store
	hub     *hub
	login   *login
	limits  *limits
	origin  string
	metrics *planeMetrics
	mux     *http.ServeMux
}

// New builds the plane. It refuses a config without an authenticator: the plane never runs open.
func New(c Config) (*Server, error) {
	if c.Auth == nil {
		return nil, errors.New("deploy plane: no OIDC issuer configured; refusing to serve an open plane")
	}
	if c.Reader == nil || c.Scheme == nil || c.Served == nil {
		return nil, errors.New("deploy plane: a cache reader, scheme and served-kinds check are required")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Options.Keepalive <= 0 || c.Options.Keepalive > 15*time.Second {
		c.Options.Keepalive = 15 * time.Second
	}
	d := DefaultOptions()
	if c.Options.StreamBuffer <= 0 {
		c.Options.StreamBuffer = d.StreamBuffer
	}
	if c.Options.MaxStreamsPerIdentity <= 0 {
		c.Options.MaxStreamsPerIdentity = d.MaxStreamsPerIdentity
	}
	if c.Options.MaxStreams <= 0 {
		c.Options.MaxStreams = d.MaxStreams
	}
	if c.Options.DiffRate < 0 || c.Options.DiffBurst < 0 {
		return nil, errors.New("deploy plane: --deploy-plane-diff-rate and --deploy-plane-diff-burst must not be negative")
	}
	for t, def := range map[*time.Duration]time.Duration{&c.Options.ReadTimeout: d.ReadTimeout, &c.Options.WriteTimeout: d.WriteTimeout,
		&c.Options.IdleTimeout: d.IdleTimeout} {
		if *t <= 0 { // never a server without timeouts
			*t = def
		}
	}
	st := newStore(c.Reader, c.Scheme, c.Registry, c.APIGroup, c.Served)
	st.git, st.gitManager, st.repoURL, st.branch = c.Git, c.GitManager, c.RepoURL, c.Branch
	st.opts = ProjectOptions{ControllerNamespace: c.Namespace}
	st.tenancy = c.Tenancy
	s := &Server{c: c, store: st, mux: http.NewServeMux(), limits: newLimits(c.Options, c.Now), origin: originOf(c.Options.PublicURL)}
	s.hub = newHub(st, c.Log.WithName("stream"))
	s.metrics = newPlaneMetrics(c.Metrics)
	var err error
	if s.login, err = newLogin(c.Options, c.Auth); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	api := map[string]http.HandlerFunc{
		"GET /applications":                             s.listApplications,
		"GET /applications/{name}":                      s.getApplication,
		"GET /applications/{name}/resource-tree":        s.resourceTree,
		"GET /applications/{name}/managed-resources":    s.managedResources,
		"GET /applications/{name}/revisions/{rev...}":   s.revisionMetadata, // {rev}/metadata; an image revision holds slashes
		"GET /applications/{name}/syncwindows":          s.syncWindows,
		"PUT /applications/{name}":                      s.updateApplication,
		"GET /applications/{name}/resource":             s.resource,
		"GET /applications/{name}/events":               s.events,
		"GET /applications/{name}/logs":                 s.logs,
		"GET /applications/{name}/pods/{pod}/logs":      s.logs,
		"GET /applications/{name}/manifests":            s.manifests,
		"GET /applications/{name}/resource/actions":     s.resourceActions,
		"POST /applications/{name}/resource/actions":    s.runResourceAction,
		"POST /applications/{name}/resource/actions/v2": s.runResourceAction,
		"GET /gitops":                                     s.gitops,
		"POST /applications/{name}/sync":                  s.sync,
		"POST /applications/{name}/rollback":              s.rollback,
		"POST /applications/{name}/reconcile":             s.reconcile,
		"GET /stream/applications":                        s.streamApplications,
		"GET /stream/applications/{name}/resource-tree":   s.streamTree,
		"GET /clusters":                                   s.clusters,
		"GET /projects":                                   s.projects,
		"GET /projects/{name}":                            s.project,
		"GET /settings":                                   s.settings,
		"GET /account/can-i/{resource}/{action}/{sub...}": s.canI,
		"GET /session/userinfo":                           s.userInfo,
		"POST /reconcile":                                 s.reconcileAll,
	}
	for pattern, h := range api {
		method, path, _ := strings.Cut(pattern, " ")
		s.mux.Handle(method+" "+Prefix+"/api/v1"+path, s.guard(h))
		s.mux.Handle(method+" "+Prefix+path, s.guard(h))
	}
	s.mux.Handle("GET "+Prefix+"/api/version", s.guard(s.version))
	s.mux.Handle("GET "+Prefix+"/version", s.guard(s.version))
	s.mux.Handle("GET "+Prefix+"/auth/login", s.instrument(http.HandlerFunc(s.login.start)))
	s.mux.Handle("GET "+Prefix+"/auth/callback", s.instrument(http.HandlerFunc(s.login.callback)))
	s.mux.Handle("GET "+Prefix+"/auth/logout", s.instrument(http.HandlerFunc(s.login.logout)))
	s.mux.Handle("POST "+Prefix+"/auth/logout", s.instrument(http.HandlerFunc(s.login.logout)))
	s.mux.Handle("GET "+Prefix+"/ui/", s.instrument(uiHandler()))
	s.mux.Handle("GET "+Prefix+"/{$}", http.RedirectHandler(Prefix+"/ui/", http.StatusFound))
}

// Handler serves every route; anything else is answered in the gateway's error shape: 404
// (NotFound) for a path no route serves, 405 (Unimplemented) for a method another route of
// that path serves. Never the mux's plain text.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := s.mux.Handler(r); pattern != "" {
			s.mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := s.mux.Handler(probe); p != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 && !slices.Contains(allow, r.Method) {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeErrorStatus(w, http.StatusMethodNotAllowed, codeUnimplemented, http.StatusText(http.StatusMethodNotAllowed))
			return
		}
		if len(allow) > 0 { // a redirect of the mux (a cleaned path)
			s.mux.ServeHTTP(w, r)
			return
		}
		writeError(w, codeNotFound, http.StatusText(http.StatusNotFound))
	})
}

// Start runs the stream hub and listens on Options.BindAddress until ctx ends. It is a
// manager Runnable that runs on every replica: reads come from the local caches.
func (s *Server) Start(ctx context.Context) error {
	go s.hub.run(ctx, s.c.Informers)
	if !s.c.Options.Enabled() {
		<-ctx.Done()
		return nil
	}
	ln, err := net.Listen("tcp", s.c.Options.BindAddress)
	if err != nil {
		return fmt.Errorf("deploy plane: listen %s: %w", s.c.Options.BindAddress, err)
	}
	srv := s.HTTPServer()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.c.Log.Info("Deploy plane listening", "address", ln.Addr().String(), "prefix", Prefix)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// HTTPServer is the server Start listens with: read, write and idle timeouts (the streams
// lift the read deadline and renew the write deadline per frame through
// http.ResponseController), bounded headers.
func (s *Server) HTTPServer() *http.Server {
	o := s.c.Options
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: min(10*time.Second, o.ReadTimeout), ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout, MaxHeaderBytes: 1 << 20}
}

// NeedLeaderElection is false: every replica serves reads from its own caches.
func (s *Server) NeedLeaderElection() bool { return false }

// grpc codes of the gateway's error body.
const (
	codeInvalidArgument    = 3
	codeNotFound           = 5
	codePermissionDenied   = 7
	codeResourceExhausted  = 8
	codeFailedPrecondition = 9
	codeInternal           = 13
	codeUnimplemented      = 12
	codeUnavailable        = 14
	codeUnauthenticated    = 16
)

var httpOf = map[int]int{
	codeInvalidArgument: http.StatusBadRequest, codeNotFound: http.StatusNotFound, codePermissionDenied: http.StatusForbidden,
	codeResourceExhausted:  http.StatusTooManyRequests,
	codeFailedPrecondition: http.StatusBadRequest, codeInternal: http.StatusInternalServerError, codeUnimplemented: http.StatusNotImplemented,
	codeUnavailable: http.StatusServiceUnavailable, codeUnauthenticated: http.StatusUnauthorized,
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeErrorStatus(w, httpOf[code], code, msg)
}

func writeErrorStatus(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Encoding")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: msg, Code: code, Message: msg, Details: []any{}})
}

var errAmbiguous = errors.New("several applications have this name: pass appNamespace")

type identityKey struct{}

func identityOf(r *http.Request) Identity {
	id, _ := r.Context().Value(identityKey{}).(Identity)
	return id
}

// guard authenticates every API request: a verified token or 401, nothing else; a
// state-changing request of a cookie session must pass CookieRequestAllowed, or 403.
func (s *Server) guard(h http.HandlerFunc) http.Handler {
	return s.instrument(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, fromCookie := tokenOf(r)
		if raw == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="deploy"`)
			writeError(w, codeUnauthenticated, errUnauthenticated.Error())
			return
		}
		id, err := s.c.Auth.Verify(r.Context(), raw)
		if err != nil {
			s.c.Log.V(1).Info("Rejected token", "reason", err.Error())
			w.Header().Set("WWW-Authenticate", `Bearer realm="deploy", error="invalid_token"`)
			writeError(w, codeUnauthenticated, errUnauthenticated.Error())
			return
		}
		if fromCookie {
			if err := CookieRequestAllowed(r.Method, r.Header, r.Host, s.origin); err != nil {
				s.c.Log.Info("Refused a cross-site request of a cookie session", "path", r.URL.Path, "origin", r.Header.Get("Origin"),
					"secFetchSite", r.Header.Get("Sec-Fetch-Site"), "contentType", r.Header.Get("Content-Type"))
				writeError(w, codePermissionDenied, err.Error())
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	}))
}

// writeJSON writes v (through the fields filter), gzipped when the client accepts it.
func writeJSON(w http.ResponseWriter, r *http.Request, v any, f *fieldFilter) {
	out, err := f.apply(v)
	if err != nil {
		writeError(w, codeInternal, "encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("Vary", "Accept-Encoding")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && !isStream(r) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		_ = json.NewEncoder(gz).Encode(out)
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func isStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream") || strings.HasPrefix(r.URL.Path, Prefix+"/api/v1/stream/") ||
		strings.HasPrefix(r.URL.Path, Prefix+"/stream/")
}

// appQuery is Argo CD's ApplicationQuery as far as the plane honours it.
type appQuery struct {
	name, namespace, selector, resourceVersion string
	projects                                   []string
}

func readAppQuery(r *http.Request) appQuery {
	q := r.URL.Query()
	aq := appQuery{name: q.Get("name"), namespace: q.Get("appNamespace"), selector: q.Get("selector"), resourceVersion: q.Get("resourceVersion")}
	for _, k := range []string{"projects", "project"} {
		for _, v := range q[k] {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					aq.projects = append(aq.projects, p)
				}
			}
		}
	}
	return aq
}

// visible lists the applications id may see that match q, projected.
func (s *Server) visible(ctx context.Context, id Identity, q appQuery) ([]Application, error) {
	evs, err := s.visibleEvents(ctx, id, q)
	if err != nil {
		return nil, err
	}
	out := make([]Application, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.App)
	}
	return out, nil
}

// visibleEvents is visible as ADDED events, each with its application's org.
func (s *Server) visibleEvents(ctx context.Context, id Identity, q appQuery) ([]hubEvent, error) {
	sel, err := parseSelector(q.selector)
	if err != nil {
		return nil, err
	}
	all, err := s.store.observe(ctx, q.namespace, false)
	if err != nil {
		return nil, err
	}
	out := []hubEvent{}
	for _, o := range all {
		if !CanSeeApp(id, o.Org) {
			continue
		}
		app := Project(o, s.store.opts)
		if matchApp(app, q, sel) {
			out = append(out, hubEvent{Type: EventAdded, App: app, Org: o.Org})
		}
	}
	return out, nil
}

func matchApp(app Application, q appQuery, sel labelsSelector) bool {
	if q.name != "" && app.Name != q.name {
		return false
	}
	if len(q.projects) > 0 && !slices.Contains(q.projects, app.Spec.Project) {
		return false
	}
	return sel == nil || sel.Matches(labelSet(app.Labels))
}

func (s *Server) listApplications(w http.ResponseWriter, r *http.Request) {
	apps, err := s.visible(r.Context(), identityOf(r), readAppQuery(r))
	if err != nil {
		writeReadError(w, err)
		return
	}
	list := ApplicationList{Items: apps}
	list.ResourceVersion = listVersion(apps)
	list.Kind, list.APIVersion = "ApplicationList", "argoproj.io/v1alpha1"
	writeJSON(w, r, list, parseFields(r.URL.Query().Get("fields")))
}

func listVersion(apps []Application) string {
	best := int64(0)
	for _, a := range apps {
		if n, err := strconv.ParseInt(a.ResourceVersion, 10, 64); err == nil && n > best {
			best = n
		}
	}
	return strconv.FormatInt(best, 10)
}

func writeReadError(w http.ResponseWriter, err error) {
	var se *selectorError
	switch {
	case errors.As(err, &se), errors.Is(err, errAmbiguous):
		writeError(w, codeInvalidArgument, err.Error())
	default:
		writeError(w, codeUnavailable, "read cache: "+err.Error())
	}
}

// app returns the application named in the path that id may see. Visibility comes first: an
// application the caller cannot see is not counted at all, so a member asking for one of
// another org, or one that does not exist, gets the same 403 and nothing else (not the
// "several applications" error a name shared with another org would give): existence is not
// disclosed outside the caller's org.
func (s *Server) app(w http.ResponseWriter, r *http.Request, descendants bool) (*Observed, Identity, bool) {
	id := identityOf(r)
	o, err := s.store.find(r.Context(), r.URL.Query().Get("appNamespace"), r.PathValue("name"), descendants,
		func(o *Observed) bool { return CanSeeApp(id, o.Org) })
	if err != nil {
		writeReadError(w, err)
		return nil, id, false
	}
	if o == nil {
		if id.Admin {
			writeError(w, codeNotFound, fmt.Sprintf("applications.argoproj.io %q not found", r.PathValue("name")))
		} else {
			writeError(w, codePermissionDenied, "permission denied")
		}
		return nil, id, false
	}
	return o, id, true
}

func (s *Server) getApplication(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, false)
	if !ok {
		return
	}
	writeJSON(w, r, Project(*o, s.store.opts), nil)
}

func (s *Server) resourceTree(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, true)
	if !ok {
		return
	}
	writeJSON(w, r, Tree(*o), nil)
}

func (s *Server) managedResources(w http.ResponseWriter, r *http.Request) {
	o, id, ok := s.app(w, r, false)
	if !ok {
		return
	}
	if s.c.Differ == nil {
		writeError(w, codeUnimplemented, "live diff is not wired in this process")
		return
	}
	if wait, ok := s.limits.allowDiff(limitKey(id)); !ok {
		s.metrics.limited.WithLabelValues("diff").Inc()
		w.Header().Set("Retry-After", retryAfter(wait))
		writeError(w, codeResourceExhausted, "too many live diffs: each is a server-side dry-run of every child; retry after "+retryAfter(wait)+"s")
		return
	}
	diffs, err := s.c.Differ.Diff(r.Context(), o.CR)
	if err != nil {
		writeError(w, codeUnavailable, "diff: "+err.Error())
		return
	}
	resp := ManagedResourcesResponse{Items: []ResourceDiff{}}
	q := r.URL.Query()
	cached := map[string]*unstructured.Unstructured{}
	for _, c := range o.Children {
		cached[keyOf(c)] = c
	}
	for _, d := range diffs {
		if IsSecret(d.GVK) {
			continue // never a Secret: no manifest, no diff
		}
		if (q.Get("kind") != "" && q.Get("kind") != d.GVK.Kind) || (q.Get("name") != "" && q.Get("name") != d.Name) ||
			(q.Get("group") != "" && q.Get("group") != d.GVK.Group) || (q.Get("namespace") != "" && q.Get("namespace") != d.Namespace) {
			continue
		}
		live, target := d.Live, d.Target
		if live == nil && target == nil && !d.Modified && d.Err == nil {
			// in sync: the dry-run returns nothing, and the live object is the target
			if c := cached[refKey(d.GVK.Group, d.GVK.Kind, d.Namespace, d.Name)]; c != nil {
				live = c.DeepCopy()
				unstructured.RemoveNestedField(live.Object, "metadata", "managedFields")
				target = live
			}
		}
		if c := cached[refKey(d.GVK.Group, d.GVK.Kind, d.Namespace, d.Name)]; c != nil && live != nil && d.Modified {
			// the dry-run drops managedFields; the cached object's say which manager wrote each
			// drifted field (Argo CD's liveState carries them too), which the page attributes
			live = live.DeepCopy()
			live.SetManagedFields(c.GetManagedFields())
		}
		rd := ResourceDiff{Group: d.GVK.Group, Kind: d.GVK.Kind, Namespace: d.Namespace, Name: d.Name,
			LiveState: stateJSON(live), TargetState: stateJSON(target), Modified: d.Modified, Diff: d.Diff}
		rd.NormalizedLiveState, rd.PredictedLiveState = rd.LiveState, rd.TargetState
		if live != nil {
			rd.ResourceVersion = live.GetResourceVersion()
		}
		if d.Err != nil {
			rd.Diff = "error: " + d.Err.Error()
		}
		resp.Items = append(resp.Items, rd)
	}
	writeJSON(w, r, resp, parseFields(q.Get("fields")))
}

func (s *Server) revisionMetadata(w http.ResponseWriter, r *http.Request) {
	o, _, ok := s.app(w, r, false)
	if !ok {
		return
	}
	rev, ok := strings.CutSuffix(r.PathValue("rev"), "/metadata")
	if !ok || rev == "" {
		writeError(w, codeNotFound, "not found: want revisions/{revision}/metadata")
		return
	}
	for _, h := range History(o.CR, o.Git) {
		if h.Revision == rev {
			md := &RevisionMetadata{Message: "image " + rev, Tags: []string{imageTag(rev)}}
			if !h.DeployedAt.IsZero() {
				t := h.DeployedAt
				md.Date = &t
			}
			writeJSON(w, r, md, nil)
			return
		}
	}
	// A commit is described only when the plane observed it for this application (which the
	// caller can see): never any commit of the repository someone names.
	if s.c.Revisions == nil || o.Git == nil || !s.store.revs.has(string(o.CR.GetUID()), rev) {
		writeError(w, codeNotFound, fmt.Sprintf("revision %q is not in this application's history", rev))
		return
	}
	md, err := s.c.Revisions.Metadata(r.Context(), rev)
	if err != nil {
		s.c.Log.V(1).Info("Describe revision", "revision", rev, "error", err.Error())
		writeError(w, codeNotFound, fmt.Sprintf("revision %q is not in this application's history", rev))
		return
	}
	writeJSON(w, r, md, nil)
}

func (s *Server) syncWindows(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.app(w, r, false); !ok {
		return
	}
	writeJSON(w, r, map[string]any{"activeWindows": []any{}, "assignedWindows": []any{}, "canSync": true}, nil)
}

func (s *Server) clusters(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	apps, err := s.visible(r.Context(), id, appQuery{})
	if err != nil {
		writeReadError(w, err)
		return
	}
	now := s.c.Now()
	state := ConnectionState{Status: "Successful", Message: "", AttemptedAt: timePtr(now)}
	c := Cluster{Server: InClusterServer, Name: "in-cluster", ServerVersion: s.c.ServerVersion, ConnectionState: state,
		Info: ClusterInfo{ConnectionState: state, ServerVersion: s.c.ServerVersion, ApplicationsCount: int64(len(apps))}}
	items := []Cluster{c}
	registered, err := s.registered(r.Context(), id)
	if err != nil {
		writeReadError(w, err)
		return
	}
	writeJSON(w, r, ClusterList{Items: append(items, registered...)}, nil)
}

func (s *Server) projectList(ctx context.Context, id Identity) ([]AppProject, error) {
	all, err := s.store.observe(ctx, "", false)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	if id.Admin {
		names[DefaultProject] = true
	} else if id.Org != "" {
		names[id.Org] = true
	}
	for _, o := range all {
		if CanSeeApp(id, o.Org) {
			names[ProjectOf(o.Org)] = true
		}
	}
	out := []AppProject{}
	for _, n := range sortedKeys(names) {
		p := AppProject{Spec: AppProjectSpec{SourceRepos: []string{"*"}, Destinations: []ApplicationDestination{{Server: InClusterServer, Namespace: "*"}},
			Description: "applications in the namespaces of org " + n}}
		if n == DefaultProject {
			p.Spec.Description = "applications in namespaces of no org (" + kinds.OrgLabel + " unset, or not set by a trusted manager)"
		}
		p.Name, p.Namespace = n, s.c.Namespace
		p.Kind, p.APIVersion = "AppProject", "argoproj.io/v1alpha1"
		out = append(out, p)
	}
	return out, nil
}

func (s *Server) projects(w http.ResponseWriter, r *http.Request) {
	ps, err := s.projectList(r.Context(), identityOf(r))
	if err != nil {
		writeReadError(w, err)
		return
	}
	writeJSON(w, r, AppProjectList{Items: ps}, nil)
}

func (s *Server) project(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	ps, err := s.projectList(r.Context(), id)
	if err != nil {
		writeReadError(w, err)
		return
	}
	for _, p := range ps {
		if p.Name == r.PathValue("name") {
			writeJSON(w, r, p, nil)
			return
		}
	}
	if id.Admin {
		writeError(w, codeNotFound, fmt.Sprintf("appprojects.argoproj.io %q not found", r.PathValue("name")))
		return
	}
	writeError(w, codePermissionDenied, "permission denied")
}

func (s *Server) settings(w http.ResponseWriter, r *http.Request) {
	st := Settings{URL: s.c.Options.PublicURL, AppLabelKey: "app.kubernetes.io/instance", ControllerNamespace: s.c.Namespace,
		UserLoginsDisabled: true, AppsInAnyNamespaceEnabled: true, ResourceOverrides: map[string]any{}}
	if s.login.enabled() {
		st.OIDCConfig = &OIDCConfig{Name: "SSO", Issuer: s.c.Auth.Options().Issuer, ClientID: s.c.Options.ClientID, Scopes: s.c.Options.Scopes}
	}
	writeJSON(w, r, st, nil)
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, s.c.Version, nil)
}

func (s *Server) canI(w http.ResponseWriter, r *http.Request) {
	allowed, ok := CanI(identityOf(r), r.PathValue("resource"), r.PathValue("action"), r.PathValue("sub"))
	if !ok {
		writeError(w, codeInvalidArgument, fmt.Sprintf("unknown resource %q or action %q", r.PathValue("resource"), r.PathValue("action")))
		return
	}
	v := "no"
	if allowed {
		v = "yes"
	}
	writeJSON(w, r, CanIResponse{Value: v}, nil)
}

func (s *Server) userInfo(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	groups := []string{}
	if id.Org != "" {
		groups = append(groups, id.Org)
	}
	writeJSON(w, r, map[string]any{"loggedIn": true, "username": id.Name, "iss": s.c.Auth.Options().Issuer, "groups": groups}, nil)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
