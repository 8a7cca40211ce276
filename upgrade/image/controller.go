package image

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/template"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/condition"
	v1 "github.com/openuniverse/operator/kinds/v1"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/alert"
)

// PushBranchPrefix is where every pushBranch lives: an ImageUpdate proposes on a branch of
// its own, never on another branch of the repository (release/*, another tenant's).
const PushBranchPrefix = "imageupdate/"

// WriterFor returns the writer of an ImageUpdate's writebackRepo with the credentials the
// shell found (nil: none in the CR; the factory may fall back to the operator's own token
// for the operator's own repository). cmd/operator wires it to source/gitclone and
// source/github.
type WriterFor func(repo string, creds *GitCredentials) (source.Writer, error)

// GitCredentials are read from an ImageUpdate's credentialsSecret: key token (the password
// or API token) and, optionally, username; identity and known_hosts for ssh URLs.
type GitCredentials struct {
	Username   string
	Token      source.Token
	SSHKey     []byte
	KnownHosts []byte
}

// Reconciler is the ImageUpdate controller: read the CR and its Secrets, list the
// registry's tags, read the file from git, choose a tag (Select), commit it (Rewrite through
// the source write path, whose writer wakes the git sweep), and write status once.
type Reconciler struct {
	Client client.Client // the CRs (cached)
	Reader client.Reader // Secrets and target objects, read directly (never cached)
	// Registry lists tags.
	Registry *Registry
	// Writers opens the write path of a repository; the operator's writers wake the git
	// sweep after a push (cmd/operator), so this controller never asks it.
	Writers  WriterFor
	Recorder events.EventRecorder
	// Alerts, when set, receives an alert for each tag bump pushed (ImageUpdateCommitted).
	Alerts alert.Hook
	// Universe is the repository the operator follows (its token writes there); nil when the
	// sweep is off. A file of it is rewritten only when the finder sees it declaring an object
	// of the ImageUpdate's namespace.
	Universe *Universe
	// Tenancy admits an ImageUpdate by its Namespace (read with its managedFields); a refusal
	// is the TenancyError's reason, Stalled.
	Tenancy kinds.Tenancy
	Now     func() time.Time
	// Jitter returns a uniform draw in [0, 1); rand.Float64 when nil.
	Jitter func() float64
}

