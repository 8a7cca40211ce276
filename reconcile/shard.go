package reconcile

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/kinds"
)

// Shard is the part of the fleet one operator reconciles: namespaces (none: all) and a label
// selector on the CRs (empty: all). Kubernetes is the distributed engine: N operator
// Deployments, each with its own shard and its own Lease.
type Shard struct {
	Namespaces    []string
	LabelSelector string
}

// Sharded reports whether the shard restricts anything.
func (s Shard) Sharded() bool { return len(s.Namespaces) > 0 || s.LabelSelector != "" }

// Validate checks the namespaces and parses the selector.
func (s Shard) Validate() error {
	for _, ns := range s.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--watch-namespaces: %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	if s.LabelSelector != "" {
		if _, err := labels.Parse(s.LabelSelector); err != nil {
			return fmt.Errorf("--watch-label-selector %q: %w", s.LabelSelector, err)
		}
	}
	return nil
}

// CacheOptions restricts the manager's caches: every informer to the namespaces
// (cache.Options.DefaultNamespaces), and the informers of the CRs of reg that mapper serves
// to the label selector; the children are selected by namespace only, as they do not carry
// the CR's labels; Pods to those our builders label, trimmed to what is read (PodCache);
// the children without the managedFields of their status (TrimChild). (A
// Kind served later restarts the operator, see SetupKinds.)
func (s Shard) CacheOptions(reg kinds.Registry, group string, mapper meta.RESTMapper) (cache.Options, error) {
	var o cache.Options
	if err := s.Validate(); err != nil {
		return o, err
	}
	if len(s.Namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	pod := &corev1.Pod{}
	o.ByObject = map[client.Object]cache.ByObject{pod: PodCache()}
	seen := map[schema.GroupVersionKind]client.Object{corev1.SchemeGroupVersion.WithKind("Pod"): pod}
	if s.LabelSelector != "" {
		sel, _ := labels.Parse(s.LabelSelector)
		for _, e := range reg {
			gvk := e.GroupVersionKind(group)
			if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				continue
			}
			cr := e.New()
			o.ByObject[cr] = cache.ByObject{Label: sel}
			seen[gvk] = cr
		}
	}
	childCaches(o.ByObject, seen, reg, group, mapper)
	return o, nil
}

// LeaseID is the Lease name of the shard: base when not sharded, else base with a readable
// suffix of the shard and a hash of it, so that two shards never share a leader.
func (s Shard) LeaseID(base string) string {
	if !s.Sharded() {
		return base
	}
	ns := slices.Clone(s.Namespaces)
	slices.Sort(ns)
	key := strings.Join(ns, ",") + "|" + s.LabelSelector
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	readable := s.LabelSelector
	if i := strings.LastIndexAny(readable, "=!"); i >= 0 && i < len(readable)-1 {
		readable = readable[i+1:] // the value of key=value: shard1
	}
	if readable == "" || s.LabelSelector == "" {
		readable = strings.Join(ns, "-")
	}
	var b strings.Builder
	for _, r := range strings.ToLower(readable) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	slug := strings.Trim(b.String(), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		slug = "shard"
	}
	return fmt.Sprintf("%s-%s-%08x", base, slug, h.Sum32())
}
