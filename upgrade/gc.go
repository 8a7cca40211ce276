package upgrade

import (
	"time"
)

// Defaults of the orphan collector of pre-flight resources.
const (
	DefaultGCInterval = 600 * time.Second
	MinGCInterval     = 30 * time.Second
	DefaultGCGrace    = 300 * time.Second
)

// OwnerState is what the collector learned about the CR a pre-flight resource belongs to.
type OwnerState struct {
	// Known is false when the owner could not be read (an API error): its resources are kept.
	Known bool
	// InFlight is the target hash of the owner's pre-flight in flight (status.upgrade.phase
	// Preflighting), empty when none is or the owner is gone.
	InFlight string
}

// Resource is a pre-flight resource as listed.
type Resource struct {
	Labels map[string]string
	// Created is the creation timestamp; zero when missing (counts as old).
	Created time.Time
}

// Collect decides whether a pre-flight resource is an orphan to delete. Fail-closed: a
// resource younger than grace (its owner's status may not show it yet), or whose owner's state
// is unknown, is kept. Otherwise it is an orphan unless its target hash is the one its owner
// is pre-flighting now.
func Collect(r Resource, o OwnerState, now time.Time, grace time.Duration) (bool, string) {
	hash := r.Labels[LabelPreflightTarget]
	switch {
	case r.Labels[LabelPreflightOf] == "":
		return false, "not a pre-flight resource"
	case !r.Created.IsZero() && now.Sub(r.Created) < grace:
		return false, "younger than the grace window"
	case !o.Known:
		return false, "owner state unknown"
	case o.InFlight == "":
		return true, "owner has no pre-flight in flight"
	case hash != o.InFlight:
		return true, "superseded pre-flight"
	}
	return false, "current pre-flight"
}

// GCInterval resolves the collector's period: the default when unset, floored at 30 s.
func GCInterval(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultGCInterval
	case d < MinGCInterval:
		return MinGCInterval
	}
	return d
}
