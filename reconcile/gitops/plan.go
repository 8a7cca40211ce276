package gitops

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/source"
)

// Plan is what one sweep does with the objects declared in git: apply some,
// skip the others with a reason. There is deliberately no delete in it.
type Plan struct {
	// Applies are ordered CRDs first, then Namespaces, then the rest in file
	// and document order.
	Applies []Apply
	// Skips are in file and document order.
	Skips []Skip
}

// Apply is one object to server-side apply, with the file that declared it.
type Apply struct {
	File   string
	Doc    int
	Object *unstructured.Unstructured
}

// Reason says why an object or file is not applied.
type Reason string

// Reasons for a Skip.
const (
	// Unparseable: the file is not valid YAML; none of it is applied.
	ReasonUnparseable Reason = "Unparseable"
	// Kustomization: a kustomization that was refused or failed to build, or
	// a Kustomization document outside a kustomization.yaml (never built).
	ReasonKustomization Reason = "Kustomization"
	// Typeless: a document without apiVersion or kind.
	ReasonTypeless Reason = "Typeless"
	// NoName: the object has no metadata.name.
	ReasonNoName Reason = "NoName"
	// NoNamespace: the object has no metadata.namespace and is not a kind the
	// sweep applies cluster-wide.
	ReasonNoNamespace Reason = "NoNamespace"
	// NamespaceNotOwned: the object's namespace (or, for a Namespace, its
	// name) is not owned.
	ReasonNamespaceNotOwned Reason = "NamespaceNotOwned"
	// CRDNotAllowed: a CRD, applied only with the explicit opt-in.
	ReasonCRDNotAllowed Reason = "CRDNotAllowed"
	// ClusterScoped: the API scopes the kind cluster-wide (whatever the
	// manifest says) and it is neither a Namespace nor an admitted CRD.
	ReasonClusterScoped Reason = "ClusterScoped"
	// OwnerReferences: the object declares ownerReferences, which would hand
	// its life to the garbage collector.
	ReasonOwnerReferences Reason = "OwnerReferences"
	// OperatorObject: one of the operator's own objects.
	ReasonOperatorObject Reason = "OperatorObject"
	// ClusterScopedWithNamespace: a Namespace or CRD that declares a
	// namespace, which cluster-scoped objects cannot have.
	ReasonClusterScopedWithNamespace Reason = "ClusterScopedWithNamespace"
	// NotInApplyScope: the vetted subset does not name the object.
	ReasonNotInApplyScope Reason = "NotInApplyScope"
	// Duplicate: an earlier file or document declares the same object.
	ReasonDuplicate Reason = "Duplicate"
)

