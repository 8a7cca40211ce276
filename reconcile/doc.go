// Package reconcile is the shell that composes the operator: it server-side applies
// desired objects through fluxcd/pkg/ssa, classifies and attributes drift, hosts the
// controller per Kind and the git sweep, and backs `operator render` and `operator diff`.
package reconcile
