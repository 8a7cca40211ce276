// Package drive summarizes observed state into the status written back on each custom
// resource (kstatus conditions, phase, ready replicas) and drives image rollouts behind
// safety gates.
package drive
