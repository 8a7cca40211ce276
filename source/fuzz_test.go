package source

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: the snapshot parser never panics, never returns an object without
// apiVersion and kind, and accounts for its input: a file yields objects or names itself
// in an error. Seeds: testdata/fuzz/FuzzParse (run by every go test).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: n}}]\n",
		"a: &a [1,2]\nb: [*a,*a]\n",
		"---\n---\n",
		"\xff\xfe\x00a",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, errs := ParseLimited(&Snapshot{Files: []File{{Path: "f.yaml", Data: data}}}, Limits{FileBytes: 1 << 20, Documents: 100})
		for _, o := range objs {
			if o.File != "f.yaml" || o.Obj.GetAPIVersion() == "" || o.Obj.GetKind() == "" {
				t.Fatalf("object without a source or a type: %+v", o)
			}
		}
		for _, e := range errs {
			if e.File != "f.yaml" || e.Err == nil || !strings.Contains(e.Error(), "f.yaml") {
				t.Fatalf("file error that does not name its file: %v", e)
			}
			if errors.Is(e, ErrMalformed) && len(objs) > 0 {
				t.Fatalf("a malformed file yielded objects")
			}
		}
	})
}
