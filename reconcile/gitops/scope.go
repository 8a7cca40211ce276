package gitops

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/source"
)

// All, as the only or any entry of the owned namespaces, owns every namespace.
const All = "*"

// Ref names an object of the vetted subset: Name in any owned namespace when
// Namespace is empty, else exactly Namespace/Name.
type Ref struct {
	Namespace string
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// ParseRef parses "name" or "ns/name".
func ParseRef(s string) (Ref, error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return Ref{Name: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return Ref{Namespace: parts[0], Name: parts[1]}, nil
	}
	return Ref{}, fmt.Errorf("apply scope entry %q: want name or namespace/name", s)
}

// Scope decides which objects from git the sweep may apply. Its zero value
// owns nothing (fail closed); build one with NewScope or Options.Scope.
type Scope struct {
	all        bool
	namespaces map[string]bool
	subset     []Ref // nil: no name filter
	crds       bool  // CustomResourceDefinitions admitted (explicit opt-in)
	self       Self
	api        ScopeOf // nil: every kind but Namespace and CRD is unknown
	bound      string  // the registered cluster whose namespaces bound this scope, if any
}

// Scoping is what the API says of a kind: namespaced, cluster-scoped, or not
// known (yet: a CRD of the same snapshot may serve it).
type Scoping int

// Scopings.
const (
	ScopeUnknown Scoping = iota
	ScopeNamespaced
	ScopeCluster
)

// ScopeOf answers, from the apiserver's RESTMapping, whether a kind is
// namespaced. The manifest is never asked.
type ScopeOf func(schema.GroupVersionKind) Scoping

// MappingScope turns a RESTMapping (nil: not resolved) into a Scoping.
func MappingScope(m *meta.RESTMapping) Scoping {
	switch {
	case m == nil || m.Scope == nil:
		return ScopeUnknown
	case m.Scope.Name() == meta.RESTScopeNameNamespace:
		return ScopeNamespaced
	}
	return ScopeCluster
}

// SystemNamespaces are never owned through "*": the cluster's own.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// Self is the operator's own footprint, which git may never write: its
// namespace (owned only when named, never through "*") and, in it, its
// Deployment, ServiceAccount, RBAC, Lease, relay ConfigMap and Secrets.
type Self struct {
	// Namespace is the operator's namespace.
	Namespace string
	// Objects are refused in Namespace; an empty Name refuses every object
	// of the kind there.
	Objects []SelfObject
	// ServiceAccount is the operator's ServiceAccount in Namespace: git may
	// not run a pod as it, bind anything to it, or declare its token Secret.
	ServiceAccount string
	// ClusterRoles and Roles name the operator's own roles: git may not bind
	// them, and may not write a Role or RoleBinding of those names in any
	// namespace (install puts the operator's Role in each one it owns).
	ClusterRoles []string
	Roles        []string
	// Registry is the fleet's registration Kind (the universe group's Cluster): git never
	// writes it, and its refusal says where registrations live.
	Registry schema.GroupKind
}

// SelfObject names one of the operator's own objects (or, with no Name,
// every object of a kind) in its namespace.
type SelfObject struct {
	schema.GroupKind
	Name string
}

// protects reports whether the object is one of the operator's own.
func (s Self) protects(gk schema.GroupKind, ns, name string) bool {
	if s.Namespace == "" || ns != s.Namespace {
		return false
	}
	for _, o := range s.Objects {
		if o.GroupKind == gk && (o.Name == "" || o.Name == name) {
			return true
		}
	}
	return false
}

// WithSelf returns s refusing the operator's own objects, and no longer
// owning the operator's namespace through "*".
func (s Scope) WithSelf(self Self) Scope {
	self.Objects = slices.Clone(self.Objects)
	self.ClusterRoles, self.Roles = slices.Clone(self.ClusterRoles), slices.Clone(self.Roles)
	s.self = self
	return s
}

// WithCRDs returns s admitting CustomResourceDefinitions (an explicit opt-in:
// a CRD changes the API of every namespace).
func (s Scope) WithCRDs(allow bool) Scope { s.crds = allow; return s }

// WithBound returns s as the namespaces bound of registered cluster (reconcile/fleet): a
// namespace outside it is refused with a message naming the cluster and its bound, not
// the home sweep's --gitops-namespaces.
func (s Scope) WithBound(cluster string) Scope { s.bound = cluster; return s }

// notOwned is the refusal of namespace ns.
func (s Scope) notOwned(ns string) string {
	if s.bound != "" {
		return fmt.Sprintf("namespace %s is outside cluster %s's registration namespaces bound [%s]: refused, not narrowed (the Cluster's spec.namespaces)",
			ns, s.bound, strings.Join(s.Namespaces(), " "))
	}
	return fmt.Sprintf("namespace %s is not owned (owned: %s); add it to --gitops-namespaces (GITOPS_NAMESPACES)", ns, s)
}

// WithAPI returns s deciding cluster- versus namespace-scope through api.
func (s Scope) WithAPI(api ScopeOf) Scope { s.api = api; return s }

// CRDs reports whether CustomResourceDefinitions are admitted.
func (s Scope) CRDs() bool { return s.crds }

// scoping asks the API, knowing the two built-in cluster-scoped kinds the
// sweep handles itself.
func (s Scope) scoping(gvk schema.GroupVersionKind) Scoping {
	switch gvk.GroupKind() {
	case namespaceKind, crdKind:
		return ScopeCluster
	}
	if s.api == nil {
		return ScopeUnknown
	}
	return s.api(gvk)
}

// NewScope owns the given namespaces ("*" anywhere owns all) and, if subset
// is not empty, only the objects it names. Blank entries are ignored; an
// empty namespace list, or a malformed subset entry, is an error rather than
// a silently wider or narrower scope.
func NewScope(namespaces, subset []string) (Scope, error) {
	s := Scope{namespaces: map[string]bool{}}
	for _, ns := range namespaces {
		switch ns = strings.TrimSpace(ns); ns {
		case "":
		case All:
			s.all = true
		default:
			s.namespaces[ns] = true
		}
	}
	if !s.all && len(s.namespaces) == 0 {
		return Scope{}, errors.New("gitops scope owns no namespace: name at least one, or * for all")
	}
	var errs []error
	for _, e := range subset {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		r, err := ParseRef(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.subset = append(s.subset, r)
	}
	if err := errors.Join(errs...); err != nil {
		return Scope{}, err
	}
	return s, nil
}

// OwnsAll reports whether every namespace is owned.
func (s Scope) OwnsAll() bool { return s.all }

// Owns reports whether namespace ns is owned: named, or covered by "*",
// which never covers the system namespaces or the operator's own.
func (s Scope) Owns(ns string) bool {
	if s.namespaces[ns] {
		return true
	}
	return s.all && ns != "" && !slices.Contains(SystemNamespaces, ns) && ns != s.self.Namespace
}

// Covers reports whether an object of kind gk (namespaced as told) named ns/name lies
// in the namespaces this scope owns: a Namespace by its name, a namespaced object by
// its namespace; anything else is the sweep's to judge (true). The inventory keeps
// entries it does not cover untouched (NextInventory).
func (s Scope) Covers(gk schema.GroupKind, namespaced bool, ns, name string) bool {
	switch {
	case gk == namespaceKind:
		return s.Owns(name)
	case namespaced:
		return s.Owns(ns)
	}
	return true
}

// Namespaces returns the namespaces named (with "*", those named besides it:
// a named operator namespace stays owned), sorted; nil when none is named
// and all are owned.
func (s Scope) Namespaces() []string {
	if s.all && len(s.namespaces) == 0 {
		return nil
	}
	out := make([]string, 0, len(s.namespaces))
	for ns := range s.namespaces {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// Subset returns the vetted subset; empty when there is no name filter.
func (s Scope) Subset() []Ref { return slices.Clone(s.subset) }

// String renders the owned namespaces for logs: "(every namespace)" or a
// sorted, comma separated list.
func (s Scope) String() string {
	if s.all {
		except := append(slices.Clone(SystemNamespaces), s.self.Namespace)
		except = slices.DeleteFunc(except, func(ns string) bool { return ns == "" || s.namespaces[ns] })
		all := "(every namespace but " + strings.Join(except, ",") + ")"
		if len(s.namespaces) > 0 {
			return all + "," + strings.Join(s.Namespaces(), ",")
		}
		return all
	}
	return strings.Join(s.Namespaces(), ",")
}

// vetted reports whether the name gate admits namespace/name.
func (s Scope) vetted(ns, name string) bool {
	if len(s.subset) == 0 {
		return true
	}
	for _, r := range s.subset {
		if r.Name == name && (r.Namespace == "" || r.Namespace == ns) {
			return true
		}
	}
	return false
}

// Options configures the git sweep's scope and trigger.
type Options struct {
	// Namespaces are the owned namespaces, "*" for every namespace but the
	// system ones and the operator's; required.
	Namespaces []string
	// ApplyScope is the optional vetted subset: "name" or "ns/name" entries.
	ApplyScope []string
	// CRDs admits CustomResourceDefinitions from git (off by default).
	CRDs bool
	// Resync is the interval between sweeps; at least MinResync.
	Resync time.Duration
	// WebhookSecretFile holds the secret of POST /reconcile (HMAC key, or
	// the GitLab token); required unless WebhookInsecure.
	WebhookSecretFile string
	// WebhookInsecure accepts unsigned webhooks when no secret is set.
	WebhookInsecure bool
	// WebhookMaxBytes caps the body of POST /reconcile.
	WebhookMaxBytes int64
	// WebhookMinInterval is the least time between two sweeps a trigger
	// (webhook, relay, watch) starts, and between two relay writes of one
	// replica; 0 means DefaultWebhookMinInterval.
	WebhookMinInterval time.Duration
	// WebhookDedupe drops a webhook whose delivery id was seen recently.
	WebhookDedupe bool
	// Concurrency is how many objects a sweep applies at once.
	Concurrency int
	// KubeQPS, when positive, limits the sweep's requests per second client-side (burst
	// KubeBurst); 0 leaves them to the apiserver's priority and fairness, as kubectl does.
	KubeQPS   float32
	KubeBurst int
	// Limits bound what the sweep reads from git.
	Limits source.Limits
	// ServiceAccount, when set, is the ServiceAccount the sweep applies every
	// namespaced object as, in the object's namespace (it impersonates
	// system:serviceaccount:<namespace>:<ServiceAccount>): a tenant declares
	// any kind its own RBAC allows and nothing else. Namespaces and CRDs are
	// still applied as the operator, within the scope.
	ServiceAccount string
	// State names the inventory and suspend ConfigMaps (see State); an empty Namespace
	// keeps neither: no orphan report, no suspend, every object applied at a cold start.
	State State
	// SOPSAgeSecret names the Secret of the age keys that decrypt SOPS files
	// (NAME in the operator's namespace, or NAMESPACE/NAME); empty: none.
	SOPSAgeSecret string
	// RequireEncryptedSecrets refuses a Secret not encrypted with SOPS.
	RequireEncryptedSecrets bool
	// MetadataOnly watches every kind metadata-only, for a one-shot sweep (operator up):
	// the idle check and the inventory need no more, and a status watch lists whole
	// objects. An object's health is then the one its apply returned (Unknown when not
	// applied), and no watch event fires a sweep for health.
	MetadataOnly bool
	// Mapper, when set, is the discovery-backed RESTMapper the sweep resolves kinds with
	// (and resets after applying CRDs) instead of building its own: a process that reads
	// discovery for something else first (operator up's install) shares it, one discovery
	// per process.
	Mapper meta.ResettableRESTMapper
	// AwaitsStatus, when set, names the kinds whose status a controller of this operator
	// writes, always with status.observedGeneration: the Kinds its Kind controllers
	// materialize. An applied object of one without status.observedGeneration is
	// InProgress, not yet reconciled, where kstatus alone reads an object without status
	// as Current (HealthOf).
	AwaitsStatus func(schema.GroupKind) bool
}

// Resync bounds.
const (
	DefaultResync = 45 * time.Second
	MinResync     = 10 * time.Second
)

// DefaultWebhookMinInterval is the default least time between two triggered
// sweeps: however many webhooks arrive, at most one sweep a second.
const DefaultWebhookMinInterval = time.Second

// DefaultMaxBytes is the default cap on webhook bodies. GitHub push
// payloads are usually a few KiB; 4 MiB leaves room for large pushes.
const DefaultMaxBytes = 4 << 20

// DefaultConcurrency is how many objects a sweep applies at once by default.
const DefaultConcurrency = 32

// DefaultOptions returns the defaults BindFlags registers.
func DefaultOptions() Options {
	return Options{Resync: DefaultResync, WebhookMaxBytes: DefaultMaxBytes, Concurrency: DefaultConcurrency,
		WebhookMinInterval: DefaultWebhookMinInterval, Limits: source.DefaultLimits()}
}

// BindFlags registers the gitops flags on fs, with the values already in o as
// defaults (start from DefaultOptions).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	o.BindScopeFlags(fs)
	fs.DurationVar(&o.Resync, "gitops-resync", o.Resync, "Interval between git sweeps (at least 10s).")
	fs.StringVar(&o.WebhookSecretFile, "gitops-webhook-secret-file", o.WebhookSecretFile,
		"File holding the secret of POST /reconcile (HMAC key, or GitLab's X-Gitlab-Token); required unless --gitops-webhook-insecure.")
	fs.BoolVar(&o.WebhookInsecure, "gitops-webhook-insecure", o.WebhookInsecure,
		"Accept unsigned POST /reconcile requests when no webhook secret is set (anyone reaching the port can trigger sweeps).")
	fs.Int64Var(&o.WebhookMaxBytes, "gitops-webhook-max-bytes", o.WebhookMaxBytes, "Largest accepted POST /reconcile body.")
	fs.DurationVar(&o.WebhookMinInterval, "gitops-webhook-min-interval", o.WebhookMinInterval,
		"Least time between two webhook-triggered sweeps, and between two relay writes of a standby.")
	fs.BoolVar(&o.WebhookDedupe, "gitops-webhook-dedupe", o.WebhookDedupe,
		"Drop a webhook whose delivery id (X-GitHub-Delivery, X-Gitea-Delivery, X-Gitlab-Event-UUID) was seen recently.")
	fs.IntVar(&o.Concurrency, "gitops-concurrency", o.Concurrency, "Objects a git sweep applies at once.")
	fs.Float32Var(&o.KubeQPS, "gitops-kube-qps", o.KubeQPS, "Client-side limit of the sweep's apiserver requests per second; 0 leaves them to the apiserver's priority and fairness.")
	fs.IntVar(&o.KubeBurst, "gitops-kube-burst", o.KubeBurst, "Burst of --gitops-kube-qps.")
	fs.StringVar(&o.ServiceAccount, "gitops-service-account", o.ServiceAccount,
		"Apply every namespaced object from git as this ServiceAccount of the object's namespace (impersonated), so a tenant gets only what its namespace's RBAC grants it; empty applies as the operator.")
	o.Limits.BindFlags(fs)
	o.bindSOPSFlags(fs)
}

// BindScopeFlags registers the flags of the scope alone (operator up uses
// them too).
func (o *Options) BindScopeFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Namespaces, "gitops-namespaces", o.Namespaces,
		"Namespaces git may write into (required); * for all but kube-system, kube-public, kube-node-lease and the operator's own.")
	fs.StringSliceVar(&o.ApplyScope, "gitops-apply-scope", o.ApplyScope,
		"Optional vetted subset of objects to apply: name or namespace/name entries.")
	fs.BoolVar(&o.CRDs, "gitops-allow-crds", o.CRDs,
		"Apply CustomResourceDefinitions declared in git (they change the API of every namespace).")
}

// Scope builds the scope, refusing the operator's own objects. No namespace
// is owned by default: an empty --gitops-namespaces is an error.
func (o Options) Scope(self Self) (Scope, error) {
	ns := SplitList(strings.Join(o.Namespaces, ","))
	if len(ns) == 0 {
		return Scope{}, errors.New("gitops scope owns no namespace: name the namespaces git may write with --gitops-namespaces (GITOPS_NAMESPACES), or * for all")
	}
	s, err := NewScope(ns, o.ApplyScope)
	if err != nil {
		return Scope{}, err
	}
	return s.WithSelf(self).WithCRDs(o.CRDs), nil
}

// ErrNoWebhookSecret is returned by WebhookSecret when no secret is set and
// unsigned webhooks were not explicitly accepted.
var ErrNoWebhookSecret = errors.New("a git source needs a webhook secret: set --gitops-webhook-secret-file, or --gitops-webhook-insecure to accept unsigned POST /reconcile")

// WebhookSecret opens the webhook secret file. With none configured it
// fails (ErrNoWebhookSecret) unless WebhookInsecure, then returns nil:
// unsigned requests are accepted. Run Watch on the result to pick up
// rotations.
func (o Options) WebhookSecret() (*source.TokenFile, error) {
	if o.WebhookSecretFile == "" {
		if !o.WebhookInsecure {
			return nil, ErrNoWebhookSecret
		}
		return nil, nil
	}
	return source.OpenTokenFile(o.WebhookSecretFile)
}

// MinInterval returns WebhookMinInterval, defaulted.
func (o Options) MinInterval() time.Duration {
	if o.WebhookMinInterval <= 0 {
		return DefaultWebhookMinInterval
	}
	return o.WebhookMinInterval
}

// Interval returns Resync, defaulted and floored.
func (o Options) Interval() time.Duration {
	if o.Resync <= 0 {
		return DefaultResync
	}
	return max(o.Resync, MinResync)
}

// SplitList splits an environment value on commas and whitespace, dropping
// blanks: "a, b\tc" gives [a b c].
func SplitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
}
