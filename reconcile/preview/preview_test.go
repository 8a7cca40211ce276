package preview

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
	"github.com/openuniverse/operator/reconcile/render"
	"github.com/openuniverse/operator/source"
)

func deployment(image string, replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "demo"},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": image},
			}}},
		},
	}}
	return u
}

func obj(apiVersion, kind, ns, name string) source.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return source.Object{File: "apps/" + name + ".yaml", Doc: 1, Obj: u}
}

func TestCompute(t *testing.T) {
	immutableErr := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web",
		field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), map[string]any{"app": "secret-value"}, "field is immutable")})
	depRef := apply.ObjRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "demo", Name: "web"}
	cmRef := apply.ObjRef{Version: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "cfg"}
	crRef := apply.ObjRef{Group: "hanzo.ai", Version: "v1", Kind: "Service", Namespace: "demo", Name: "web"}
	for _, tc := range []struct {
		name      string
		in        Input
		counts    map[Change]int
		rolls     []string // "Deployment/demo/web 3 web: a → b"
		refused   bool
		summary   []string // substrings of Summary()
		report    []string // substrings of Report()
		notReport []string
	}{
		{
			name: "image change rolls the Deployment",
			in: Input{DryRuns: []render.DiffResult{
				{Object: crRef, From: "apps/web.yaml", Action: apply.Updated, Diff: "-  image: a\n+  image: b\n"},
				{Object: depRef, From: "apps/web.yaml", Action: apply.Updated, Diff: "-image: a\n+image: b\n",
					Live: deployment("ghcr.io/x/web:1", 3), Desired: deployment("ghcr.io/x/web:2", 3)},
				{Object: cmRef, From: "apps/web.yaml", Action: apply.InSync},
			}},
			counts:  map[Change]int{Changed: 2, Unchanged: 1},
			rolls:   []string{"Deployment/demo/web 3 web: ghcr.io/x/web:1 → ghcr.io/x/web:2"},
			summary: []string{"change 2", "rolls Deployment/demo/web (3 pods)"},
			report:  []string{"Pods that will roll", "Deployment/demo/web: 3 pods, web: ghcr.io/x/web:1 → ghcr.io/x/web:2"},
		},
		{
			name: "a replica change does not roll",
			in: Input{DryRuns: []render.DiffResult{{Object: depRef, Action: apply.Updated, Diff: "x\n",
				Live: deployment("a", 1), Desired: deployment("a", 5)}}},
			counts: map[Change]int{Changed: 1},
		},
		{
			name:    "a new Deployment is created, not rolled",
			in:      Input{DryRuns: []render.DiffResult{{Object: depRef, Action: apply.Created, Diff: "+x\n", Desired: deployment("a", 1)}}},
			counts:  map[Change]int{Created: 1},
			summary: []string{"create 1"},
		},
		{
			name: "a cluster-scoped object is refused by the scope rule",
			in: Input{Skips: []gitops.Skip{{File: "apps/crb.yaml", Kind: "ClusterRoleBinding", Name: "admin",
				Reason: gitops.ReasonClusterScoped, Message: "ClusterRoleBinding is cluster-scoped"}}},
			counts:  map[Change]int{Refused: 1},
			refused: true,
			summary: []string{"refuse 1", "scope refuses ClusterRoleBinding admin (ClusterScoped)"},
			report:  []string{"Refused by the scope", "ClusterRoleBinding admin (apps/crb.yaml): rule ClusterScoped"},
		},
		{
			name: "an immutable field is refused, its value masked",
			in: Input{DryRuns: []render.DiffResult{{Object: depRef, From: "apps/web.yaml", Action: apply.Failed,
				Err: errors.Join(errors.New("apps/web.yaml: dry-run"), immutableErr)}}},
			counts:    map[Change]int{Refused: 1},
			refused:   true,
			report:    []string{"Immutable fields", "spec.selector"},
			notReport: []string{"secret-value"},
		},
		{
			name:    "an unusable file fails the check",
			in:      Input{Skips: []gitops.Skip{{File: "apps/bad.yaml", Reason: gitops.ReasonUnparseable, Message: "yaml: line 3"}}},
			counts:  map[Change]int{Refused: 1},
			refused: true,
			report:  []string{"Unusable files", "apps/bad.yaml: rule Unparseable"},
		},
		{
			name: "an object removed from git is orphaned, not pruned",
			in: Input{
				BaseObjects: []source.Object{obj("v1", "ConfigMap", "demo", "old"), obj("v1", "ConfigMap", "demo", "kept")},
				HeadObjects: []source.Object{obj("v1", "ConfigMap", "demo", "kept")},
				DryRuns:     []render.DiffResult{{Object: apply.ObjRef{Version: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "kept"}, Action: apply.InSync}},
			},
			counts:  map[Change]int{Orphaned: 1, Unchanged: 1},
			summary: []string{"orphan 1"},
			report:  []string{"Removed from git", "v1/ConfigMap/demo/old (apps/old.yaml)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			for _, c := range []Change{Created, Changed, Unchanged, Refused, Orphaned} {
				if got := p.Count(c); got != tc.counts[c] {
					t.Errorf("%s: %d, want %d (%+v)", c, got, tc.counts[c], p.Entries)
				}
			}
			var rolls []string
			for _, r := range p.Rolls {
				rolls = append(rolls, r.Object.String()+" "+pods(r.Replicas)[:1]+" "+r.Why)
			}
			if strings.Join(rolls, "|") != strings.Join(tc.rolls, "|") {
				t.Errorf("rolls %q, want %q", rolls, tc.rolls)
			}
			if p.Refused() != tc.refused {
				t.Errorf("Refused() = %v", p.Refused())
			}
			for _, s := range tc.summary {
				if !strings.Contains(p.Summary(), s) {
					t.Errorf("summary %q lacks %q", p.Summary(), s)
				}
			}
			for _, s := range tc.report {
				if !strings.Contains(p.Report(), s) {
					t.Errorf("report lacks %q:\n%s", s, p.Report())
				}
			}
			for _, s := range tc.notReport {
				if strings.Contains(p.Report(), s) {
					t.Errorf("report shows %q:\n%s", s, p.Report())
				}
			}
		})
	}
}

func TestDetailsBounded(t *testing.T) {
	big := strings.Repeat("+x\n", MaxDiffBytes/6)
	var rs []render.DiffResult
	for _, n := range []string{"a", "b", "c"} {
		rs = append(rs, render.DiffResult{Object: apply.ObjRef{Version: "v1", Kind: "ConfigMap", Namespace: "d", Name: n}, Action: apply.Created, Diff: big})
	}
	p := Compute(Input{DryRuns: rs})
	if len(p.Diff) > MaxDiffBytes || p.Omitted != 1 {
		t.Fatalf("diff %d bytes, %d omitted; want <= %d and 1", len(p.Diff), p.Omitted, MaxDiffBytes)
	}
	if d := p.Details(); !strings.HasPrefix(d, "```diff\n") || !strings.Contains(d, "1 more objects' diffs") {
		t.Fatalf("details: %.200q", d)
	}
	if d := Compute(Input{}).Details(); d != "No object would change." {
		t.Fatalf("empty details %q", d)
	}
}
