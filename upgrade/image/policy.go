package image

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// ArchSuffix is the per-architecture tag suffix of the reference's tag shapes.
const ArchSuffix = "-amd64"

// Policy chooses tags: "semver:<range>" (also a bare range; "" and "*" mean any release) or
// "regex:<expr>". A regex with a named capture group orders by the group's value, read as a
// version (so a build number or timestamp orders numerically); without one, by the tag's
// semver core.
type Policy struct {
	raw        string
	constraint *semver.Constraints // semver policies
	re         *regexp.Regexp      // regex policies
	group      int                 // capture group ordering a regex policy; 0 means the semver core
}

// DefaultPolicy is the policy of an ImageUpdate that names none.
const DefaultPolicy = "semver:*"

// ParsePolicy parses a policy string.
func ParsePolicy(s string) (*Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultPolicy
	}
	p := &Policy{raw: s}
	if expr, ok := strings.CutPrefix(s, "regex:"); ok {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", s, err)
		}
		p.re = re
		names := re.SubexpNames()
		for i, n := range names {
			if n == "version" { // preferred name
				p.group = i
				break
			}
		}
		if p.group == 0 {
			for i, n := range names {
				if n != "" {
					p.group = i
					break
				}
			}
		}
		return p, nil
	}
	rng := strings.TrimSpace(strings.TrimPrefix(s, "semver:"))
	if rng == "" {
		rng = "*"
	}
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", s, err)
	}
	p.constraint = c
	return p, nil
}

func (p *Policy) String() string { return p.raw }

// Shape is how a tag spells its version: an optional "v" before and an optional "-amd64"
// after the semver core.
type Shape struct {
	Prefix string // "" or "v"
	Suffix string // "" or ArchSuffix
}

// Tag is a tag parsed into its shape and semver core.
type Tag struct {
	Raw     string
	Shape   Shape
	Version *semver.Version
}

// ParseTag splits raw into shape and a strict semver core; ok is false when the core is not
// semver (latest, sha-…, 1.2).
func ParseTag(raw string) (Tag, bool) {
	t := Tag{Raw: raw}
	core := raw
	if c, ok := strings.CutSuffix(core, ArchSuffix); ok {
		core, t.Shape.Suffix = c, ArchSuffix
	}
	if c, ok := strings.CutPrefix(core, "v"); ok {
		core, t.Shape.Prefix = c, "v"
	}
	v, err := semver.StrictNewVersion(core)
	if err != nil {
		return Tag{}, false
	}
	t.Version = v
	return t, true
}

// Render spells v in shape s.
func (s Shape) Render(v *semver.Version) string { return s.Prefix + v.String() + s.Suffix }

// Reasons a selection cannot proceed; the controller maps them to conditions.
var (
	// ErrCurrentNotSemver: the file's current tag has no version the policy can order by, so
	// "newer" has no meaning; the CR is Degraded rather than guessing.
	ErrCurrentNotSemver = errors.New("current tag is not a version the policy can order")
)

// Selection is the outcome of Select.
type Selection struct {
	// Current is the tag the file holds.
	Current string
	// Tag is the tag to write: newer than Current, allowed by the policy, present in the
	// registry in the file's shape and passing the arch guard. Empty when none is.
	Tag string
	// Held names the newest newer version skipped because its tag in the file's shape (or
	// its -amd64 image) is missing from the registry; empty when none was.
	Held string
	// Failed counts the newer versions skipped because they are recorded as failed upgrades.
	Failed int
}