// Setup registers the controller with mgr.
func (r *Reconciler) Setup(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Jitter == nil {
		r.Jitter = rand.Float64 // jitter needs no secret randomness
	}
	if r.Registry == nil {
		r.Registry = &Registry{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("imageupdate").
		For(&v1.ImageUpdate{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// Reconcile runs one ImageUpdate.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cr := &v1.ImageUpdate{}
	if err := r.Client.Get(ctx, req.NamespacedName, cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cr.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	out, retryAfter := r.run(ctx, cr)
	next := StatusOf(cr.Status, cr.Generation, out, r.Now())
	if err := r.writeStatus(ctx, cr, next); err != nil {
		return ctrl.Result{}, err
	}
	if out.Pushed != nil {
		r.event(cr, corev1.EventTypeNormal, ReasonPushed, out.Message)
		if r.Alerts != nil {
			r.Alerts.Alert(CommittedAlert(cr, out))
		}
	} else if Class(out.Reason) != condition.Ready && conditionReason(cr.Status, condition.TypeReady) != out.Reason {
		r.event(cr, corev1.EventTypeWarning, out.Reason, out.Message)
	}
	after := Requeue(cr.Spec.IntervalSeconds, out, retryAfter, r.Jitter())
	log.V(1).Info("ImageUpdate run", "reason", out.Reason, "class", Class(out.Reason), "current", out.Current, "latest", out.Latest, "requeueAfter", after.String())
	return ctrl.Result{RequeueAfter: after}, nil
}

// run does one pass and says what happened. It never returns an error: every failure is an
// outcome with a reason.
//
//nolint:funlen,gocyclo // the ImageUpdate phases in order, each ending in its outcome
func (r *Reconciler) run(ctx context.Context, cr *v1.ImageUpdate) (Outcome, time.Duration) {
	spec := cr.Spec
	fail := func(reason, format string, args ...any) (Outcome, time.Duration) {
		return Outcome{Reason: reason, Message: fmt.Sprintf(format, args...)}, 0
	}
	// Tenancy first: nothing of a refused CR is read, listed or written.
	ns := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: cr.Namespace}, ns); err != nil {
		return fail(ReasonNamespaceUnreadable, "read Namespace %s: %v", cr.Namespace, apierrors.ReasonForError(err))
	}
	if _, err := r.Tenancy.Admit(cr, ns); err != nil {
		var te *kinds.TenancyError
		if errors.As(err, &te) {
			return fail(te.Reason, "%s", te.Message)
		}
		return fail(kinds.ReasonInvalidOrg, "%v", err)
	}
	policy, err := ParsePolicy(spec.Policy)
	if err != nil {
		return fail(ReasonInvalidSpec, "%v", err)
	}
	path := source.CleanPath(spec.WritebackPath)
	if path == "" || spec.WritebackRepo == "" || spec.ImageRepository == "" {
		return fail(ReasonInvalidSpec, "imageRepository, writebackRepo and writebackPath are required")
	}
	branch := spec.WritebackRef
	if branch == "" {
		branch = "main"
	}
	if err := source.ValidBranch(branch); err != nil {
		return fail(ReasonInvalidSpec, "writebackRef: %v", err)
	}
	if spec.PushBranch != "" {
		if err := ValidPushBranch(spec.PushBranch); err != nil {
			return fail(ReasonInvalidSpec, "pushBranch: %v", err)
		}
	}
	msgTmpl, err := template.New("message").Option("missingkey=error").Parse(commitTemplate(spec.CommitMessage))
	if err != nil {
		return fail(ReasonInvalidSpec, "commitMessage: %v", err)
	}

	// Secrets.
	var regCreds *Credentials
	if spec.RegistrySecret != "" {
		data, err := r.secretKey(ctx, cr.Namespace, spec.RegistrySecret, corev1.DockerConfigJsonKey, string(corev1.SecretTypeDockerConfigJson))
		if err != nil {
			return fail(ReasonCredentialsError, "registrySecret: %v", err)
		}
		if regCreds, err = DockerConfigCredentials(data, spec.ImageRepository); err != nil {
			return fail(ReasonCredentialsError, "registrySecret %s: %v", spec.RegistrySecret, err)
		}
	}
	var gitCreds *GitCredentials
	if spec.CredentialsSecret != "" {
		if gitCreds, err = r.gitCredentials(ctx, cr.Namespace, spec.CredentialsSecret); err != nil {
			return fail(ReasonCredentialsError, "credentialsSecret: %v", err)
		}
	}
	var signing []byte
	var passphrase source.Token
	if spec.SigningKeySecret != "" {
		s, err := r.secret(ctx, cr.Namespace, spec.SigningKeySecret)
		if err != nil {
			return fail(ReasonCredentialsError, "signingKeySecret: %v", err)
		}
		if signing = s.Data["git.asc"]; len(signing) == 0 {
			return fail(ReasonCredentialsError, "signingKeySecret %s has no key git.asc", spec.SigningKeySecret)
		}
		passphrase = source.NewToken(string(s.Data["passphrase"]))
	}

	// Tags.
	tags, err := r.Registry.ListTags(ctx, spec.ImageRepository, regCreds, spec.Insecure)
	if err != nil {
		var re *RegistryError
		after := time.Duration(0)
		if errors.As(err, &re) {
			after = re.RetryAfter
		}
		return Outcome{Reason: ReasonRegistryError, Message: err.Error()}, after
	}

	// The file must be the tenant's in the universe repository.
	if r.Universe != nil && strings.TrimSpace(spec.WritebackRepo) == r.Universe.Repo {
		if err := r.Universe.ownFile(ctx, path, cr.Namespace); err != nil {
			var ff *ForeignFileError
			if errors.As(err, &ff) {
				return fail(ReasonForeignFile, "%v", err)
			}
			return fail(ReasonGitError, "%v", err)
		}
	}

	// The file, at the head of the branch the commit would land on.
	w, err := r.Writers(spec.WritebackRepo, gitCreds)
	if err != nil {
		return fail(ReasonInvalidSpec, "writebackRepo: %v", err)
	}
	target := Target{Repository: spec.ImageRepository, Marker: cr.Namespace + ":" + cr.Name, Namespace: cr.Namespace}
	var sites []Site
	_, err = w.Write(ctx, source.Change{Branch: branch, PushBranch: spec.PushBranch, Paths: []string{path}, Message: "read",
		Edit: func(p string, data []byte) ([]byte, error) {
			var err error
			sites, err = Locate(p, data, target)
			return data, err // never changes the file: a read
		}})
	if err != nil {
		var ff *ForeignFileError
		if errors.As(err, &ff) {
			return fail(ReasonForeignFile, "%v", ff)
		}
		var nm *NoMatchError
		if errors.As(err, &nm) || errors.Is(err, source.ErrFileNotFound) {
			return fail(ReasonNoMatch, "%v", hostError("read "+path, err))
		}
		var ee *source.EditError
		if errors.As(err, &ee) {
			return fail(ReasonNoMatch, "%v", err)
		}
		return fail(ReasonGitError, "%v", hostError("read "+path, err))
	}
	current := sites[0].Current
	failed := r.failedTags(ctx, sites, spec.ImageRepository)
	sel, err := Select(policy, current, tags, failed)
	if err != nil {
		return Outcome{Reason: ReasonCurrentNotSemver, Message: fmt.Sprintf("%s: %v", path, err), Current: current}, 0
	}
	if sel.Tag == "" {
		if sel.Held != "" {
			return Outcome{Reason: ReasonTagShapeMissing, Current: current,
				Message: fmt.Sprintf("at %s; newer not written: %s", current, sel.Held)}, 0
		}
		return Outcome{Reason: ReasonNoNewTag, Current: current, Message: "at latest: " + current}, 0
	}

	// The commit.
	var msg bytes.Buffer
	if err := msgTmpl.Execute(&msg, map[string]string{"Repository": spec.ImageRepository, "OldTag": current, "NewTag": sel.Tag,
		"Namespace": cr.Namespace, "Name": cr.Name, "Path": path}); err != nil {
		return fail(ReasonInvalidSpec, "commitMessage: %v", err)
	}
	// The operator is the author and committer; the CR's commitAuthor is a trailer.
	res, err := w.Write(ctx, source.Change{Branch: branch, PushBranch: spec.PushBranch, Paths: []string{path},
		Message: CommitMessage(msg.String(), spec.CommitAuthor), SigningKey: signing, SigningPassphrase: passphrase,
		Edit: func(p string, data []byte) ([]byte, error) {
			return Rewrite(p, data, target, sel.Tag, func(cur string) bool { return Newer(policy, sel.Tag, cur) })
		}})
	switch {
	case errors.Is(err, source.ErrConflict):
		return Outcome{Reason: ReasonPushRejected, Current: current, Latest: sel.Tag, Message: hostError("push "+path, err).Error()}, 0
	case err != nil:
		var nm *NoMatchError
		var ff *ForeignFileError
		if errors.As(err, &nm) || errors.As(err, &ff) {
			return fail(ReasonNoMatch, "%v", err)
		}
		return Outcome{Reason: ReasonGitError, Current: current, Latest: sel.Tag, Message: hostError("push "+path, err).Error()}, 0
	case res.Commit == "":
		// Someone else already wrote it (or something newer) on the new head.
		return Outcome{Reason: ReasonNoNewTag, Current: current, Latest: sel.Tag, Message: "at latest: " + sel.Tag}, 0
	}
	return Outcome{Reason: ReasonPushed, Current: current, Latest: sel.Tag,
		Message: fmt.Sprintf("pushed %s %s -> %s to %s in %s (%d attempt(s))", spec.ImageRepository, current, sel.Tag, res.Branch, short(res.Commit), res.Attempts),
		Pushed:  &Push{Tag: sel.Tag, Commit: res.Commit, At: r.Now()}}, 0
}

// ValidPushBranch: a pushBranch is a valid branch under PushBranchPrefix.
func ValidPushBranch(b string) error {
	if !strings.HasPrefix(b, PushBranchPrefix) || len(b) == len(PushBranchPrefix) {
		return fmt.Errorf("branch %q is not under %s (an ImageUpdate proposes on a branch of its own)", b, PushBranchPrefix)
	}
	return source.ValidBranch(b)
}

// CommitMessage is the commit message of a push: the rendered template, and the CR's
// commitAuthor as a Requested-by trailer (the operator is the author and committer: a CR
// cannot sign a commit with another person's name). The trailer is one line, whatever the CR
// holds.
func CommitMessage(rendered string, a *v1.CommitAuthor) string {
	msg := strings.TrimSpace(rendered) + "\n"
	if a == nil {
		return msg
	}
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r == '<' || r == '>' {
				return -1
			}
			return r
		}, s)
		if len(s) > 100 {
			s = s[:100]
		}
		return strings.TrimSpace(s)
	}
	name, email := clean(a.Name), clean(a.Email)
	if name == "" && email == "" {
		return msg
	}
	return msg + "\nRequested-by: " + strings.TrimSpace(name+" <"+email+">") + "\n"
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// commitTemplate is the commit message template: the CR's, or the default naming the
// repository and both tags.
func commitTemplate(s string) string {
	if strings.TrimSpace(s) != "" {
		return s
	}
	return "imageupdate: bump {{.Repository}} {{.OldTag}} -> {{.NewTag}}\n\nImageUpdate {{.Namespace}}/{{.Name}} updated {{.Path}}."
}

func (r *Reconciler) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Secret %s/%s is not found", ns, name)
		}
		return nil, fmt.Errorf("read Secret %s/%s: %w", ns, name, err)
	}
	return s, nil
}

