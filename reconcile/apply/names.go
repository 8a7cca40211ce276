package apply

import "github.com/openuniverse/operator/kinds/condition"

// Field managers: who the operator is in managedFields. Each layer applies under its own,
// so drift attribution and `kubectl get -o yaml --show-managed-fields` tell them apart.
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
)

// FieldOwnerGroup is the group fluxcd/pkg/ssa records as the owner of what it applies.
const FieldOwnerGroup = "openuniverse.dev"

// Event recorders: the reportingController of the Events each loop records.
const (
	RecorderKinds  = "universe-operator"
	RecorderGitOps = "universe-operator-gitops"
)

// Event reasons and actions. The Kind controllers also record the Ready condition's reason
// (drive.Reason*) when Ready changes.
const (
	EventDriftReverted = condition.EventDriftReverted // Warning: someone else had changed the object
	EventApplyFailed   = condition.EventApplyFailed   // Warning: the apiserver refused the object

	ActionApply     = "Apply"
	ActionReconcile = "Reconcile"
)

// ShardLabel is the label a CR carries to be reconciled by one shard, as Flux's
// sharding.fluxcd.io/key: a shard runs with --watch-label-selector=ShardLabel=<shard>, the
// main operator with !ShardLabel.
const ShardLabel = "sharding.universe.dev/key"
