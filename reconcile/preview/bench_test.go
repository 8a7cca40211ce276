package preview

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openuniverse/operator/e2e/testbed"
)

// BenchmarkPreviewOneFileOf1000: a preview of a 1-file change (a Service CR's tag) in a
// repository of 1 000 files, on the shared envtest apiserver: narrowing, parsing and
// building the changed file, the scope plan and the dry-runs of the CR and its children.
// Reading the two snapshots from git is not in it (source/gitclone's benchmarks).
func BenchmarkPreviewOneFileOf1000(b *testing.B) {
	cfg := testbed.APIServer(b)
	const ns = "preview-bench"
	c := setup(b, cfg, ns)
	p := previewer(b, c, ns)
	files := map[string]string{}
	for i := range 999 {
		files[fmt.Sprintf("apps/cm-%04d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%04d, namespace: %s}\ndata: {i: \"%d\"}\n", i, ns, i)
	}
	files["apps/web.yaml"] = serviceCR(ns, "v1")
	base := snapshot(strings.Repeat("b", 40), files)
	applyBase(b, c, p.Differ.Renderer, snapshot(strings.Repeat("b", 40), map[string]string{"apps/web.yaml": serviceCR(ns, "v1")}))
	files["apps/web.yaml"] = serviceCR(ns, "v2")
	head := snapshot(strings.Repeat("a", 40), files)
	b.ResetTimer()
	for range b.N {
		pv := p.Preview(context.Background(), base, head)
		if len(pv.Rolls) != 1 {
			b.Fatalf("rolls %+v", pv.Rolls)
		}
	}
}
