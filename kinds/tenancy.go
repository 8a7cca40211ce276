package kinds

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/openuniverse/operator/kinds/condition"
)

// OrgLabel names the org a tenant Namespace belongs to, and the org a CR says it is of (the
// deploy plane's visibility predicate).
const OrgLabel = "hanzo.ai/org"

// MaxOrgLength bounds an org name: it becomes a label value and a segment of credential paths.
const MaxOrgLength = validation.LabelValueMaxLength

// DefaultOrgManagers are the field managers whose write of a Namespace's org label counts: the
// git sweep (ours and the Rust operator's, so a takeover keeps every tenant) and the platform's
// cloud API, which creates tenant Namespaces. Anyone else who sets the label (a tenant with
// patch on its own Namespace, a kubectl user) moves nothing.
var DefaultOrgManagers = []string{ManagerGitOps, "hanzo-operator-gitops", "cloud-api"}

// The reasons a CR is refused by the tenancy rule; each is a condition reason of its own.
const (
	// ReasonNamespaceHasNoOrg: the CR's namespace carries no org label written by a trusted
	// manager, and the loop needs one (or the CR names an org).
	ReasonNamespaceHasNoOrg = "NamespaceHasNoOrg"
	// ReasonOrgMismatch: the CR's own org label, or an org it names in its spec or a row names
	// for it, is not its namespace's org.
	ReasonOrgMismatch = "OrgMismatch"
	// ReasonInvalidOrg: the org is not a valid name (empty, '/', '..', too long, not a label value).
	ReasonInvalidOrg = "InvalidOrg"
	// ReasonNamespaceMismatch: a CR reaches into a namespace that is not its own.
	ReasonNamespaceMismatch = "NamespaceMismatch"
)

// TenancyError is a refusal by the tenancy rule: terminal (the spec or the labels must change),
// with a reason every loop reports as its condition.
type TenancyError struct {
	Reason  string
	Message string
}

func (e *TenancyError) Error() string { return e.Reason + ": " + e.Message }

// ErrorClass implements condition.Classified: a refusal is Blocked (the spec or the
// Namespace's labels must change, and a label change wakes no CR's controller).
func (e *TenancyError) ErrorClass() (condition.Class, string) { return condition.Blocked, e.Reason }

// Tenancy is the one tenancy rule every loop uses (ImageUpdate, drive, AgentDeployment, tenant
// onboarding, the deploy plane): a tenant is a namespace; its org is the namespace's OrgLabel,
// counted only when a trusted field manager set it (read from managedFields, not from the value
// alone); a CR's own OrgLabel, when it has one, must equal its namespace's org.
type Tenancy struct {
	// Managers are the trusted field managers of a Namespace's org label; empty means
	// DefaultOrgManagers.
	Managers []string
}

// ValidOrg refuses an org that cannot be a label value or a path segment: empty, over
// MaxOrgLength, holding '/' or '..', or not a label value.
func ValidOrg(org string) error {
	switch {
	case org == "":
		return &TenancyError{ReasonInvalidOrg, "the org is empty"}
	case len(org) > MaxOrgLength:
		return &TenancyError{ReasonInvalidOrg, fmt.Sprintf("org %.20q… is longer than %d characters", org, MaxOrgLength)}
	case strings.Contains(org, "/") || strings.Contains(org, ".."):
		return &TenancyError{ReasonInvalidOrg, fmt.Sprintf("org %q holds '/' or '..'", org)}
	}
	if errs := validation.IsValidLabelValue(org); len(errs) > 0 {
		return &TenancyError{ReasonInvalidOrg, fmt.Sprintf("org %q: %s", org, strings.Join(errs, "; "))}
	}
	return nil
}

func (t Tenancy) managers() []string {
	if len(t.Managers) == 0 {
		return DefaultOrgManagers
	}
	return t.Managers
}

