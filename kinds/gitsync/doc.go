// Package gitsync holds GitSync, the git path's status object: one per universe, in the
// operator's namespace, written by the git sweep alone, whose conditions (Ready, Healthy,
// Reconciling, Stalled; kstatus vocabulary) summarize the health of everything the sweep
// applied, so `kubectl wait --for=condition=Ready gitsync/<name>` waits for git to be
// applied and healthy.
//
// +kubebuilder:object:generate=true
// +groupName=universe.placeholder
// +versionName=v1
package gitsync
