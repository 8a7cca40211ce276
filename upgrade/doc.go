// Package upgrade holds the health-gated upgrade state machine with automatic rollback
// and ImageUpdate, which bumps image tags in git.
package upgrade
