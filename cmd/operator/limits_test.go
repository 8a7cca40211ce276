package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/openuniverse/operator/source"
)

// TestLimitFlagsOnEveryReader: a file past a limit is refused with an error naming the flag
// that raises it (--gitops-max-files …); every command that reads manifests has that flag
// (operator up refused the 10 001st file of a repository and had no flag to raise it).
func TestLimitFlagsOnEveryReader(t *testing.T) {
	snap := &source.Snapshot{Files: []source.File{
		{Path: "a.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n")},
		{Path: "b.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: x}\n")},
	}}
	_, errs := source.ParseLimited(snap, source.Limits{Files: 1})
	if len(errs) != 1 || !errors.Is(errs[0].Err, source.ErrTooManyFiles) || !strings.Contains(errs[0].Error(), "--gitops-max-files") {
		t.Fatalf("past the file limit: %v, want one error naming --gitops-max-files", errs)
	}
	root := newRootCommand()
	for _, name := range []string{"run", "up", "render", "diff"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Fatalf("command %s: %v", name, err)
		}
		for _, flag := range []string{"gitops-max-files", "gitops-max-file-bytes", "gitops-max-snapshot-bytes", "gitops-max-documents"} {
			if cmd.Flags().Lookup(flag) == nil {
				t.Errorf("operator %s has no --%s, which its refusals name", name, flag)
			}
		}
	}
}
