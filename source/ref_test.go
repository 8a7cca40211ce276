package source

import (
	"path"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestValidBranchRefusesWhatWalksTheAPIPath: the attack of issue 23 — a writebackRef or
// pushBranch with ".." walked the GitHub API path (repos/o/r/git/refs/heads/<branch>) to
// another repository — and git's check-ref-format rules.
func TestValidBranchRefusesWhatWalksTheAPIPath(t *testing.T) {
	for _, ok := range []string{"main", "release/1.2", "imageupdate/web", "feature-x", "v1.0", "ü"} {
		if err := ValidBranch(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "../../../other/repo/git/refs/heads/main", "a/../b", "main/..", "..", "a..b",
		".hidden", "a/.b", "x.lock", "a/b.lock/c", "a.", "/a", "a/", "a//b", "@", "HEAD", "a@{1}",
		"-rf", "refs/heads/main", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, "a\x00", "a\x7f", "a\n",
		"%2e%2e/x", "a#b", "\xff", strings.Repeat("a", MaxBranchLength+1),
	} {
		if err := ValidBranch(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (Change{Branch: "main", PushBranch: "../x", Paths: []string{"a"}, Edit: func(string, []byte) ([]byte, error) { return nil, nil }, Message: "m"}).Validate(); err == nil {
		t.Error("a Change with pushBranch ../x validated")
	}
	if err := (Change{Branch: "../../x", Paths: []string{"a"}, Edit: func(string, []byte) ([]byte, error) { return nil, nil }, Message: "m"}).Validate(); err == nil {
		t.Error("a Change with branch ../../x validated")
	}
}

// FuzzValidBranch: a name ValidBranch accepts is a valid branch ref for go-git too, and put
// into an API path it stays a path under refs/heads/ (path.Clean leaves it alone).
func FuzzValidBranch(f *testing.F) {
	for _, s := range []string{"main", "a/b", "../x", "a/./b", "%2e%2e", "x.lock", "a@{b", "ü/ö"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidBranch(name) != nil {
			return
		}
		if err := plumbing.NewBranchReferenceName(name).Validate(); err != nil {
			t.Fatalf("%q accepted, go-git refuses it: %v", name, err)
		}
		p := "/repos/o/r/git/refs/heads/" + name
		if path.Clean(p) != p || strings.ContainsAny(name, "%#?") {
			t.Fatalf("%q accepted, it moves the API path: %s", name, path.Clean(p))
		}
	})
}
