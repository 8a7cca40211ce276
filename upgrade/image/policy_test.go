package image

import (
	"errors"
	"testing"
)

func TestParseTagShapes(t *testing.T) {
	cases := []struct {
		raw            string
		ok             bool
		prefix, suffix string
		version        string
	}{
		{"1.2.3", true, "", "", "1.2.3"},
		{"v1.2.3", true, "v", "", "1.2.3"},
		{"v1.2.3-amd64", true, "v", ArchSuffix, "1.2.3"},
		{"1.2.3-amd64", true, "", ArchSuffix, "1.2.3"},
		{"1.2.3-rc.1", true, "", "", "1.2.3-rc.1"},
		{"v1.2.3-rc.1-amd64", true, "v", ArchSuffix, "1.2.3-rc.1"},
		{"latest", false, "", "", ""},
		{"sha-abc123", false, "", "", ""},
		{"1.2", false, "", "", ""}, // strict: a partial version is not a release tag
		{"vv1.2.3", false, "", "", ""},
		{"", false, "", "", ""},
	}
	for _, c := range cases {
		tag, ok := ParseTag(c.raw)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.raw, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if tag.Shape.Prefix != c.prefix || tag.Shape.Suffix != c.suffix || tag.Version.String() != c.version {
			t.Errorf("%q: %+v %s", c.raw, tag.Shape, tag.Version)
		}
		if got := tag.Shape.Render(tag.Version); got != c.raw {
			t.Errorf("%q renders back as %q", c.raw, got)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"", "*", "semver:*", "semver:>=1.2.0 <2.0.0", ">=1.2, <2", "~1.4", "semver:^2.0.0-0", "regex:^v\\d+", "regex:^main-(?P<ts>\\d+)$"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"semver:>>1", "regex:(", "semver:not-a-range"} {
		if _, err := ParsePolicy(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestSelect(t *testing.T) {
	cases := []struct {
		name    string
		policy  string
		current string
		tags    []string
		failed  []string
		want    string
		held    bool
		failedN int
		err     error
	}{
		{name: "newest semver, bare repo", policy: "semver:*", current: "1.0.0",
			tags: []string{"1.0.0", "1.1.0", "1.10.0", "1.9.0", "latest", "sha-abc"}, want: "1.10.0"},
		{name: "respects the range's upper bound", policy: "semver:>=1.0.0 <2.0.0", current: "1.0.0",
			tags: []string{"1.2.0", "2.0.0", "3.1.0"}, want: "1.2.0"},
		{name: "bare range without prefix", policy: "~1.4", current: "1.4.0", tags: []string{"1.4.7", "1.5.0"}, want: "1.4.7"},
		{name: "never below the current tag", policy: "semver:*", current: "2.0.0",
			tags: []string{"1.0.0", "1.9.9", "2.0.0"}, want: ""},
		{name: "never a pre-release unless asked", policy: "semver:*", current: "1.0.0",
			tags: []string{"1.1.0-rc.1", "2.0.0-beta"}, want: ""},
		{name: "pre-release when the range asks", policy: "semver:>=1.1.0-0", current: "1.0.0",
			tags: []string{"1.1.0-rc.1", "1.0.5"}, want: "1.1.0-rc.1"},
		{name: "keeps the v prefix of the file", policy: "semver:*", current: "v1.0.0",
			tags: []string{"1.2.0", "v1.1.0"}, want: "v1.1.0", held: true},
		{name: "arch guard writes the amd64 shape for a suffixed file", policy: "semver:*", current: "v1.0.0-amd64",
			tags: []string{"v1.0.0-amd64", "v1.1.0", "v1.1.0-amd64", "v1.2.0"}, want: "v1.1.0-amd64", held: true},
		{name: "arch guard skips a dangling bare tag", policy: "semver:*", current: "v1.0.0",
			tags: []string{"v1.0.0", "v1.0.0-amd64", "v1.1.0", "v1.1.0-amd64", "v1.2.0"}, want: "v1.1.0", held: true},
		{name: "only a partial bare push: nothing", policy: "semver:*", current: "v1.0.0",
			tags: []string{"v1.0.0-amd64", "v1.1.0"}, want: "", held: true},
		{name: "missing shape: only bare tags for a suffixed file", policy: "semver:*", current: "1.0.0-amd64",
			tags: []string{"1.0.0-amd64", "1.1.0", "1.2.0"}, want: "", held: true},
		{name: "a failed tag is never proposed", policy: "semver:*", current: "1.0.0",
			tags: []string{"1.1.0", "1.2.0"}, failed: []string{"1.2.0"}, want: "1.1.0", failedN: 1},
		{name: "a failed version in another shape", policy: "semver:*", current: "v1.0.0-amd64",
			tags: []string{"v1.1.0-amd64", "v1.2.0-amd64"}, failed: []string{"v1.2.0"}, want: "v1.1.0-amd64", failedN: 1},
		{name: "regex filters, then semver orders", policy: `regex:^v1\.\d+\.\d+$`, current: "v1.0.0",
			tags: []string{"v1.3.0", "v1.20.0", "v2.0.0", "v1.9.0-rc1"}, want: "v1.20.0"},
		{name: "regex with a named extract orders by it", policy: `regex:^main-(?P<ts>\d+)-[0-9a-f]+$`, current: "main-100-aaa",
			tags: []string{"main-99-bbb", "main-1000-ccc", "main-200-ddd", "feature-5000-eee"}, want: "main-1000-ccc"},
		{name: "regex extract named version wins", policy: `regex:^(?P<build>b)(?P<version>\d+\.\d+\.\d+)$`, current: "b1.0.0",
			tags: []string{"b1.2.0", "b1.10.0"}, want: "b1.10.0"},
		{name: "non-semver current tag", policy: "semver:*", current: "latest", tags: []string{"1.0.0"}, err: ErrCurrentNotSemver},
		{name: "current outside the regex", policy: `regex:^main-(?P<ts>\d+)$`, current: "v1", tags: []string{"main-5"}, err: ErrCurrentNotSemver},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePolicy(c.policy)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := Select(p, c.current, c.tags, c.failed)
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if sel.Tag != c.want || (sel.Held != "") != c.held || sel.Failed != c.failedN {
				t.Fatalf("selected %+v; want tag %q held %v failed %d", sel, c.want, c.held, c.failedN)
			}
		})
	}
}

// FuzzSelect: whatever the tags, a selected tag is in the list, is strictly newer than the
// current one, keeps its shape and is not a failed one.
func FuzzSelect(f *testing.F) {
	f.Add("semver:*", "v1.0.0", "v1.1.0,v1.2.0-amd64,latest,v0.9.0", "v1.1.0")
	f.Add("regex:^(?P<n>\\d+)$", "10", "9,11,100,abc", "")
	f.Add("semver:>=1.0.0-0", "1.0.0-amd64", "1.0.1-amd64,1.0.1,2.0.0-rc.1-amd64", "")
	f.Fuzz(func(t *testing.T, policy, current, tagList, failed string) {
		p, err := ParsePolicy(policy)
		if err != nil {
			return
		}
		tags := splitComma(tagList)
		sel, err := Select(p, current, tags, splitComma(failed))
		if err != nil || sel.Tag == "" {
			return
		}
		found := false
		for _, tg := range tags {
			found = found || tg == sel.Tag
		}
		if !found {
			t.Fatalf("selected %q is not among the tags", sel.Tag)
		}
		for _, fl := range splitComma(failed) {
			if fl == sel.Tag {
				t.Fatalf("selected failed tag %q", sel.Tag)
			}
		}
		_, curKey, _ := p.key(current)
		nt, newKey, ok := p.key(sel.Tag)
		if !ok || !newKey.GreaterThan(curKey) {
			t.Fatalf("selected %q is not newer than %q", sel.Tag, current)
		}
		if ct, ok := ParseTag(current); ok && nt.Version != nil && ct.Shape != nt.Shape {
			t.Fatalf("selected %q changes the shape of %q", sel.Tag, current)
		}
	})
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