// NamespaceOrg is the org of the Namespace ns: its OrgLabel, when one of the trusted managers
// owns that label in managedFields. It returns "" and no error for a Namespace with no org
// label, and a NamespaceHasNoOrg refusal when the label is there but no trusted manager wrote
// it (an object read without managedFields counts as untrusted).
func (t Tenancy) NamespaceOrg(ns metav1.Object) (string, error) {
	org, ok := ns.GetLabels()[OrgLabel]
	if !ok {
		return "", nil
	}
	if !LabelSetBy(ns, OrgLabel, t.managers()) {
		return "", &TenancyError{ReasonNamespaceHasNoOrg, fmt.Sprintf("namespace %s: label %s=%s was not set by a trusted manager (%s)",
			ns.GetName(), OrgLabel, org, strings.Join(t.managers(), ", "))}
	}
	if err := ValidOrg(org); err != nil {
		return "", fmt.Errorf("namespace %s: %w", ns.GetName(), err)
	}
	return org, nil
}

// LabelSetBy reports whether obj's label key is owned, in its managedFields, by one of
// managers: the way to trust a label by who wrote it, not by its value (an object read
// without managedFields trusts no label).
func LabelSetBy(obj metav1.Object, key string, managers []string) bool {
	path := fieldpath.MakePathOrDie("metadata", "labels", key)
	for _, mf := range obj.GetManagedFields() {
		if !slices.Contains(managers, mf.Manager) || mf.FieldsV1 == nil {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(strings.NewReader(mf.FieldsV1.GetRawString())); err != nil {
			continue
		}
		if set.Has(path) {
			return true
		}
	}
	return false
}

// Admit applies the rule to a CR (or any namespaced object) and its Namespace, and returns the
// CR's org: its namespace's. A CR in a Namespace without a trusted org is admitted with org ""
// unless it claims one; a CR whose own OrgLabel differs from its namespace's org is refused.
func (t Tenancy) Admit(cr, ns metav1.Object) (string, error) {
	if cr.GetNamespace() != ns.GetName() {
		return "", &TenancyError{ReasonNamespaceMismatch, fmt.Sprintf("%s is in namespace %q, not %q", cr.GetName(), cr.GetNamespace(), ns.GetName())}
	}
	org, err := t.NamespaceOrg(ns)
	claimed, claims := cr.GetLabels()[OrgLabel]
	switch {
	case err != nil && claims:
		return "", err
	case err != nil:
		return "", nil // an untrusted label is no org, and this CR claims none
	case claims && org == "":
		return "", &TenancyError{ReasonNamespaceHasNoOrg, fmt.Sprintf("%s/%s is labelled %s=%s but its namespace has no org", cr.GetNamespace(), cr.GetName(), OrgLabel, claimed)}
	case claims && claimed != org:
		return "", &TenancyError{ReasonOrgMismatch, fmt.Sprintf("%s/%s is labelled %s=%s but its namespace is org %s", cr.GetNamespace(), cr.GetName(), OrgLabel, claimed, org)}
	}
	return org, nil
}

// AdmitOrg is Admit for a loop that acts for a named org (a drive row's org, an
// AgentDeployment's spec.org): the CR must be admitted and its org must be named, and equal it.
// An empty named org is the CR's own.
func (t Tenancy) AdmitOrg(cr, ns metav1.Object, named string) (string, error) {
	org, err := t.Admit(cr, ns)
	switch {
	case err != nil:
		return "", err
	case org == "":
		return "", &TenancyError{ReasonNamespaceHasNoOrg, fmt.Sprintf("namespace %s has no org set by a trusted manager (%s)", ns.GetName(), strings.Join(t.managers(), ", "))}
	case named != "" && named != org:
		return "", &TenancyError{ReasonOrgMismatch, fmt.Sprintf("%s/%s names org %s but its namespace is org %s", cr.GetNamespace(), cr.GetName(), named, org)}
	}
	return org, nil
}
