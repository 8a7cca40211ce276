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
	// a Kind a loop acts for says so, never NotImplemented: README names the loop and the words
	for ref, e := range reg {
		if e.Loop == "" {
			continue
		}
		if w := "handled by the `" + e.Loop + "` loop"; !strings.Contains(named[ref.String()], w) {
			t.Errorf("kinds/README.md's bullet for %s (%q) lacks %q", ref, named[ref.String()], w)
		}
	}
	for ref := range named {
		if !slices.Contains(pending, ref) {
			t.Errorf("kinds/README.md names %s as Pending by design, but it is not a Pending builder (or not a registry Kind)", ref)
		}
	}
	t.Logf("Pending by design: %v", pending)
}

// TestLoopKindSaysWhetherItsLoopRuns: every Kind a loop acts for (Entry.Loop) halts Pending,
// HandledByLoop, saying "handled by the <loop> loop (enabled)" when the build Context runs
// that loop and "(off)", naming the flag that enables it, when it does not; never
// NotImplemented (it is implemented, by the loop).
func TestLoopKindSaysWhetherItsLoopRuns(t *testing.T) {
	reg := kinds.Builtin()
	seen := map[string]bool{}
	for _, c := range goldenCases(t) {
		e, ok := reg.Lookup(c.Obj.GroupVersionKind(), kinds.DefaultAPIGroup)
		if !ok || e.Loop == "" {
			continue
		}
		seen[e.Kind] = true
		for _, tc := range []struct {
			loops []string
			want  string
		}{
			{nil, "handled by the " + e.Loop + " loop (off): "},
			{[]string{"kinds", "gitops"}, "handled by the " + e.Loop + " loop (off): "},
			{[]string{"kinds", e.Loop}, "handled by the " + e.Loop + " loop (enabled): "},
		} {
			ctx := c.ctx()
			ctx.Loops = tc.loops
			objs, err := reg.Build(c.Obj, ctx)
			h, halted := kinds.AsHalt(err)
			if !halted || len(objs) != 0 {
				t.Fatalf("%s with loops %v: %d objects, err %v; want a Halt and nothing built", c.Name, tc.loops, len(objs), err)
			}
			if h.Phase != v1.PhasePending || h.Reason != kinds.ReasonHandledByLoop || !strings.Contains(h.Message, tc.want) {
				t.Errorf("%s with loops %v: %s %s %q, want Pending %s containing %q", c.Name, tc.loops, h.Phase, h.Reason, h.Message, kinds.ReasonHandledByLoop, tc.want)
			}
			if off := !slices.Contains(tc.loops, e.Loop); off && !strings.Contains(h.Message, "--controllers ...,"+e.Loop) {
				t.Errorf("%s off: %q does not name the flag that enables %s", c.Name, h.Message, e.Loop)
			}
		}
	}
	for _, k := range []string{"AgentDeployment", "ImageUpdate"} {
		if !seen[k] {
			t.Errorf("no golden case of %s, a loop-driven Kind", k)
		}
	}
}
