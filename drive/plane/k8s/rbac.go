package k8s

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// Grant is one verb on one resource (resource/subresource) of one API group.
type Grant struct {
	APIGroup, Resource, Verb string
}

func (g Grant) String() string {
	gr := g.Resource
	if g.APIGroup != "" {
		gr += "." + g.APIGroup
	}
	return g.Verb + " " + gr
}

// Grants is the kind table: what each op needs on a registered cluster, its declared rules
// and, for resources.*, its verbs on every kind of the closed set.
func Grants(kinds []ops.Kind) map[string][]Grant {
	out := map[string][]Grant{}
	for _, op := range ops.All {
		var gs []Grant
		for _, r := range op.Rules {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					gs = append(gs, Grant{r.APIGroup, res, v})
				}
			}
		}
		for _, v := range ops.ResourceVerbs[op.Name] {
			for _, k := range kinds {
				gv, _ := schema.ParseGroupVersion(k.APIVersion)
				gs = append(gs, Grant{gv.Group, k.Resource, v})
			}
		}
		out[op.Name] = gs
	}
	return out
}

// ClusterRole is the plane's ceiling on a registered cluster: the union of Grants, one rule
// per API group and verb set, sorted. Bind it (or, on a shared cluster, a namespaced Role
// of its namespaced rules) to the ServiceAccount whose kubeconfig is registered.
func ClusterRole(name string, kinds []ops.Kind) *rbacv1.ClusterRole {
	byGR := map[[2]string][]string{} // group, resource -> verbs
	for _, gs := range Grants(kinds) {
		for _, g := range gs {
			k := [2]string{g.APIGroup, g.Resource}
			if !slices.Contains(byGR[k], g.Verb) {
				byGR[k] = append(byGR[k], g.Verb)
			}
		}
	}
	type key struct{ group, verbs string }
	rules := map[key][]string{}
	for gr, verbs := range byGR {
		slices.Sort(verbs)
		k := key{gr[0], strings.Join(verbs, ",")}
		rules[k] = append(rules[k], gr[1])
	}
	keys := make([]key, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.group+"|"+a.verbs, b.group+"|"+b.verbs) })
	cr := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, k := range keys {
		res := rules[k]
		slices.Sort(res)
		cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: res, Verbs: strings.Split(k.verbs, ",")})
	}
	return cr
}

// Kinds is the plane's closed set of kinds.
func (p *Plane) Kinds() []ops.Kind { return slices.Clone(p.kinds) }

// GrantOf is the grant a request to the apiserver at method and path needs (the
// apiserver's own request-info rules, for the paths the ops use): the verb (get, list,
// watch, create, patch, update, delete), group and resource[/subresource]. ok is false for
// discovery and /version.
func GrantOf(method, path string, query map[string][]string) (Grant, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return Grant{}, false
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return Grant{}, false
	}
	resource, named := rest[0], len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := ""
	switch method {
	case "GET", "HEAD":
		switch {
		case len(query["watch"]) > 0 && query["watch"][0] == "true":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case "POST":
		verb = "create"
	case "PATCH":
		verb = "patch"
	case "PUT":
		verb = "update"
	case "DELETE":
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	}
	return Grant{APIGroup: group, Resource: resource, Verb: verb}, true
}
