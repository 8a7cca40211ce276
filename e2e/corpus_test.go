package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openuniverse/operator/reconcile/apply"
	"github.com/openuniverse/operator/reconcile/gitops"
)

// corpusCase is one case of testdata/badinput: a directory of files committed to git as
// <case>/<file>, and case.json saying what the operator must do with them.
type corpusCase struct {
	name  string
	About string `json:"about"`
	// Refused are files, documents or objects the sweep skips: by file, reason and (for
	// an object) kind and name, with a message that says Says.
	Refused []struct {
		File, Kind, Name, Reason, Says string
	} `json:"refused"`
	// Failed are objects the apiserver (or the lack of an API) refused, by file and object.
	Failed []struct {
		File, Object, Says string
	} `json:"failed"`
	// Logs are substrings of a log line that also names the case's file.
	Logs []string `json:"logs"`
	// Applied and Absent are "apiVersion Kind namespace/name" (or "… Kind name").
	Applied []string `json:"applied"`
	Absent  []string `json:"absent"`
	// Data pins the data of an applied ConfigMap.
	Data map[string]map[string]string `json:"data"`
	// Generate writes a padded ConfigMap of about Bytes into File (too large to keep).
	Generate []struct {
		File  string
		Bytes int
	} `json:"generate"`
}

// corpusLimits are the limits the corpus run uses, so that the oversize and
// too-many-documents cases stay small.
var corpusLimits = []string{"--gitops-max-file-bytes", "1048576", "--gitops-max-documents", "50"}

const corpusNS, corpusOperatorNS = "e2e-corpus", "e2e-corpus-op"

// TestBadInputCorpus runs every case of testdata/badinput through the built binary in one
// commit, against gittestserver and the real apiserver: each bad file, document or object
// is reported by file and object name (GET /gitops and the log), nothing it declares
// exists, and every good object of every case — in the same commit as all the bad ones —
// is applied. Nothing is reported that no case expects.
func TestBadInputCorpus(t *testing.T) {
	t.Parallel() // its own namespace and operator; runs with the other parallel tests, after the sequential ones
	cl := getCluster(t)
	cases, files := loadCorpus(t)
	ctx := context.Background()
	t.Cleanup(func() { // whatever leaked must not outlive the test (the test has failed then)
		for _, c := range cases {
			for _, ref := range c.Absent {
				_ = cl.c.Delete(ctx, corpusObj(t, ref))
			}
		}
	})
	deleteNamespaceAfter(t, cl, corpusNS)
	deleteNamespaceAfter(t, cl, corpusOperatorNS)
	repo := newGitRepo(t)
	sha, pushed := repo.push(t, "the bad-input corpus", files)
	op := startOperator(t, cl, repo, corpusOperatorNS, append([]string{"--leader-elect=false",
		"--gitops-namespaces", corpusNS + "," + corpusOperatorNS}, corpusLimits...)...)
	rep := op.sweptAt(t, sha, pushed)
	if rep.Error != "" {
		t.Fatalf("the sweep stopped: %s", rep.Error)
	}
	logs := op.logs()
	t.Logf("corpus: %d cases, %d files; %+v", len(cases), len(files), rep.Summary)

	expectedSkips, expectedFailures := map[int]bool{}, map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, want := range c.Refused {
				file := c.name + "/" + want.File
				i := slices.IndexFunc(rep.Skips, func(s gitops.Skip) bool {
					return s.File == file && string(s.Reason) == want.Reason && s.Kind == want.Kind && (want.Name == "" || s.Name == want.Name)
				})
				if i < 0 {
					t.Errorf("%s %s %s not refused as %s; the report's skips of %s: %v", file, want.Kind, want.Name, want.Reason, c.name, skipsOf(rep, c.name))
					continue
				}
				expectedSkips[i] = true
				if s := rep.Skips[i]; !strings.Contains(s.Message, want.Says) {
					t.Errorf("%s: GET /gitops says %q, want it to say %q", s, s.Message, want.Says)
				}
				if !hasLine(logs, "Skipping", `"file":"`+file+`"`, `"reason":"`+want.Reason+`"`, want.Name) {
					t.Errorf("no log line names %s %s (%s)", file, want.Name, want.Reason)
				}
			}
			for _, want := range c.Failed {
				file := c.name + "/" + want.File
				i := slices.IndexFunc(rep.Results, func(r apply.Result) bool { return r.Object.String() == want.Object })
				if i < 0 {
					t.Errorf("%s: no result for %s", file, want.Object)
					continue
				}
				expectedFailures[want.Object] = true
				r := rep.Results[i]
				if r.Action != apply.Failed || !strings.HasPrefix(r.Message, file+": ") || !strings.Contains(r.Message, want.Says) {
					t.Errorf("%s: %s %q, want Failed naming %s and saying %q", want.Object, r.Action, r.Message, file, want.Says)
				}
				if !hasLine(logs, "Apply failed", `"file":"`+file+`"`, `"object":"`+want.Object+`"`) {
					t.Errorf("no log line names %s and %s", file, want.Object)
				}
			}
			for _, want := range c.Logs {
				if !hasLine(logs, `"file":"`+c.name+"/", want) {
					t.Errorf("no log line of %s says %q", c.name, want)
				}
			}
			for _, ref := range c.Applied {
				u := corpusObj(t, ref)
				if err := cl.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
					t.Errorf("good object %s of %s was not applied: %v", ref, c.name, err)
					continue
				}
				for k, v := range c.Data[ref] {
					if got, _, _ := unstructured.NestedString(u.Object, "data", k); got != v {
						t.Errorf("%s data.%s = %q, want %q", ref, k, got, v)
					}
				}
			}
			for _, ref := range c.Absent {
				u := corpusObj(t, ref)
				if err := cl.c.Get(ctx, client.ObjectKeyFromObject(u), u); !apierrors.IsNotFound(err) {
					t.Errorf("%s exists (err %v): %s must never be applied", ref, err, c.name)
				}
			}
		})
	}
	// Every skip and failure is one a case expects; every other object is applied.
	for i, s := range rep.Skips {
		if !expectedSkips[i] {
			t.Errorf("unexpected skip %s (%s)", s, s.Reason)
		}
	}
	for _, r := range rep.Results {
		if (r.Action == apply.Failed || r.Action == apply.Denied) && !expectedFailures[r.Object.String()] {
			t.Errorf("unexpected %s of %s: %s", r.Action, r.Object, r.Message)
		}
		if r.Action != apply.Failed && r.Action != apply.Created && r.Action != apply.InSync {
			t.Errorf("%s: %s %s", r.Object, r.Action, r.Message)
		}
	}
}