// Select picks the newest tag of tags that the policy allows and that is strictly newer than
// current, never one of failed (tags recorded as failed upgrades, by version), and only when
// the registry holds it in the shape current uses; when the repository publishes -amd64
// tags, a version also needs its -amd64 tag (the arch guard: a bare tag pushed before its
// per-arch image is not complete).
func Select(p *Policy, current string, tags, failed []string) (Selection, error) {
	sel := Selection{Current: current}
	cur, curKey, ok := p.key(current)
	if !ok {
		return sel, fmt.Errorf("%w: %q under policy %q", ErrCurrentNotSemver, current, p.raw)
	}
	failedTags, failedVersions := map[string]bool{}, map[string]bool{}
	for _, f := range failed {
		failedTags[f] = true
		if _, k, ok := p.key(f); ok {
			failedVersions[k.String()] = true
		}
	}
	type candidate struct {
		key  *semver.Version
		tags []Tag // the tags of this version
	}
	byVersion := map[string]*candidate{}
	amd64 := map[string]bool{} // semver cores with an -amd64 tag
	anyAmd64 := false
	for _, raw := range tags {
		if t, ok := ParseTag(raw); ok && t.Shape.Suffix == ArchSuffix {
			anyAmd64 = true
			amd64[t.Version.String()] = true
		}
		t, k, ok := p.key(raw)
		if !ok || !p.allows(t, k) || !k.GreaterThan(curKey) {
			continue
		}
		c := byVersion[k.String()]
		if c == nil {
			c = &candidate{key: k}
			byVersion[k.String()] = c
		}
		c.tags = append(c.tags, t)
	}
	cands := make([]*candidate, 0, len(byVersion))
	for _, c := range byVersion {
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].key.GreaterThan(cands[j].key) })
	for _, c := range cands {
		if failedVersions[c.key.String()] {
			sel.Failed++
			continue
		}
		tag := pick(c.tags, cur)
		if tag.Raw == "" || failedTags[tag.Raw] {
			if sel.Held == "" {
				sel.Held = fmt.Sprintf("%s has no tag in the shape of %q", c.tags[0].Raw, current)
			}
			continue
		}
		if anyAmd64 && tag.Version != nil && !amd64[tag.Version.String()] {
			if sel.Held == "" {
				sel.Held = fmt.Sprintf("%s has no %s image yet (arch guard)", tag.Raw, ArchSuffix)
			}
			continue
		}
		sel.Tag = tag.Raw
		return sel, nil
	}
	return sel, nil
}

// pick returns the tag of one version to write in current's shape: the one with the same
// prefix and suffix; for tags without a semver core (regex policies), the highest raw tag.
func pick(tags []Tag, cur Tag) Tag {
	if cur.Version == nil {
		sort.Slice(tags, func(i, j int) bool { return tags[i].Raw > tags[j].Raw })
		return tags[0]
	}
	for _, t := range tags {
		if t.Version != nil && t.Shape == cur.Shape {
			return t
		}
	}
	return Tag{}
}

// key parses raw under the policy: the tag (with its shape and semver core when it has
// one) and the version it orders by.
func (p *Policy) key(raw string) (Tag, *semver.Version, bool) {
	t, isSemver := ParseTag(raw)
	if p.re == nil {
		if !isSemver {
			return Tag{}, nil, false
		}
		return t, t.Version, true
	}
	m := p.re.FindStringSubmatch(raw)
	if m == nil {
		return Tag{}, nil, false
	}
	if !isSemver {
		t = Tag{Raw: raw}
	}
	if p.group == 0 {
		if !isSemver {
			return Tag{}, nil, false
		}
		return t, t.Version, true
	}
	v, err := semver.NewVersion(m[p.group])
	if err != nil {
		return Tag{}, nil, false
	}
	return t, v, true
}

// allows applies a semver policy's range (regex policies filtered in key).
func (p *Policy) allows(_ Tag, k *semver.Version) bool {
	return p.constraint == nil || p.constraint.Check(k)
}

// Newer reports whether tag orders strictly after current under the policy; false when
// either has no version the policy can order (then nothing is rewritten).
func Newer(p *Policy, tag, current string) bool {
	_, n, ok := p.key(tag)
	if !ok {
		return false
	}
	_, c, ok := p.key(current)
	return ok && n.GreaterThan(c)
}
