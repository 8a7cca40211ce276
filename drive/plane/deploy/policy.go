package deploy

import (
	"slices"
	"strings"
)

// The Argo CD RBAC vocabulary (util/rbac/rbac.go): a can-i for anything else is a bad request,
// not a "no".
var (
	rbacResources = []string{"clusters", "projects", "applications", "applicationsets", "repositories", "write-repositories",
		"certificates", "accounts", "gpgkeys", "logs", "exec", "extensions"}
	rbacActions = []string{"get", "create", "update", "delete", "sync", "rollback", "override", "action", "invoke"}
)

// The verbs the plane's routes need.
const (
	VerbGet       = "get"
	VerbSync      = "sync"
	VerbRollback  = "rollback"
	VerbReconcile = "action" // POST .../reconcile, an imperative like Argo CD's resource actions
)

// CanSeeApp is the one predicate over applications: an admin sees every application; an org
// member sees exactly those of its org, an application's org being its namespace's by
// kinds.Tenancy (Observed.Org: never the CR's own label alone). It is pure.
func CanSeeApp(id Identity, org string) bool {
	if id.Admin {
		return true
	}
	return id.Org != "" && org == id.Org
}

// CanMutate reports whether id may sync, roll back or reconcile: admins only.
func CanMutate(id Identity) bool { return id.Admin }

// CanI answers account/can-i/{resource}/{action}/{subresource} from the same predicate: an
// admin may do anything; an org member may only get applications of its own project (the
// project of an application is its org), its project, and the cluster. ok is false when the
// resource or action is not in Argo CD's vocabulary. It is pure.
func CanI(id Identity, resource, action, sub string) (allowed, ok bool) {
	if !slices.Contains(rbacResources, resource) || !slices.Contains(rbacActions, action) {
		return false, false
	}
	if id.Admin {
		return true, true
	}
	if action != VerbGet || id.Org == "" {
		return false, true
	}
	project, _, _ := strings.Cut(sub, "/")
	switch resource {
	case "applications", "projects":
		return project == id.Org || project == "*" || project == "", true
	case "clusters":
		return true, true
	}
	return false, true
}
