package source

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// overlayRepo is a base and two overlays, each overlay renaming and
// re-namespacing the base's objects, beside a plain manifest.
func overlayRepo() map[string]string {
	return map[string]string{
		"apps/base/kustomization.yaml":             "resources: [deploy.yaml, cm.yaml]\n",
		"apps/base/deploy.yaml":                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: nginx}]}}}\n",
		"apps/base/cm.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {color: blue}\n",
		"apps/overlays/prod/kustomization.yaml":    "namespace: prod\nnamePrefix: prod-\nresources: [../../base]\npatches:\n- path: replicas.yaml\n",
		"apps/overlays/prod/replicas.yaml":         "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n",
		"apps/overlays/staging/kustomization.yaml": "namespace: staging\nresources: [../../base]\n",
		"plain/ns.yaml":                            "apiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n",
	}
}

func snapshotOf(files map[string]string) *Snapshot {
	s := &Snapshot{Revision: "r"}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		sum := sha1.Sum([]byte(files[p]))
		s.Files = append(s.Files, File{Path: p, BlobSHA: hex.EncodeToString(sum[:]), Data: []byte(files[p])})
	}
	return s
}

func TestParseBuildsKustomizations(t *testing.T) {
	type obj struct {
		File, Kind, Namespace, Name string
	}
	objs, errs := Parse(snapshotOf(overlayRepo()))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	var got []obj
	replicas := map[string]int64{}
	for _, o := range objs {
		got = append(got, obj{o.File, o.Obj.GetKind(), o.Obj.GetNamespace(), o.Obj.GetName()})
		if o.Doc < 1 {
			t.Errorf("%s %s: Doc %d, want its place in the build output", o.File, o.Obj.GetName(), o.Doc)
		}
		if o.Obj.GetKind() == "Deployment" {
			replicas[o.Obj.GetNamespace()] = o.Obj.Object["spec"].(map[string]any)["replicas"].(int64)
		}
	}
	// The base is built inside each overlay, never alone; its files and the
	// overlays' patch are not read as plain manifests.
	want := []obj{
		{"apps/overlays/prod/kustomization.yaml", "Deployment", "prod", "prod-web"},
		{"apps/overlays/prod/kustomization.yaml", "ConfigMap", "prod", "prod-conf"},
		{"apps/overlays/staging/kustomization.yaml", "Deployment", "staging", "web"},
		{"apps/overlays/staging/kustomization.yaml", "ConfigMap", "staging", "conf"},
		{"plain/ns.yaml", "Namespace", "", "prod"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"prod": 3, "staging": 1}, replicas); diff != "" {
		t.Errorf("replicas (-want +got), the prod patch applies to prod only:\n%s", diff)
	}
}

