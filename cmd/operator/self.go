package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleetv1 "github.com/openuniverse/operator/kinds/fleet"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/install"
)

// self names the operator's own objects in its namespace, which git may never write:
// the Deployment and ServiceAccount, the leader-election RBAC, every Lease (the leader
// election's, whatever --leader-election-id says), the webhook relay ConfigMap, the
// Service, and the Secrets holding the webhook secret and the git token (named by
// --gitops-protected-secrets); and the operator's identity (see gitops.Self).
func self(namespace, group string, secrets []string) gitops.Self {
	gk := func(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
	objs := []gitops.SelfObject{
		{GroupKind: gk("apps", "Deployment"), Name: install.OperatorName},
		{GroupKind: gk("", "ServiceAccount"), Name: install.OperatorName},
		{GroupKind: gk("rbac.authorization.k8s.io", "Role"), Name: install.LeaderElectionRole},
		{GroupKind: gk("rbac.authorization.k8s.io", "RoleBinding"), Name: install.LeaderElectionRole},
		{GroupKind: gk("coordination.k8s.io", "Lease")},
		{GroupKind: gk("", "ConfigMap"), Name: install.WebhookRelay},
		{GroupKind: gk("", "ConfigMap"), Name: install.GitOpsInventory},
		{GroupKind: gk("", "ConfigMap"), Name: install.GitOpsSuspend},
		{GroupKind: gk("", "Service"), Name: install.OperatorName},
	}
	for _, s := range secrets {
		objs = append(objs, gitops.SelfObject{GroupKind: gk("", "Secret"), Name: s})
	}
	// and its identity: no pod runs as its ServiceAccount, nothing binds its roles or to it
	return gitops.Self{Namespace: namespace, Objects: objs, ServiceAccount: install.OperatorName,
		ClusterRoles: []string{install.ClusterRoleName(group)}, Roles: []string{install.LeaderElectionRole, install.RoleName(group)},
		Registry: gk(group, fleetv1.Kind)}
}

// defaultProtectedSecrets are the Secrets the install docs mount the webhook secret and
// the git token from.
var defaultProtectedSecrets = []string{install.OperatorName + "-webhook", install.OperatorName + "-git", install.OperatorName + "-token"}
