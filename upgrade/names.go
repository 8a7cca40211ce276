package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/openuniverse/operator/kinds"
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

// SplitImage is the repository and tag an ImageSpec holds for the image reference ref
// (kinds.ImageSpecParts): Repository + ":" + Tag (Repository alone without a tag) is ref
// again; a digest rides with the tag, or with the repository when there is no tag; a registry
// port is never a tag; a reference that does not parse is the repository whole.
func SplitImage(ref string) (repository, tag string) { return kinds.ImageSpecParts(ref) }