func TestParseRefusesKustomizeByName(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	cases := map[string]struct {
		files map[string]string
		is    error
		says  []string // each in the message
	}{
		"remote base on github": {
			files: map[string]string{"k/kustomization.yaml": "resources:\n- github.com/org/repo//deploy?ref=v1\n"},
			is:    ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "remote resource", "github.com/org/repo"},
		},
		"remote base over https": {
			files: map[string]string{"k/kustomization.yaml": "resources: [https://example.com/org/repo.git]\n"},
			is:    ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "remote resource"},
		},
		"remote base scp style": {
			files: map[string]string{"k/kustomization.yaml": "resources: [git@example.com:org/repo.git]\n"},
			is:    ErrKustomizeRefused, says: []string{"remote resource"},
		},
		"remote patch file": {
			files: map[string]string{"k/kustomization.yaml": "resources: [c.yaml]\npatches:\n- path: https://example.com/p.yaml\n", "k/c.yaml": cm},
			is:    ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "remote file"},
		},
		"remote base in a base names the base": {
			files: map[string]string{
				"base/kustomization.yaml": "resources: [https://example.com/x.yaml]\n",
				"app/kustomization.yaml":  "resources: [../base]\n",
			},
			is: ErrKustomizeRefused, says: []string{"base/kustomization.yaml", "remote resource"},
		},
		"resource outside the repository": {
			files: map[string]string{"k/kustomization.yaml": "resources: [../../../etc]\n"},
			is:    ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "outside the repository"},
		},
		"helm chart": {
			files: map[string]string{"k/kustomization.yaml": "helmCharts:\n- name: redis\n  repo: https://charts.example.com\n"},
			is:    ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "Helm"},
		},
		"exec plugin": {
			files: map[string]string{
				"k/kustomization.yaml": "resources: [c.yaml]\ntransformers: [t.yaml]\n", "k/c.yaml": cm,
				"k/t.yaml": "apiVersion: example.com/v1\nkind: Exe\nmetadata:\n  name: t\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n",
			},
			is: ErrKustomizeRefused, says: []string{"k/kustomization.yaml", "exec plugin"},
		},
		"container plugin inline": {
			files: map[string]string{
				"k/kustomization.yaml": "resources: [c.yaml]\ngenerators:\n- |\n  apiVersion: example.com/v1\n  kind: Gen\n  metadata:\n    name: g\n    annotations:\n      config.kubernetes.io/function: |\n        container:\n          image: evil\n", "k/c.yaml": cm,
			},
			is: ErrKustomizeRefused, says: []string{"container plugin"},
		},
		"go plugin": {
			files: map[string]string{
				"k/kustomization.yaml": "resources: [c.yaml]\ntransformers: [t.yaml]\n", "k/c.yaml": cm,
				"k/t.yaml": "apiVersion: someteam.example.com/v1\nkind: ChartInflator\nmetadata: {name: t}\n",
			},
			is: ErrKustomizeRefused, says: []string{"not a kustomize builtin"},
		},
		"missing resource": {
			files: map[string]string{"k/kustomization.yaml": "resources: [gone.yaml]\n"},
			is:    ErrKustomizeRefused, says: []string{"gone.yaml", "not in the repository"},
		},
		"build error": {
			files: map[string]string{"k/kustomization.yaml": "resources: [c.yaml]\npatches:\n- path: p.yaml\n", "k/c.yaml": cm, "k/p.yaml": "not: [a patch\n"},
			is:    ErrKustomizeBuild, says: []string{"k/kustomization.yaml"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := maps.Clone(tc.files)
			files["plain.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata: {name: kept}\n"
			objs, errs := Parse(snapshotOf(files))
			if len(objs) != 1 || objs[0].File != "plain.yaml" {
				t.Errorf("objects %v, want only plain.yaml's: a refused kustomization costs only itself", objs)
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			e := errs[0]
			if !errors.Is(e, tc.is) {
				t.Errorf("error %v, want %v", e, tc.is)
			}
			if !strings.HasSuffix(e.File, "kustomization.yaml") {
				t.Errorf("error names %q, want the kustomization file", e.File)
			}
			for _, s := range tc.says {
				if !strings.Contains(e.Error(), s) {
					t.Errorf("error %q does not say %q", e.Error(), s)
				}
			}
			if msg := e.Error(); strings.Contains(msg, " "+repoRoot+"/") || strings.Contains(msg, "'"+repoRoot+"/") || strings.Contains(msg, `"`+repoRoot+"/") {
				t.Errorf("error %q shows the in-memory root", e.Error())
			}
		})
	}
}

func TestParseCacheRebuildsOnlyWhatChanged(t *testing.T) {
	files := overlayRepo()
	var c ParseCache
	parse := func(step string, wantBuilds int) []Object {
		t.Helper()
		before := c.built
		objs, errs := c.Parse(snapshotOf(files), Limits{})
		if len(errs) != 0 {
			t.Fatalf("%s: errors %v", step, errs)
		}
		if got := c.built - before; got != wantBuilds {
			t.Errorf("%s: %d builds, want %d", step, got, wantBuilds)
		}
		return objs
	}
	parse("first sweep", 2)
	parse("idle sweep", 0)
	files["plain/other.yaml"] = "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n"
	parse("a plain file added", 0)
	files["apps/overlays/prod/replicas.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 5}\n"
	parse("prod's patch changed", 1)
	files["apps/base/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {color: red}\n"
	objs := parse("the base changed", 2)
	red := 0
	for _, o := range objs {
		if o.Obj.GetKind() == "ConfigMap" && o.Obj.Object["data"].(map[string]any)["color"] == "red" {
			red++
		}
	}
	if red != 2 {
		t.Errorf("%d overlays carry the base's change, want 2", red)
	}
	files["apps/base/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unused}\n"
	parse("a file the base does not list", 0)
	delete(files, "apps/overlays/staging/kustomization.yaml")
	files["apps/overlays/staging/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: staging}\n"
	objs = parse("staging is plain manifests now", 0)
	if o := objs[len(objs)-1]; o.File != "plain/other.yaml" && o.File != "apps/overlays/staging/cm.yaml" {
		t.Errorf("last object from %s", o.File)
	}
}