func (r *Reconciler) secretKey(ctx context.Context, ns, name, key, typ string) ([]byte, error) {
	s, err := r.secret(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if typ != "" && string(s.Type) != typ {
		return nil, fmt.Errorf("the Secret %s/%s is of type %s, want %s", ns, name, s.Type, typ)
	}
	v, ok := s.Data[key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("the Secret %s/%s has no key %s", ns, name, key)
	}
	return v, nil
}

func (r *Reconciler) gitCredentials(ctx context.Context, ns, name string) (*GitCredentials, error) {
	s, err := r.secret(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	c := &GitCredentials{Username: strings.TrimSpace(string(s.Data["username"])), Token: source.NewToken(strings.TrimSpace(string(s.Data["token"]))),
		SSHKey: s.Data["identity"], KnownHosts: s.Data["known_hosts"]}
	if c.Token.IsZero() && len(c.SSHKey) == 0 {
		return nil, fmt.Errorf("the Secret %s/%s has neither key token nor identity", ns, name)
	}
	return c, nil
}

// failedTags reads the upgrade history of the objects the sites belong to: tags of this
// repository whose upgrade was rolled back or failed pre-flight, and a target the upgrade
// machine latched Failed. An object that cannot be read contributes none.
func (r *Reconciler) failedTags(ctx context.Context, sites []Site, repository string) []string {
	var out []string
	want := normalizeRepo(repository)
	seen := map[Object]bool{}
	for _, s := range sites {
		o := s.Object
		if o.Kind == "" || o.Name == "" || seen[o] {
			continue
		}
		seen[o] = true
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gv.WithKind(o.Kind))
		if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, u); err != nil {
			continue
		}
		out = append(out, FailedTags(u.Object, want)...)
	}
	return out
}

