package gitops

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

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
	if s.all {
		s.namespaces = nil
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

// Owns reports whether namespace ns is owned.
func (s Scope) Owns(ns string) bool { return s.all || s.namespaces[ns] }

// Namespaces returns the owned namespaces, sorted; nil when all are owned.
func (s Scope) Namespaces() []string {
	if s.all {
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
		return "(every namespace)"
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
	// Namespaces are the owned namespaces; empty means the operator's own,
	// and "*" every namespace.
	Namespaces []string
	// ApplyScope is the optional vetted subset: "name" or "ns/name" entries.
	ApplyScope []string
	// Resync is the interval between sweeps; at least MinResync.
	Resync time.Duration
	// WebhookSecretFile holds the HMAC secret of POST /reconcile; empty
	// accepts unsigned requests.
	WebhookSecretFile string
	// WebhookMaxBytes caps the body of POST /reconcile.
	WebhookMaxBytes int64
	// Concurrency is how many objects a sweep applies at once.
	Concurrency int
}

// Resync bounds.
const (
	DefaultResync = 45 * time.Second
	MinResync     = 10 * time.Second
)

// DefaultMaxBytes is the default cap on webhook bodies. GitHub push
// payloads are usually a few KiB; 4 MiB leaves room for large pushes.
const DefaultMaxBytes = 4 << 20

// DefaultConcurrency is how many objects a sweep applies at once by default.
const DefaultConcurrency = 32

// DefaultOptions returns the defaults BindFlags registers.
func DefaultOptions() Options {
	return Options{Resync: DefaultResync, WebhookMaxBytes: DefaultMaxBytes, Concurrency: DefaultConcurrency}
}

// BindFlags registers the gitops flags on fs, with the values already in o as
// defaults (start from DefaultOptions).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Namespaces, "gitops-namespaces", o.Namespaces,
		"Namespaces the git sweep may apply into; empty for the operator's own, * for all.")
	fs.StringSliceVar(&o.ApplyScope, "gitops-apply-scope", o.ApplyScope,
		"Optional vetted subset of objects to apply: name or namespace/name entries.")
	fs.DurationVar(&o.Resync, "gitops-resync", o.Resync, "Interval between git sweeps (at least 10s).")
	fs.StringVar(&o.WebhookSecretFile, "gitops-webhook-secret-file", o.WebhookSecretFile,
		"File holding the HMAC secret for POST /reconcile; empty accepts unsigned requests.")
	fs.Int64Var(&o.WebhookMaxBytes, "gitops-webhook-max-bytes", o.WebhookMaxBytes, "Largest accepted POST /reconcile body.")
	fs.IntVar(&o.Concurrency, "gitops-concurrency", o.Concurrency, "Objects a git sweep applies at once.")
}

// Scope builds the scope; operatorNamespace is owned when no namespace is
// configured.
func (o Options) Scope(operatorNamespace string) (Scope, error) {
	ns := o.Namespaces
	if len(SplitList(strings.Join(ns, ","))) == 0 {
		ns = []string{operatorNamespace}
	}
	return NewScope(ns, o.ApplyScope)
}

// WebhookSecret opens the webhook secret file, or returns nil when none is
// configured (unsigned requests are then accepted). Run Watch on the result
// to pick up rotations.
func (o Options) WebhookSecret() (*source.TokenFile, error) {
	if o.WebhookSecretFile == "" {
		return nil, nil
	}
	return source.OpenTokenFile(o.WebhookSecretFile)
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
