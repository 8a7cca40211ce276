package gitops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/reconcile/apply"
)

func orderApply(file, name, wave string) Apply {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	if wave != "" {
		u.SetAnnotations(map[string]string{SyncWaveAnnotation: wave})
	}
	return Apply{File: file, Doc: 1, Object: u}
}

func spec(file, body string) PathSpec { return ParsePathSpec(file, []byte(body)) }

// render prints the steps as "path@wave[names] needs{...} refused" for comparison.
func render(o Order, applies []Apply) []string {
	var out []string
	for _, st := range o.Steps {
		var names []string
		for _, i := range st.Items {
			names = append(names, applies[i].Object.GetName())
		}
		line := fmt.Sprintf("%s@%d%v", st.Path, st.Wave, names)
		if len(st.Needs) > 0 {
			line += fmt.Sprintf(" needs%v", st.Needs)
		}
		if st.Refused != "" {
			line += " " + string(st.Refused)
		}
		out = append(out, line)
	}
	return out
}

func TestOrderPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applies []Apply
		specs   []PathSpec
		want    []string
		skips   []string // reason: object
		message string   // a substring of the first refused step's message
	}{{
		name:    "no path files, no waves: one step, as concurrent as before",
		applies: []Apply{orderApply("a/x.yaml", "x", ""), orderApply("b/y.yaml", "y", "")},
		want:    []string{".@0[x y]"},
	}, {
		name: "argo waves as written: negative first, no annotation is 0",
		applies: []Apply{
			orderApply("x.yaml", "late", "5"), orderApply("x.yaml", "plain", ""),
			orderApply("x.yaml", "early", "-1"), orderApply("x.yaml", "also-early", " -1 "),
		},
		want: []string{".@-1[early also-early]", ".@0[plain] needs[0]", ".@5[late] needs[0 1]"},
	}, {
		name: "dependsOn orders paths whatever their names, and is transitive",
		applies: []Apply{
			orderApply("apps/web/d.yaml", "web", ""), orderApply("apps/api/d.yaml", "api", ""),
			orderApply("infra/db/d.yaml", "db", ""), orderApply("README-dir/other.yaml", "other", ""),
		},
		specs: []PathSpec{
			spec("apps/web/.universe.yaml", "dependsOn: [apps/api]"),
			spec("apps/api/.universe.yaml", "dependsOn: [./infra/db/]"),
			spec("infra/db/.universe.yaml", "{}"),
		},
		want: []string{".@0[other]", "infra/db@0[db]", "apps/api@0[api] needs[1]", "apps/web@0[web] needs[1 2]"},
	}, {
		name:    "a subdirectory without its own file belongs to its ancestor's path",
		applies: []Apply{orderApply("infra/db/sub/deep/x.yaml", "deep", ""), orderApply("top.yaml", "top", "")},
		specs:   []PathSpec{spec("infra/db/.universe.yaml", "")},
		want:    []string{".@0[top]", "infra/db@0[deep]"},
	}, {
		name:    "a cycle is refused by name, and so is what depends on it",
		applies: []Apply{orderApply("a/x.yaml", "a", ""), orderApply("b/x.yaml", "b", ""), orderApply("c/x.yaml", "c", "")},
		specs: []PathSpec{
			spec("a/.universe.yaml", "dependsOn: [b]"), spec("b/.universe.yaml", "dependsOn: [a]"),
			spec("c/.universe.yaml", "dependsOn: [a]"),
		},
		want:    []string{"a@0[a] DependencyCycle", "b@0[b] needs[0] DependencyCycle", "c@0[c] needs[0 1] DependencyCycle"},
		message: "a → b → a",
	}, {
		name:    "a dependency no path file declares",
		applies: []Apply{orderApply("a/x.yaml", "a", "")},
		specs:   []PathSpec{spec("a/.universe.yaml", "dependsOn: [nowhere]")},
		want:    []string{"a@0[a] DependencyNotFound"},
		message: "depends on nowhere",
	}, {
		name:    "a typo in the path file refuses the path, never drops the order silently",
		applies: []Apply{orderApply("a/x.yaml", "a", "")},
		specs:   []PathSpec{spec("a/.universe.yaml", "dependOn: [b]")},
		want:    []string{"a@0[a] InvalidPathFile"},
	}, {
		name:    "a wave that is not an integer is a skip naming the object",
		applies: []Apply{orderApply("x.yaml", "bad", "first"), orderApply("x.yaml", "good", "")},
		want:    []string{".@0[good]"},
		skips:   []string{"InvalidSyncWave: ConfigMap ns/bad"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o, skips := OrderPlan(tc.applies, tc.specs)
			if diff := cmp.Diff(tc.want, render(o, tc.applies)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			var got []string
			for _, s := range skips {
				got = append(got, string(s.Reason)+": "+s.Object())
			}
			if diff := cmp.Diff(tc.skips, got); diff != "" {
				t.Errorf("skips (-want +got):\n%s", diff)
			}
			if tc.message != "" {
				found := false
				for _, st := range o.Steps {
					found = found || strings.Contains(st.Message, tc.message)
				}
				if !found {
					t.Errorf("no refused step says %q: %+v", tc.message, o.Steps)
				}
			}
		})
	}
}

