package dir

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSource: a directory reads as one commit of a repository, with paths relative to
// it whichever way it is named, and a revision that moves with the content only.
func TestSource(t *testing.T) {
	dir := t.TempDir()
	write := func(p, data string) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/web.yaml", "kind: A\n")
	write("namespace.yml", "kind: B\n")
	write("README.md", "not a manifest\n")
	paths := func(src *Source) []string {
		snap, err := src.Snapshot(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range snap.Files {
			out = append(out, f.Path)
		}
		return out
	}
	abs, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	rel, err := New("./" + filepath.Base(dir) + "/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"apps/web.yaml", "namespace.yml"}
	for name, src := range map[string]*Source{"absolute": abs, "relative": rel} {
		if got := paths(src); !slices.Equal(got, want) {
			t.Errorf("%s: paths %q, want %q", name, got, want)
		}
	}
	r1, _ := abs.Head(context.Background())
	r2, _ := rel.Head(context.Background())
	if r1 != r2 {
		t.Errorf("revision depends on how the directory is named: %s, %s", r1, r2)
	}
	write("apps/web.yaml", "kind: C\n")
	changed, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r3, _ := changed.Head(context.Background()); r3 == r1 {
		t.Errorf("revision %s unchanged after an edit", r3)
	}
	if _, err := New(filepath.Join(dir, "apps", "web.yaml")); err == nil {
		t.Error("New accepted a file")
	}
}
