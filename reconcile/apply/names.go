package apply

import (
	"github.com/openuniverse/operator/kinds/condition"
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
