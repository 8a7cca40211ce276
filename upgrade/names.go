package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Names are the deterministic names of one pre-flight's resources: the same CR and target
// always give the same names, so a restarted operator finds what it created.
type Names struct {
	// Hash is the first 8 hex digits of sha256(target), the value of LabelPreflightTarget.
	Hash     string
	Pod      string
	Clone    string
	Snapshot string
	Egress   string
}

// TargetHash is the first 8 hex digits of sha256(target).
func TargetHash(target string) string {
	sum := sha256.Sum256([]byte(target))
	return hex.EncodeToString(sum[:])[:8]
}

// NamesOf returns the names of the pre-flight of target for the CR named name:
// <name>-preflight-<hash8> and its -clone, -snap and -egress siblings. The CR name is cut so
// the longest of them fits a DNS label (63), so the four never collide.
func NamesOf(name, target string) Names {
	h := TargetHash(target)
	const longest = len("-preflight-") + 8 + len("-egress")
	if len(name) > 63-longest {
		name = strings.TrimRight(name[:63-longest], "-.")
	}
	base := name + "-preflight-" + h
	return Names{Hash: h, Pod: base, Clone: base + "-clone", Snapshot: base + "-snap", Egress: base + "-egress"}
}
