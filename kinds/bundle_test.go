package kinds_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openuniverse/operator/kinds"
)

var update = flag.Bool("update", false, "rewrite the committed CRD bundles under crd/bundles")

// TestBundles keeps the committed bundles equal to Bundle(group); go generate ./kinds runs it
// with -update.
func TestBundles(t *testing.T) {
	for _, group := range universes {
		t.Run(group, func(t *testing.T) {
			got, err := kinds.Bundle(group)
			if err != nil {
				t.Fatalf("Bundle(%s): %v", group, err)
			}
			path := filepath.Join("crd", "bundles", group+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read %s (run go generate ./kinds): %v", path, err)
			}
			if string(want) != string(got) {
				t.Errorf("%s is stale; run go generate ./kinds:\n%s", path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}

func TestBundleRejectsBadGroup(t *testing.T) {
	for _, group := range []string{"", "nodot", "Upper.Case", "bootno.de", "x.bootno.de", "-bad.io"} {
		if _, err := kinds.Bundle(group); err == nil {
			t.Errorf("Bundle(%q): no error", group)
		}
	}
}