// loadCorpus reads every case under testdata/badinput and returns the cases and the files
// to commit (case.json stays out of git).
func loadCorpus(t *testing.T) ([]corpusCase, map[string][]byte) {
	t.Helper()
	root := filepath.Join("testdata", "badinput")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	files := map[string][]byte{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		c := corpusCase{name: d.Name()}
		b, err := os.ReadFile(filepath.Join(root, d.Name(), "case.json"))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("%s/case.json: %v", d.Name(), err)
		}
		err = filepath.WalkDir(filepath.Join(root, d.Name()), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() == "case.json" {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range c.Generate {
			head := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata:\n  k: ", strings.TrimSuffix(path.Base(g.File), ".yaml"), corpusNS)
			files[c.name+"/"+g.File] = []byte(head + strings.Repeat("x", max(g.Bytes-len(head)-1, 0)) + "\n")
		}
		cases = append(cases, c)
	}
	if len(cases) < 20 {
		t.Fatalf("%d corpus cases under %s, want every case of the issue", len(cases), root)
	}
	return cases, files
}

// corpusObj parses "apiVersion Kind namespace/name" or "apiVersion Kind name".
func corpusObj(t *testing.T, ref string) *unstructured.Unstructured {
	t.Helper()
	f := strings.Fields(ref)
	if len(f) != 3 {
		t.Fatalf("corpus object %q: want apiVersion Kind [namespace/]name", ref)
	}
	ns, name, ok := strings.Cut(f[2], "/")
	if !ok {
		ns, name = "", f[2]
	}
	return obj(f[0], f[1], ns, name)
}

func skipsOf(rep *gitops.Report, dir string) []string {
	var out []string
	for _, s := range rep.Skips {
		if strings.HasPrefix(s.File, dir+"/") {
			out = append(out, fmt.Sprintf("%s (%s)", s, s.Reason))
		}
	}
	return out
}
