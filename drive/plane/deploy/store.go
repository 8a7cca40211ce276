package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// GitState tells what the git sweep knows of a CR; nil when the CR is not in the last sweep.
type GitState interface {
	Record(gvk schema.GroupVersionKind, namespace, name string) *GitRecord
}

// served is one Kind the cluster serves.
type served struct {
	entry kinds.Entry
	gvk   schema.GroupVersionKind
}

// store reads applications from the manager's caches: every read is an in-memory list, never
// an apiserver request. CRs are read typed (sharing the Kind controllers' informers), children
// unstructured (sharing their Owns informers), Pods and ReplicaSets typed.
type store struct {
	reader client.Reader
	scheme *runtime.Scheme
	reg    kinds.Registry
	group  string
	kinds  []served
	// children are the child GVKs the served Kinds own, Secrets excluded.
	children []schema.GroupVersionKind
	git      GitState
	// gitManager is the field manager of the git sweep; a CR it applied came from git.
	gitManager string
	repoURL    string
	branch     string
	opts       ProjectOptions
	tenancy    kinds.Tenancy
	revs       *revisionMemory
}

func newStore(reader client.Reader, scheme *runtime.Scheme, reg kinds.Registry, group string, isServed func(schema.GroupVersionKind) bool) *store {
	s := &store{reader: reader, scheme: scheme, reg: reg, group: group, revs: newRevisionMemory()}
	refs := make([]kinds.Ref, 0, len(reg))
	for ref := range reg {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	seen := map[schema.GroupVersionKind]bool{}
	for _, ref := range refs {
		e := reg[ref]
		gvk := e.GroupVersionKind(group)
		if e.Placement.Record() || !isServed(gvk) { // a registration or a status record is no application
			continue
		}
		s.kinds = append(s.kinds, served{entry: e, gvk: gvk})
		for _, c := range e.OwnedGVKs(group) {
			if IsSecret(c) || seen[c] || !isServed(c) {
				continue
			}
			seen[c] = true
			s.children = append(s.children, c)
		}
	}
	return s
}

// isChildCR reports whether cr is controlled by a CR of a served Kind (the KMSSecret a
// Service builds): a child of that application, never an application of its own.
func (s *store) isChildCR(cr *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(cr)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	for _, k := range s.kinds {
		if k.gvk.Group == gv.Group && k.gvk.Kind == ref.Kind {
			return true
		}
	}
	return false
}

// listCRs lists one Kind's CRs (typed, from the cache) as unstructured objects.
func (s *store) listCRs(ctx context.Context, k served, namespace string) ([]*unstructured.Unstructured, error) {
	obj, err := s.scheme.New(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("no list type for %s: %w", k.gvk, err)
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s list is not a client.ObjectList", k.gvk)
	}
	if err := s.reader.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list %s: %w", k.gvk.Kind, err)
	}
	return toUnstructured(list, k.gvk)
}

func toUnstructured(list runtime.Object, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out, nil
}

// byController groups objects by the uid of their controller owner.
func byController(objs []*unstructured.Unstructured) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			out[string(ref.UID)] = append(out[string(ref.UID)], o)
		}
	}
	return out
}