func TestHold(t *testing.T) {
	applies := []Apply{orderApply("db/x.yaml", "db", ""), orderApply("web/x.yaml", "web", ""),
		orderApply("web/x.yaml", "web-late", "1")}
	specs := []PathSpec{spec("db/.universe.yaml", ""), spec("web/.universe.yaml", "dependsOn: [db]")}
	o, _ := OrderPlan(applies, specs)
	// steps: db@0, web@0, web@1
	res := func(a ...apply.Action) []apply.Result {
		out := make([]apply.Result, len(a))
		for i, x := range a {
			out[i] = apply.Result{Object: apply.RefOf(applies[i].Object), Action: x}
			if x == Suspended {
				out[i].Message = "path db is suspended: git or the cluster changed it, " + suspendedDrift
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		step    int
		results []apply.Result
		want    Reason
		msg     string
	}{
		{"applied dependency lets the dependent go", 1, res(apply.Created, "", ""), "", ""},
		{"in sync counts as ready", 1, res(apply.InSync, "", ""), "", ""},
		{"a failed dependency holds its dependent, naming it", 1, res(apply.Failed, "", ""), ReasonDependencyNotReady, "path db is not ready (ConfigMap/ns/db ERROR)"},
		{"a denied dependency holds", 1, res(apply.Denied, "", ""), ReasonDependencyNotReady, "DENIED"},
		{"held is transitive", 2, res(Held, Held, ""), ReasonDependencyNotReady, "path db"},
		{"an earlier wave not ready holds the next", 2, res(apply.Created, apply.Failed, ""), ReasonDependencyNotReady, "wave 0 of path web"},
		{"a suspended dependency with drift holds", 1, res(Suspended, "", ""), ReasonDependencyNotReady, "SUSPENDED"},
		{"an object the scope refused (no result) does not hold", 1, res("", "", ""), "", ""},
		{"applied and Current lets the dependent go", 1, health(res(apply.Created, "", ""), 0, "Current", ""), "", ""},
		{"applied but InProgress holds, naming object and health", 1, health(res(apply.Created, "", ""), 0, "InProgress", "Deployment generation is 1, but latest observed generation is 0"),
			ReasonDependencyNotReady, "held: path db is not healthy (ConfigMap/ns/db InProgress: Deployment generation is 1, but latest observed generation is 0)"},
		{"in sync but Failed holds", 1, health(res(apply.InSync, "", ""), 0, "Failed", "Progress deadline exceeded"), ReasonDependencyNotReady, "not healthy (ConfigMap/ns/db Failed: Progress deadline exceeded)"},
		{"NotFound after apply holds", 1, health(res(apply.InSync, "", ""), 0, "NotFound", ""), ReasonDependencyNotReady, "ConfigMap/ns/db NotFound)"},
		{"unknown health (no synced watch): applied is ready", 1, health(res(apply.Created, "", ""), 0, "Unknown", "no watch"), "", ""},
		{"an earlier wave not healthy holds the next", 2, health(res(apply.Created, apply.Created, ""), 1, "Terminating", ""), ReasonDependencyNotReady, "wave 0 of path web is not healthy"},
		{"a failed dependency is named by its action, whatever its health", 1, health(res(apply.Failed, "", ""), 0, "Current", ""), ReasonDependencyNotReady, "not ready (ConfigMap/ns/db ERROR)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := Hold(o, tc.step, tc.results)
			if got != tc.want || !strings.Contains(msg, tc.msg) {
				t.Errorf("Hold = %q %q, want %q containing %q", got, msg, tc.want, tc.msg)
			}
		})
	}
}

// health sets the observed health of result i.
func health(rs []apply.Result, i int, status, msg string) []apply.Result {
	rs[i].Health, rs[i].HealthMessage = status, msg
	return rs
}

func TestSuspendedBy(t *testing.T) {
	paths := ParseSuspended("# incident 42\napps/web/\n\n./infra\napps/web\n")
	if diff := cmp.Diff([]string{"apps/web", "infra"}, paths); diff != "" {
		t.Fatalf("ParseSuspended (-want +got):\n%s", diff)
	}
	for file, want := range map[string]string{
		"apps/web/d.yaml": "apps/web", "apps/web/sub/d.yaml": "apps/web", "apps/webby/d.yaml": "",
		"infra/db/x.yaml": "infra", "top.yaml": "",
	} {
		if got := SuspendedBy(file, paths); got != want {
			t.Errorf("SuspendedBy(%s) = %q, want %q", file, got, want)
		}
	}
	if got := SuspendedBy("top.yaml", []string{"."}); got != "." {
		t.Errorf("suspending . holds every file, got %q", got)
	}
}
