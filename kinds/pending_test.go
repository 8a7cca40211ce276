package kinds_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/openuniverse/operator/kinds"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// pendingByDesign reads the Kinds kinds/README.md names under "### Pending by design": the
// bullets "* `<Ref>` — <reason>", each with its reason.
func pendingByDesign(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bullet := regexp.MustCompile("^\\* `([^`]+)` — (.+)$")
	out := map[string]string{}
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = line == "### Pending by design"
			continue
		}
		if m := bullet.FindStringSubmatch(line); in && m != nil {
			out[m[1]] = m[2]
		}
	}
	if len(out) == 0 {
		t.Fatal("kinds/README.md names no Kind under \"### Pending by design\"")
	}
	return out
}

// TestPendingByDesign enumerates the registry: a Kind whose builder halts Pending on every
// golden case (it materializes nothing, whatever the CR says) must be one kinds/README.md
// names as acting outside the cluster by design, with its reason; and every Kind named there
// must still be such a builder (the list never goes stale).
func TestPendingByDesign(t *testing.T) {
	reg := kinds.Builtin()
	cases := map[kinds.Ref][]bool{} // per Kind: whether each golden case halted Pending
	for _, c := range goldenCases(t) {
		e, ok := reg.Lookup(c.Obj.GroupVersionKind(), kinds.DefaultAPIGroup)
		if !ok {
			continue // TestGoldenCoversEveryKind reports it
		}
		_, err := reg.Build(c.Obj, c.ctx())
		h, halted := kinds.AsHalt(err)
		ref := kinds.Ref{Placement: e.Placement, Kind: e.Kind}
		cases[ref] = append(cases[ref], halted && h.Phase == v1.PhasePending)
	}
	named := pendingByDesign(t)
	var pending []string
	for ref := range reg {
		if c := cases[ref]; len(c) > 0 && !slices.Contains(c, false) {
			pending = append(pending, ref.String())
		}
	}
	sort.Strings(pending)
	for _, ref := range pending {
		if named[ref] == "" {
			t.Errorf("%s materializes nothing on any golden case (Pending) and kinds/README.md does not name it under \"Pending by design\" with its reason", ref)
		}
	}
	for ref := range named {
		if !slices.Contains(pending, ref) {
			t.Errorf("kinds/README.md names %s as Pending by design, but it is not a Pending builder (or not a registry Kind)", ref)
		}
	}
	t.Logf("Pending by design: %v", pending)
}
