package fleet

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openuniverse/operator/kinds"
)

// Caller is the tenant a Reach acts for. Its org is never taken from an argument: a Caller
// is made only by AdmitCaller (the tenancy rule admitted a CR in its namespace) or PathCaller
// (the git path's orgs/<org>/ scope), and always holds a valid org.
type Caller struct{ org string }

// Org is the caller's org.
func (c Caller) Org() string { return c.org }

// AdmitCaller is the caller a CR acts as: the org of its namespace, by the one tenancy rule
// (kinds.Tenancy.AdmitOrg). A namespace without a trusted org has no caller.
func AdmitCaller(t kinds.Tenancy, cr, ns metav1.Object) (Caller, error) {
	org, err := t.AdmitOrg(cr, ns, "")
	if err != nil {
		return Caller{}, err
	}
	return Caller{org: org}, nil
}

// The universe repository layout of a cluster's files: orgs/<org>/clusters/<name>/...
const (
	orgsDir     = "orgs"
	clustersDir = "clusters"
)

// Target is where a file of the universe repository goes: the home cluster (Cluster empty)
// or a registered cluster, reached as the org of its path.
type Target struct {
	Caller  Caller
	Cluster string
}

// Home reports whether the target is the operator's own cluster.
func (t Target) Home() bool { return t.Cluster == "" }

func (t Target) String() string {
	if t.Home() {
		return "home"
	}
	return t.Caller.org + "/" + t.Cluster
}

// TargetOf decides the target of a repository file by its path: a file under
// orgs/<org>/clusters/<name>/ goes to cluster <name> as org <org>; any other file goes home.
// A path that names a cluster with an invalid org or name is refused (nothing of it is
// applied anywhere), never sent home.
func TargetOf(file string) (Target, error) {
	p := path.Clean(strings.TrimPrefix(file, "./"))
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != orgsDir || parts[2] != clustersDir {
		return Target{}, nil
	}
	c, err := PathCaller(parts[1])
	if err != nil {
		return Target{}, fmt.Errorf("%s: %w", file, err)
	}
	if err := ValidName(parts[3]); err != nil {
		return Target{}, fmt.Errorf("%s: %w", file, err)
	}
	if len(parts) == 4 {
		return Target{}, fmt.Errorf("%s: a cluster's directory holds files, this is the directory itself", file)
	}
	return Target{Caller: c, Cluster: parts[3]}, nil
}

// PathCaller is the caller of a repository path's orgs/<org>/ scope: the org is the path
// segment, refused unless it is a valid org.
func PathCaller(org string) (Caller, error) {
	if err := kinds.ValidOrg(org); err != nil {
		return Caller{}, err
	}
	return Caller{org: org}, nil
}

// ValidName refuses a cluster name that is not a DNS-1123 subdomain (the name of a Cluster
// object), so it is a safe path segment too.
func ValidName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for Reach.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// ErrNoCaller: Reach was called without a validated caller in its context.
var ErrNoCaller = errors.New("fleet: no validated caller in the context")

// CallerFrom returns the caller WithCaller put in ctx.
func CallerFrom(ctx context.Context) (Caller, error) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	if !ok || c.org == "" {
		return Caller{}, ErrNoCaller
	}
	return c, nil
}

// CredentialRef is the derived location of a registration's credential in the store:
// orgs/<org>/k8s/clusters/<name>/kubeconfig.
type CredentialRef string

// RefOf derives the credential location of cluster name of org. It is the only way a ref is
// made: from the record's org and name, both validated, never from data.
func RefOf(org, name string) (CredentialRef, error) {
	if err := kinds.ValidOrg(org); err != nil {
		return "", err
	}
	if err := ValidName(name); err != nil {
		return "", err
	}
	return CredentialRef(orgsDir + "/" + org + "/k8s/" + clustersDir + "/" + name + "/kubeconfig"), nil
}

// Org returns the org segment of the ref and whether it is well formed.
func (r CredentialRef) Org() (string, bool) {
	parts := strings.Split(string(r), "/")
	if len(parts) != 6 || parts[0] != orgsDir || parts[2] != "k8s" || parts[3] != clustersDir || parts[5] != "kubeconfig" {
		return "", false
	}
	return parts[1], true
}
