package condition

// The registry of reasons: every condition reason and Event reason a controller of the
// operator writes, by controller. The controllers' own names for them are aliases of these.
// A reason is UpperCamelCase (a condition's reason must match the apiserver's pattern).

// The Kind controllers: the Ready condition's reasons (drive.Summarize); a change of Ready
// is also an Event with its reason.
const (
	ReasonAvailable   = "Available"   // every child is current
	ReasonNotReady    = "NotReady"    // children are still rolling out
	ReasonFailed      = "Failed"      // a child failed (e.g. ProgressDeadlineExceeded)
	ReasonBuildFailed = "BuildFailed" // the spec cannot be built
	ReasonApplyFailed = "ApplyFailed" // the apiserver refused a child, for a reason that may pass
	// ReasonReconcileFailed: a step of the reconcile other than the apply (reading the cache,
	// deleting a child) failed for a reason that lasts.
	ReasonReconcileFailed = "ReconcileFailed"
)

// The Kind controllers' and the git sweep's Events on an applied object or its CR.
const (
	EventDriftReverted = "DriftReverted" // Warning: someone else had changed the object
	EventApplyFailed   = "ApplyFailed"   // Warning: the apiserver refused the object
	EventOrphaned      = "Orphaned"      // Warning: the git sweep applied it, git no longer declares it (never pruned)
	// The takeover of another operator's children.
	EventAdopted            = "AdoptedChildren"    // Normal: existing children are now applied by this operator
	EventLeftover           = "LeftoverChildren"   // Warning: children left in place for the user to remove
	EventImmutableFieldKept = "ImmutableFieldKept" // Warning: live immutable values kept
	// The upgrade machine's revert of a failed image in git.
	EventRevertedInGit     = "UpgradeRevertedInGit"
	EventRevertInGitFailed = "UpgradeRevertInGitFailed"
)

// The upgrade machine's transitions (condition reasons and Events).
const (
	ReasonUpgradeBaselineAdopted = "UpgradeBaselineAdopted"
	ReasonUpgradeStarted         = "UpgradeStarted"
	ReasonUpgradePreflightPassed = "UpgradePreflightPassed"
	ReasonUpgradePreflightFailed = "UpgradePreflightFailed"
	ReasonUpgradeSucceeded       = "UpgradeSucceeded"
	ReasonUpgradeRollingBack     = "UpgradeRollingBack"
	ReasonUpgradeRolledBack      = "UpgradeRolledBack"
	ReasonUpgradeSuperseded      = "UpgradeSuperseded"
	ReasonUpgradeHaltedNoBase    = "UpgradeHaltedNoBaseline"
	ReasonUpgradeRollbackOverdue = "UpgradeRollbackOverdue"
	ReasonUpgradeStatusRepaired  = "UpgradeStatusRepaired"
)

// The apps drive loop's Events on the CR it drives.
const (
	EventDriveIntended       = "DriveIntended"       // Normal: dry-run, or not allow-listed
	EventDriven              = "Driven"              // Normal: written and rolled out
	EventDriveRolloutPending = "DriveRolloutPending" // Warning: written, not rolled out in time
	EventDriveFailed         = "DriveFailed"         // Warning: the write failed
)

// ImageUpdate's condition reasons; a change to a failing one is also an Event.
const (
	ReasonNoNewTag         = "NoNewTag"         // Ready: the file is at the newest allowed tag
	ReasonPushed           = "Pushed"           // Ready: a commit with the new tag was pushed
	ReasonPushRejected     = "PushRejected"     // Transient: the push lost every retry to other writers
	ReasonRegistryError    = "RegistryError"    // Transient: listing tags failed (outage, 401, 429)
	ReasonGitError         = "GitError"         // Transient: reading or writing the repository failed
	ReasonTagShapeMissing  = "TagShapeMissing"  // Idle: newer versions exist, none in the file's shape
	ReasonNoMatch          = "NoMatch"          // Blocked: the file has no site for the repository
	ReasonCurrentNotSemver = "CurrentNotSemver" // Blocked: the file's tag cannot be ordered
	ReasonCredentialsError = "CredentialsError" // Blocked: a named Secret is missing or malformed
	ReasonForeignFile      = "ForeignFile"      // Blocked: the file declares no object of the CR's namespace
	ReasonInvalidSpec      = "InvalidSpec"      // Terminal: the spec does not parse
)

// Every loop that reads a CR's Namespace for its org (ImageUpdate, AgentDeployment).
const (
	ReasonNamespaceUnreadable = "NamespaceUnreadable" // Transient: tenancy is unknown
)

// AgentDeployment's condition reasons.
const (
	ReasonAgentBound        = "Bound"             // Ready: the agent is bound and ready
	ReasonAgentNotReady     = "AgentNotReady"     // Progressing: bound, the agent not ready yet
	ReasonReadOnly          = "ReadOnly"          // Idle: no cloud API configured, or the mode only reads
	ReasonNoTarget          = "NoTarget"          // Idle: no machine named, and the mode may not launch one
	ReasonCloudError        = "CloudError"        // Transient: the cloud API failed
	ReasonVisorError        = "VisorError"        // Transient: visor failed
	ReasonLaunchFailed      = "LaunchFailed"      // Transient: visor could not launch a machine
	ReasonBindFailed        = "BindFailed"        // Transient: visor could not bind the agent
	ReasonStatusWriteFailed = "StatusWriteFailed" // Transient: the launched machine could not be recorded
	ReasonMachineNotFound   = "MachineNotFound"   // Blocked: visor knows no machine of spec.machineId
	ReasonMachineTaken      = "MachineTaken"      // Blocked: the machine is bound to another agent
)

// Reasons lists every reason of the registry (the tests check their shape and that no two
// controllers mean different things by one name).
var Reasons = []string{
	ReasonForbidden, ReasonRejected, ReasonError,
	ReasonAvailable, ReasonNotReady, ReasonFailed, ReasonBuildFailed, ReasonApplyFailed, ReasonReconcileFailed,
	EventDriftReverted, EventAdopted, EventLeftover, EventImmutableFieldKept, EventRevertedInGit, EventRevertInGitFailed,
	ReasonUpgradeBaselineAdopted, ReasonUpgradeStarted, ReasonUpgradePreflightPassed, ReasonUpgradePreflightFailed,
	ReasonUpgradeSucceeded, ReasonUpgradeRollingBack, ReasonUpgradeRolledBack, ReasonUpgradeSuperseded,
	ReasonUpgradeHaltedNoBase, ReasonUpgradeRollbackOverdue, ReasonUpgradeStatusRepaired,
	EventDriveIntended, EventDriven, EventDriveRolloutPending, EventDriveFailed,
	ReasonNoNewTag, ReasonPushed, ReasonPushRejected, ReasonRegistryError, ReasonGitError, ReasonTagShapeMissing,
	ReasonNoMatch, ReasonCurrentNotSemver, ReasonCredentialsError, ReasonForeignFile, ReasonInvalidSpec,
	ReasonNamespaceUnreadable,
	ReasonAgentBound, ReasonAgentNotReady, ReasonReadOnly, ReasonNoTarget, ReasonCloudError, ReasonVisorError, ReasonLaunchFailed,
	ReasonBindFailed, ReasonStatusWriteFailed, ReasonMachineNotFound, ReasonMachineTaken,
	EventOrphaned,
}