// observe reads every application in namespace ("" for all), with the Pods and ReplicaSets
// under them when descendants is set.
func (s *store) observe(ctx context.Context, namespace string, descendants bool) ([]Observed, error) {
	var crs []*unstructured.Unstructured
	for _, k := range s.kinds {
		items, err := s.listCRs(ctx, k, namespace)
		if err != nil {
			return nil, err
		}
		for _, cr := range items {
			if !s.isChildCR(cr) {
				crs = append(crs, cr)
			}
		}
	}
	var children []*unstructured.Unstructured
	for _, gvk := range s.children {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.reader.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			children = append(children, &list.Items[i])
		}
	}
	owned := byController(children)
	var under map[string][]*unstructured.Unstructured
	if descendants {
		var err error
		if under, err = s.descendants(ctx, namespace); err != nil {
			return nil, err
		}
	}
	namespaces := &corev1.NamespaceList{}
	if err := s.reader.List(ctx, namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	nsByName := make(map[string]*corev1.Namespace, len(namespaces.Items))
	for i := range namespaces.Items {
		nsByName[namespaces.Items[i].Name] = &namespaces.Items[i]
	}
	names := appNames(crs)
	out := make([]Observed, 0, len(crs))
	for _, cr := range crs {
		o := Observed{Name: names[cr], CR: cr, Children: owned[string(cr.GetUID())]}
		o.Org, o.Tenancy = s.orgOf(cr, nsByName[cr.GetNamespace()])
		sortObjects(o.Children)
		if descendants {
			for _, c := range o.Children {
				for _, d := range under[string(c.GetUID())] {
					o.Descendants = append(o.Descendants, d)
					o.Descendants = append(o.Descendants, under[string(d.GetUID())]...) // pods of a ReplicaSet
				}
			}
		}
		desired, err := s.reg.Build(cr, kinds.Context{APIGroup: s.group})
		if halt, ok := kinds.AsHalt(err); ok {
			o.Halted = halt != nil
		} else if err != nil {
			o.BuildErr = err.Error()
		}
		o.Desired = desired
		o.Git = s.gitRecord(cr)
		if o.Git != nil && o.Git.Revision != "" {
			s.revs.add(string(cr.GetUID()), o.Git.Revision)
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CR.GetNamespace() != out[j].CR.GetNamespace() {
			return out[i].CR.GetNamespace() < out[j].CR.GetNamespace()
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// descendants indexes the ReplicaSets and Pods of namespace by their controller's uid.
func (s *store) descendants(ctx context.Context, namespace string) (map[string][]*unstructured.Unstructured, error) {
	rs := &appsv1.ReplicaSetList{}
	if err := s.reader.List(ctx, rs, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list ReplicaSets: %w", err)
	}
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Pods: %w", err)
	}
	a, err := toUnstructured(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	if err != nil {
		return nil, err
	}
	b, err := toUnstructured(pods, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		return nil, err
	}
	return byController(append(a, b...)), nil
}

func sortObjects(objs []*unstructured.Unstructured) {
	sort.Slice(objs, func(i, j int) bool { return keyOf(objs[i]) < keyOf(objs[j]) })
}

// appNames names each CR's application: its name, or name.kind (lower case) when another CR of
// its namespace has the same name.
func appNames(crs []*unstructured.Unstructured) map[*unstructured.Unstructured]string {
	count := map[string]int{}
	for _, cr := range crs {
		count[cr.GetNamespace()+"/"+cr.GetName()]++
	}
	out := make(map[*unstructured.Unstructured]string, len(crs))
	for _, cr := range crs {
		name := cr.GetName()
		if count[cr.GetNamespace()+"/"+name] > 1 {
			name += "." + strings.ToLower(cr.GetKind())
		}
		out[cr] = name
	}
	return out
}

// gitRecord is the sweep's record of cr, or, when this process runs no sweep, what the
// managed fields say: a CR the sweep's field manager applied came from git.
func (s *store) gitRecord(cr *unstructured.Unstructured) *GitRecord {
	if s.git != nil {
		if r := s.git.Record(cr.GroupVersionKind(), cr.GetNamespace(), cr.GetName()); r != nil {
			return r
		}
	}
	if s.gitManager == "" {
		return nil
	}
	for _, mf := range cr.GetManagedFields() {
		if mf.Manager == s.gitManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return &GitRecord{RepoURL: s.repoURL, Branch: s.branch}
		}
	}
	return nil
}

// orgOf is the org of cr by the one tenancy rule: its namespace's org, counted only when a
// trusted manager set it; a CR whose own org label differs is refused (no org) with the reason.
func (s *store) orgOf(cr *unstructured.Unstructured, ns *corev1.Namespace) (string, *kinds.TenancyError) {
	if ns == nil { // not in the cache (yet, or any more): no org to count
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cr.GetNamespace()}}
	}
	org, err := s.tenancy.Admit(cr, ns)
	if err != nil {
		var te *kinds.TenancyError
		if !errors.As(err, &te) {
			te = &kinds.TenancyError{Reason: kinds.ReasonInvalidOrg, Message: err.Error()}
		}
		return "", te
	}
	return org, nil
}

// find returns the application called name in namespace ("" searches every namespace) among
// those visible says the caller may see: an application the caller cannot see is never
// counted, so it answers exactly like one that does not exist (no "several applications"
// error for a name another org also uses).
func (s *store) find(ctx context.Context, namespace, name string, descendants bool, visible func(*Observed) bool) (*Observed, error) {
	all, err := s.observe(ctx, namespace, descendants)
	if err != nil {
		return nil, err
	}
	var hit *Observed
	for i := range all {
		if all[i].Name != name || !visible(&all[i]) {
			continue
		}
		if hit != nil {
			return nil, errAmbiguous
		}
		hit = &all[i]
	}
	return hit, nil
}

// revisionMemory remembers, per CR uid, the git revisions the plane observed for it (the last
// revisionsPerApp), so revisions/{sha}/metadata describes only commits of applications the
// caller can see.
type revisionMemory struct {
	mu   sync.Mutex
	revs map[string][]string
}

const revisionsPerApp = 16

func newRevisionMemory() *revisionMemory { return &revisionMemory{revs: map[string][]string{}} }

func (m *revisionMemory) add(uid, rev string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.revs[uid]
	if slices.Contains(list, rev) {
		return
	}
	if list = append(list, rev); len(list) > revisionsPerApp {
		list = list[len(list)-revisionsPerApp:]
	}
	m.revs[uid] = list
}

func (m *revisionMemory) has(uid, rev string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.revs[uid], rev)
}

// keep forgets the revisions of every CR not in uids (deleted CRs).
func (m *revisionMemory) keep(uids map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.revs {
		if !uids[uid] {
			delete(m.revs, uid)
		}
	}
}
