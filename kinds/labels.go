package kinds

import (
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The label keys and the managed-by value every child carries (wire-contract §1).
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelVersion   = "app.kubernetes.io/version"
	// ManagedBy is the managed-by value of every child; it is the value the existing operators
	// stamp, so a cutover re-applies no labels.
	ManagedBy = "hanzo-operator"
)

// attributionLabels are CR labels a datastore copies onto its workload and pod template, never
// its selector.
var attributionLabels = []string{"hanzo.ai/org", "hanzo.ai/resource", "hanzo.ai/managed-by"}

// owner is the CR a builder materializes: the identity its children reference and the names
// they derive from.
type owner struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	UID        types.UID
	// Group is the universe group (the KMSSecret child is served at kms.<Group>).
	Group string
}

// ref is the controller owner reference every child carries.
func (o owner) ref() []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion:         o.APIVersion,
		Kind:               o.Kind,
		Name:               o.Name,
		UID:                o.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
}

// meta is the metadata of a child named name in the owner's namespace.
func (o owner) meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels, OwnerReferences: o.ref()}
}

// selectorLabels is exactly name and instance, both the CR name. It selects pods for the
// workload, Services, PDB, NetworkPolicy and affinity, and must never change once created.
func selectorLabels(name string) map[string]string {
	return map[string]string{LabelName: name, LabelInstance: name}
}

// standardLabels is the selector plus managed-by, and component, part-of and version when
// non-empty (the version sanitized).
func standardLabels(name, component, partOf, version string) map[string]string {
	l := selectorLabels(name)
	l[LabelManagedBy] = ManagedBy
	if component != "" {
		l[LabelComponent] = component
	}
	if partOf != "" {
		l[LabelPartOf] = partOf
	}
	if v := sanitizeVersion(version); v != "" {
		l[LabelVersion] = v
	}
	return l
}

// withLabels returns base ∪ extra, extra winning; neither input is modified.
func withLabels(base map[string]string, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, extra)
	return out
}

// sanitizeVersion makes an image tag a label value: the text before any @digest, characters
// outside [A-Za-z0-9._-] mapped to '-', at most 63 characters, non-alphanumerics trimmed at both
// ends.
func sanitizeVersion(tag string) string {
	if i := strings.IndexByte(tag, '@'); i >= 0 {
		tag = tag[:i]
	}
	b := []byte(tag)
	for i, c := range b {
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	s := string(b)
	return strings.TrimFunc(s, func(r rune) bool { return r > 127 || !isAlnum(byte(r)) }) //nolint:gosec // G115: r <= 127 where it is a byte
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
