package main

import (
	"context"
	"strings"
	"testing"

	"github.com/openuniverse/operator/source"
)

// TestRunRefusesPreviewAtStart: --preview without what it needs exits at start, before it
// reaches a cluster, naming the missing flag.
func TestRunRefusesPreviewAtStart(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no commit status": {[]string{"--github-repository", "o/r", "--preview"}, "it needs --commit-status"},
		"no git source":    {[]string{"--preview", "--commit-status", "github", "--commit-status-token-file", "/t"}, "it needs the gitops loop (--controllers) and --git-url or --github-repository"},
		"gitops loop off": {[]string{"--controllers", "kinds", "--github-repository", "o/r", "--preview", "--commit-status", "github", "--commit-status-token-file", "/t"},
			"it needs the gitops loop"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := execute(t, "", append([]string{"run", "--kubeconfig", "/nonexistent"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, stderr, tc.want)
			}
		})
	}
}

// headOnly is a git source that reads the followed branch only.
type headOnly struct{}

func (headOnly) Head(context.Context) (string, error)                       { return "", nil }
func (headOnly) Snapshot(context.Context, string) (*source.Snapshot, error) { return nil, nil }

// TestPreviewNeedsARefResolver: a git source that cannot resolve a pull request's refs is
// refused, naming --preview.
func TestPreviewNeedsARefResolver(t *testing.T) {
	if _, err := previewRevisions(headOnly{}); err == nil || !strings.Contains(err.Error(), "--preview: the git source") {
		t.Fatalf("err %v", err)
	}
}