// FailedTags extracts from an object's status the tags of repository (normalized) recorded as
// failed upgrades: upgradeHistory entries RolledBack or PreflightFailed, and status.upgrade
// latched Failed.
func FailedTags(obj map[string]any, repository string) []string {
	var out []string
	add := func(image string) {
		if r, err := kinds.ParseImageRef(image); err == nil && r.Tag != "" && compareRepo(normalizeRepo(image), repository) != matchNone {
			out = append(out, r.Tag)
		}
	}
	hist, _, _ := unstructured.NestedSlice(obj, "status", "upgradeHistory")
	for _, h := range hist {
		m, _ := h.(map[string]any)
		if res, _ := m["result"].(string); res == "RolledBack" || res == "PreflightFailed" {
			img, _ := m["image"].(string)
			add(img)
		}
	}
	if phase, _, _ := unstructured.NestedString(obj, "status", "upgrade", "phase"); phase == "Failed" {
		img, _, _ := unstructured.NestedString(obj, "status", "upgrade", "targetImage")
		add(img)
	}
	return out
}

func conditionReason(s v1.ImageUpdateStatus, typ string) string {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c.Reason
		}
	}
	return ""
}

// CommittedAlert is the alert of a pushed tag bump, in the words of its Event. It is pure.
func CommittedAlert(cr *v1.ImageUpdate, out Outcome) alert.Event {
	obj := "ImageUpdate " + cr.Namespace + "/" + cr.Name
	e := alert.Event{Kind: alert.ImageUpdateCommitted, Object: obj, Summary: out.Message,
		Key: string(alert.ImageUpdateCommitted) + "|" + obj + "|" + out.Latest}
	if out.Pushed != nil {
		e.Revision = out.Pushed.Commit
	}
	return e
}

func (r *Reconciler) event(cr *v1.ImageUpdate, typ, reason, msg string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cr, nil, typ, reason, "ImageUpdate", "%s", msg)
	}
}

// writeStatus applies the status when it changed: server-side apply of the status
// subresource under condition.ManagerStatus, which owns the conditions it writes. A
// condition an earlier release's merge patch wrote, and that next drops, is removed first
// (condition.DropPatch): the apply alone would leave it to its old owner.
func (r *Reconciler) writeStatus(ctx context.Context, cr *v1.ImageUpdate, next v1.ImageUpdateStatus) error {
	if equalStatus(cr.Status, next) {
		return nil
	}
	if len(condition.LegacyStatusManagers(cr)) > 0 {
		drop, err := condition.DropPatch(cr.Status.Conditions, next.Conditions)
		if err != nil {
			return err
		}
		if drop != nil {
			if err := r.Client.Status().Patch(ctx, cr.DeepCopy(), client.RawPatch(types.JSONPatchType, drop), client.FieldOwner(condition.ManagerStatus)); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("drop conditions of %s/%s: %w", cr.Namespace, cr.Name, err))
			}
		}
	}
	gvk, err := r.Client.GroupVersionKindFor(cr)
	if err != nil {
		return err
	}
	patch, err := condition.StatusApply(gvk, cr, next)
	if err != nil {
		return err
	}
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(condition.ManagerStatus), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("apply status of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return nil
}

// equalStatus compares statuses ignoring condition transition times.
func equalStatus(a, b v1.ImageUpdateStatus) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	for _, s := range []*v1.ImageUpdateStatus{&a, &b} {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
