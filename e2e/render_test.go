package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/apply"
)

// renderFixtures are fixture CRs, used unmodified, that cover every child kind the
// production Kinds build: Deployment, Service, Ingress, PodDisruptionBudget,
// HorizontalPodAutoscaler, StatefulSet and the KMSSecret CR.
var renderFixtures = []string{
	"production/service-billing.yaml",
	"production/service-iam.yaml",
	"production/datastore-sql.yaml",
	"samples/hanzo_v1alpha1_hanzoservice.yaml",
	"samples/hanzo_v1alpha1_hanzodns.yaml",
}

// fixturesDir is the one copy of the fixture CRs, kept in the kinds package.
const fixturesDir = "../kinds/testdata/fixtures/crs"

// TestAppliedEqualsRender: for fixture CRs, the objects the Kind controllers applied are
// the objects `operator render` prints for the same file (issue 5, "the objects the
// controller applied equal `operator render` output after normalization").
//
// The CRs go the user's way: pushed to git, applied by the sweep, built and applied by the
// Kind controllers of the built binary. `operator render <file>` then runs on the same
// file, without a cluster. Each rendered object R is made comparable with exactly two
// edits, both of fields render cannot know: the owner reference uid (render reads the CR
// from a file, so it prints ""; it is set to the live CR's uid, as the controller's
// builder sets it) and metadata.creationTimestamp (render prints the unset time as null;
// the apiserver always sets one). Then, for each R and its live object L:
//
//  1. Subset, byte for byte: L projected onto the fields R prints (map keys R has, list
//     elements by position, whole values at R's leaves) marshals to the same YAML bytes as
//     R. Every field render prints is in the live object with the same value. What the
//     projection drops is what the apiserver and other controllers add: defaults
//     (terminationMessagePath, clusterIP, …), status, uid, resourceVersion, managedFields.
//  2. Nothing more, nothing else: a server-side dry-run apply of R under the controller's
//     field manager (universe-operator, forced, exactly as the controller applies) returns
//     L unchanged: same YAML bytes after dropping status, resourceVersion and managedFields
//     (status and resourceVersion may move under other controllers between the two reads),
//     and the same field set owned by universe-operator. Had the controller applied a
//     field render lacks, the dry-run would remove it; a different value, change it.
func TestAppliedEqualsRender(t *testing.T) {
	cl := getCluster(t)
	repo := newGitRepo(t)
	ctx := context.Background()
	for _, ns := range []string{"hanzo", "hanzo-dns"} {
		ensureNamespace(t, cl.c, ns)
		deleteNamespaceAfter(t, cl, ns)
	}
	files := map[string][]byte{}
	for _, f := range renderFixtures {
		data, err := os.ReadFile(filepath.Join(fixturesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = data
	}
	sha, pushed := repo.push(t, "fixture CRs", files)
	op := startOperator(t, cl, repo, "hanzo", "--leader-elect=false", "--gitops-namespaces", "hanzo,hanzo-dns")
	rep := op.sweptAt(t, sha, pushed)
	if rep.Summary.Created != len(renderFixtures) || rep.Summary.Errors+rep.Summary.Skipped+rep.Summary.OutOfScope != 0 {
		t.Fatalf("sweep of the fixtures: %+v, want %d created and nothing else (results %+v skips %+v)", rep.Summary, len(renderFixtures), rep.Results, rep.Skips)
	}

	compared := 0
	for _, f := range renderFixtures {
		t.Run(path.Base(f), func(t *testing.T) {
			cr := readCR(t, files[f])
			live := waitReconciled(t, cl.c, cr)
			rendered := operatorRender(t, filepath.Join(fixturesDir, f))
			if len(rendered) == 0 {
				t.Fatalf("operator render %s printed nothing", f)
			}
			for _, r := range rendered {
				fillOwnerUID(r, live)
				unstructured.RemoveNestedField(r.Object, "metadata", "creationTimestamp")
				l := &unstructured.Unstructured{}
				l.SetGroupVersionKind(r.GroupVersionKind())
				if err := cl.c.Get(ctx, client.ObjectKeyFromObject(r), l); err != nil {
					t.Errorf("%s: rendered but not applied by the controller: %v", apply.RefOf(r), err)
					continue
				}
				want, got := mustYAML(t, r.Object), mustYAML(t, project(l.Object, r.Object))
				if !bytes.Equal(want, got) {
					t.Errorf("%s: the live object differs from render (-render +live, projected):\n%s", apply.RefOf(r), cmp.Diff(string(want), string(got)))
				}
				dry := r.DeepCopy()
				if err := cl.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
					client.FieldOwner(kinds.ManagerKinds), client.ForceOwnership, client.DryRunAll); err != nil {
					t.Errorf("%s: dry-run apply: %v", apply.RefOf(r), err)
					continue
				}
				if d := cmp.Diff(string(mustYAML(t, comparable(l))), string(mustYAML(t, comparable(dry)))); d != "" {
					t.Errorf("%s: applying render's output would change the live object (-live +dry-run):\n%s", apply.RefOf(r), d)
				}
				if a, b := ownedBy(l, kinds.ManagerKinds), ownedBy(dry, kinds.ManagerKinds); a == "" || a != b {
					t.Errorf("%s: fields owned by %s: live %s, after applying render's output %s", apply.RefOf(r), kinds.ManagerKinds, a, b)
				}
				compared++
			}
		})
	}
	t.Logf("%d objects applied by the controllers for %d fixture CRs equal operator render", compared, len(renderFixtures))
}

// readCR decodes the single CR of a fixture file.
func readCR(t *testing.T, data []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// waitReconciled waits until the Kind controller has reconciled the current generation of
// cr, and returns the live CR.
func waitReconciled(t *testing.T, c client.Client, cr *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var live *unstructured.Unstructured
	waitFor(t, "reconciled "+apply.RefOf(cr).String(), time.Minute, func() (bool, string) {
		var err error
		live, err = getObj(context.Background(), c, cr.GroupVersionKind(), cr.GetNamespace(), cr.GetName())
		if err != nil {
			return false, err.Error()
		}
		og, _, _ := unstructured.NestedInt64(live.Object, "status", "observedGeneration")
		return og == live.GetGeneration(), fmt.Sprintf("observedGeneration %d, generation %d", og, live.GetGeneration())
	})
	return live
}

// operatorRender runs `operator render file` and decodes the YAML stream it prints.
func operatorRender(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(operatorBin, "render", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("operator render %s: %v\n%s", file, err, stderr.String())
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decode the output of operator render %s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// fillOwnerUID sets the uid of r's owner references to owner when they name it.
func fillOwnerUID(r, owner *unstructured.Unstructured) {
	refs := r.GetOwnerReferences()
	for i := range refs {
		if refs[i].Kind == owner.GetKind() && refs[i].Name == owner.GetName() && refs[i].UID == "" {
			refs[i].UID = owner.GetUID()
		}
	}
	r.SetOwnerReferences(refs)
}

// project returns the parts of live at the paths shape has: the keys of shape's maps,
// the elements of shape's lists by position (a list of another length is kept whole, so
// it differs), and live's whole value at shape's leaves.
func project(live, shape any) any {
	switch s := shape.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live
		}
		out := map[string]any{}
		for k, sv := range s {
			if lv, ok := l[k]; ok {
				out[k] = project(lv, sv)
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(s) {
			return live
		}
		out := make([]any, len(s))
		for i := range s {
			out[i] = project(l[i], s[i])
		}
		return out
	}
	return live
}

// comparable drops what may move between two reads under other writers, and the
// managedFields (compared apart, see ownedBy).
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}

// ownedBy returns the field set manager owns on u (main resource), as JSON.
func ownedBy(u *unstructured.Unstructured, manager string) string {
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == manager && mf.Subresource == "" && mf.FieldsV1 != nil {
			return mf.FieldsV1.GetRawString()
		}
	}
	return ""
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