// Skip is a file, document or object the sweep does not apply. It always
// names the file; Kind, Namespace and Name are set when an object was read.
type Skip struct {
	File      string `json:"file"`
	Doc       int    `json:"doc,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Reason    Reason `json:"reason"`
	Message   string `json:"message"`
	// ours is set when Message is the operator's own wording (a limit, an
	// encoding), quoting nothing from the file: GET /gitops serves it as is.
	ours bool
}

// Object renders the skipped object as Kind namespace/name, or "" when the
// skip concerns a file or a document that is not an object.
func (s Skip) Object() string {
	switch {
	case s.Kind == "":
		return ""
	case s.Namespace == "":
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}

func (s Skip) String() string {
	where := s.File
	if s.Doc > 0 {
		where = fmt.Sprintf("%s (document %d)", s.File, s.Doc)
	}
	if o := s.Object(); o != "" {
		return fmt.Sprintf("%s: %s: %s", where, o, s.Message)
	}
	return fmt.Sprintf("%s: %s", where, s.Message)
}

var (
	crdKind       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)

// Plan decides, for objects parsed from one snapshot, which to apply; errs
// (the FileErrors of the same parse) become skips too, so that
// scope.Plan(source.Parse(snapshot)) accounts for every file. Plan is pure:
// it reads only its arguments and never modifies the objects.
func (s Scope) Plan(objs []source.Object, errs []source.FileError) Plan {
	var p Plan
	var crds, namespaces, rest []Apply
	byFile := map[string][]Skip{}
	for _, e := range errs {
		byFile[e.File] = append(byFile[e.File], fileSkip(e))
	}
	seen := map[key]source.Object{}
	for _, o := range objs {
		if skip, ok := s.decide(o); !ok {
			byFile[o.File] = append(byFile[o.File], skip)
			continue
		}
		k := keyOf(o.Obj)
		if first, dup := seen[k]; dup {
			skip := objectSkip(o, ReasonDuplicate,
				fmt.Sprintf("also declared in %s (document %d), which is applied; remove one", first.File, first.Doc))
			byFile[o.File] = append(byFile[o.File], skip)
			continue
		}
		seen[k] = o
		a := Apply{File: o.File, Doc: o.Doc, Object: o.Obj}
		switch k.GroupKind {
		case crdKind:
			crds = append(crds, a)
		case namespaceKind:
			namespaces = append(namespaces, a)
		default:
			rest = append(rest, a)
		}
	}
	p.Applies = append(append(crds, namespaces...), rest...)
	p.Skips = orderSkips(byFile)
	return p
}

// decide applies the scope to one object, asking the API (Scope.WithAPI)
// whether its kind is namespaced. A kind the API does not know yet is
// admitted provisionally when it names an owned namespace; the sweep decides
// again (Admit) with the RESTMapping before it applies anything.
func (s Scope) decide(o source.Object) (Skip, bool) {
	return s.Admit(o, s.scoping(o.Obj.GroupVersionKind()))
}

// Admit applies the scope to one object whose kind the API scopes as given.
// Cluster-scoped kinds other than Namespace (and CRDs under the opt-in) are
// refused whether or not the manifest declares a namespace: the apiserver
// drops the namespace of a cluster-scoped object, so the manifest's word is
// never taken. It is pure.
func (s Scope) Admit(o source.Object, scoping Scoping) (Skip, bool) {
	obj := o.Obj
	gk := obj.GroupVersionKind().GroupKind()
	name, ns := obj.GetName(), obj.GetNamespace()
	if name == "" {
		return objectSkip(o, ReasonNoName, "no metadata.name (generateName is not supported: every sweep would create another object)"), false
	}
	if len(obj.GetOwnerReferences()) > 0 {
		return objectSkip(o, ReasonOwnerReferences,
			"declares metadata.ownerReferences: the garbage collector would delete it with (or for want of) its owner; remove them from git"), false
	}
	switch {
	case gk == namespaceKind:
		if ns != "" {
			return objectSkip(o, ReasonClusterScopedWithNamespace, "a Namespace cannot declare metadata.namespace; remove it"), false
		}
		if !s.Owns(name) {
			return objectSkip(o, ReasonNamespaceNotOwned, s.notOwned(name)), false
		}
	case gk == crdKind:
		if !s.crds {
			return objectSkip(o, ReasonCRDNotAllowed,
				"a CustomResourceDefinition changes the API of every namespace and is applied only with --gitops-allow-crds (OPERATOR_GITOPS_ALLOW_CRDS)"), false
		}
		if ns != "" {
			return objectSkip(o, ReasonClusterScopedWithNamespace, "a CustomResourceDefinition cannot declare metadata.namespace; remove it"), false
		}
	case scoping == ScopeCluster && s.self.Registry.Kind != "" && gk == s.self.Registry:
		return objectSkip(o, ReasonClusterScoped,
			"a fleet registration is not applied from git (least of all from a tenant's path: a tenant would register clusters for any org): registrations live as Cluster objects of the operator's own cluster, each credential in the Secret fleet-<sha256 prefix of orgs/<org>/k8s/clusters/<name>/kubeconfig> of the operator's namespace; the files of a registered cluster go under orgs/<org>/clusters/<name>/ (README: Fleet)"), false
	case scoping == ScopeCluster:
		return objectSkip(o, ReasonClusterScoped, fmt.Sprintf(
			"%s is cluster-scoped (the apiserver's RESTMapping says so, whatever namespace the file declares); the git path applies no cluster-scoped kind but Namespace and, with --gitops-allow-crds, CustomResourceDefinition",
			obj.GetKind())), false
	case ns == "":
		return objectSkip(o, ReasonNoNamespace,
			"no metadata.namespace: the sweep never guesses one, and applies no cluster-scoped kind other than Namespace and CustomResourceDefinition"), false
	case !s.Owns(ns):
		return objectSkip(o, ReasonNamespaceNotOwned, s.notOwned(ns)), false
	case s.self.protects(gk, ns, name):
		return objectSkip(o, ReasonOperatorObject,
			"one of the operator's own objects (its Deployment, ServiceAccount, RBAC, Lease, relay ConfigMap or Secrets): git may never write it"), false
	}
	if why := s.self.identity(obj, ns); why != "" {
		return objectSkip(o, ReasonOperatorIdentity, why), false
	}
	if !s.vetted(ns, name) {
		return objectSkip(o, ReasonNotInApplyScope,
			"not in the vetted subset; add "+Ref{Namespace: ns, Name: name}.String()+" to --gitops-apply-scope (GITOPS_APPLY_SCOPE)"), false
	}
	return Skip{}, true
}

// key identifies an object in the cluster: the version does not matter.
type key struct {
	schema.GroupKind
	Namespace, Name string
}

func keyOf(u *unstructured.Unstructured) key {
	return key{GroupKind: u.GroupVersionKind().GroupKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

func objectSkip(o source.Object, r Reason, msg string) Skip {
	return Skip{
		File: o.File, Doc: o.Doc,
		Kind: o.Obj.GetKind(), Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName(),
		Reason: r, Message: msg,
	}
}

func fileSkip(e source.FileError) Skip {
	s := Skip{File: e.File, Doc: e.Doc, Message: e.Err.Error()}
	switch {
	case errors.Is(e.Err, source.ErrKustomization):
		s.Reason = ReasonKustomization
		s.Message = "a Kustomization document outside a kustomization.yaml is not built; name the file kustomization.yaml"
	case errors.Is(e.Err, source.ErrPlaintextSecret) && e.Doc > 0:
		s.Reason = ReasonUnparseable
		s.Message = "not applied: " + e.Err.Error()
	case errors.Is(e.Err, source.ErrKustomizeRefused), errors.Is(e.Err, source.ErrKustomizeBuild):
		s.Reason = ReasonKustomization
		s.Message = "not applied, none of this kustomization is: " + e.Err.Error()
	case errors.Is(e.Err, source.ErrTypeless):
		s.Reason = ReasonTypeless
		s.Message = "document has no apiVersion or kind"
	default:
		s.Reason = ReasonUnparseable
		s.Message = "not applied, none of this file is: " + e.Err.Error()
		s.ours = errors.Is(e.Err, source.ErrTooLarge) || errors.Is(e.Err, source.ErrSnapshotTooLarge) ||
			errors.Is(e.Err, source.ErrTooManyFiles) || errors.Is(e.Err, source.ErrTooManyDocuments) ||
			errors.Is(e.Err, source.ErrNotUTF8) || errors.Is(e.Err, source.ErrSymlink) || errors.Is(e.Err, source.ErrNotFile)
	}
	return s
}

// orderSkips lists skips by file path, then by document.
func orderSkips(byFile map[string][]Skip) []Skip {
	var out []Skip
	for _, f := range slices.Sorted(maps.Keys(byFile)) {
		skips := byFile[f]
		slices.SortStableFunc(skips, func(a, b Skip) int { return a.Doc - b.Doc })
		out = append(out, skips...)
	}
	return out
}
