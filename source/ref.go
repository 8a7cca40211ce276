package source

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxBranchLength bounds a branch name (bytes); git allows more, no host we write to does.
const MaxBranchLength = 255

// ValidBranch reports whether name may be written as refs/heads/<name>: git's
// check-ref-format rules (git help check-ref-format, 1–10) for a branch, and what the write
// paths also put into a URL path (the GitHub git data API's refs/heads/<name>): no '%' or '#',
// valid UTF-8, at most MaxBranchLength bytes. A branch name from a CR (writebackRef,
// pushBranch) can therefore never walk the API path ("..") or name another kind of ref.
func ValidBranch(name string) error {
	bad := func(why string) error { return fmt.Errorf("branch %q: %s", name, why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxBranchLength:
		return fmt.Errorf("branch %.40q…: longer than %d bytes", name, MaxBranchLength)
	case !utf8.ValidString(name):
		return bad("not UTF-8")
	case name == "@" || name == "HEAD":
		return bad("reserved name")
	case strings.HasPrefix(name, "-"):
		return bad("begins with '-'")
	case strings.HasPrefix(name, "refs/"):
		return bad("a branch is named without refs/heads/")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("empty path component")
	case strings.HasSuffix(name, "."):
		return bad("ends with '.'")
	case strings.Contains(name, ".."):
		return bad("holds '..'")
	case strings.Contains(name, "@{"):
		return bad("holds '@{'")
	}
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f:
			return bad("holds a control character")
		case strings.ContainsRune(" ~^:?*[\\%#", r):
			return bad(fmt.Sprintf("holds %q", r))
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") || part == "@" {
			return bad("a component begins with '.', ends with '.lock' or is '@'")
		}
	}
	return nil
}
