package kinds

import "github.com/openuniverse/operator/kinds/condition"

// Field managers: who the operator is in managedFields. Each loop writes under its own, so
// drift attribution and `kubectl get -o yaml --show-managed-fields` tell them apart. This is
// the one list: every loop names its manager from here. The values never change: CRs and
// objects in clusters carry them in managedFields, and drift attribution, the sweep's
// git-sourced check and uninstall read them back.
const (
	// ManagerKinds applies the children each Kind builds.
	ManagerKinds = "universe-operator"
	// ManagerGitOps applies the custom resources read from git.
	ManagerGitOps = "universe-operator-gitops"
	// ManagerStatus writes the status of the CRs (server-side apply of the status
	// subresource), apart from the spec managers.
	ManagerStatus = condition.ManagerStatus
	// ManagerInstall applies what `operator install` installs.
	ManagerInstall = "universe-operator-install"
	// ManagerWebhook writes the ConfigMap through which a standby hands a push webhook to
	// the leader.
	ManagerWebhook = "universe-operator-webhook"
	// ManagerUpgrade creates the upgrade machine's pre-flight resources.
	ManagerUpgrade = "universe-operator-upgrade"
	// ManagerDrive owns a CR's spec.image.tag when the apps drive loop writes it.
	ManagerDrive = "universe-operator-drive"
	// ManagerTenants applies a tenant Namespace's RoleBinding and pull Secret.
	ManagerTenants = "universe-operator-tenants"
	// ManagerDeployPlane patches a CR's spec.image or annotations for the /v1/deploy plane
	// (a rollback or sync of a CR that did not come from git).
	ManagerDeployPlane = "universe-deploy-plane"
	// ManagerFleetKinds writes the KindControllers condition of a registered Cluster: whether
	// the Kind controllers run on it, and which namespaces they watch.
	ManagerFleetKinds = "universe-operator-fleet-kinds"
	// ManagerK8sPlane writes what an op of the /v1/k8s cluster plane writes on a registered
	// cluster (a cordon, a claim's size, an applied object of the closed set of kinds).
	ManagerK8sPlane = "universe-k8s-plane"
	// ManagerCLI writes the git path's suspend ConfigMap (operator suspend / resume) and
	// drops deleted orphans from its inventory (operator orphans --delete).
	ManagerCLI = "universe-operator-cli"
)
