package render_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openuniverse/operator/reconcile/render"
)

// FuzzMaskSecret: for any Secret (any shape of data, stringData and annotations), the
// masked YAML holds none of the values of data and stringData, nor the
// last-applied-configuration annotation, and the input is never modified. Seeds:
// testdata/fuzz/FuzzMaskSecret.
func FuzzMaskSecret(f *testing.F) {
	f.Add(`{"data":{"a":"c2VjcmV0dmFsdWU="},"stringData":{"b":"plainsecretvalue"}}`, "secretvalue1")
	f.Add(`{"data":"c2VjcmV0dmFsdWU=","stringData":["plainsecretvalue"]}`, "secretvalue2")
	f.Add(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"a\":\"zzsecretzz\"}}"}}}`, "zzsecretzz")
	f.Fuzz(func(t *testing.T, fields, _ string) {
		var m map[string]any
		if json.Unmarshal([]byte(fields), &m) != nil || m == nil {
			return
		}
		m["apiVersion"], m["kind"] = "v1", "Secret"
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["name"] = "s"
		m["metadata"] = meta
		in := &unstructured.Unstructured{Object: m}
		before, _ := json.Marshal(in.Object)
		out, err := render.MarshalMasked(in)
		if err != nil {
			return
		}
		after, _ := json.Marshal(in.Object)
		if string(before) != string(after) {
			t.Fatal("MarshalMasked modified its input")
		}
		var secrets []string
		collect := func(v any) {
			b, _ := json.Marshal(v)
			var walk func(any)
			walk = func(v any) {
				switch x := v.(type) {
				case map[string]any:
					for _, e := range x {
						walk(e)
					}
				case []any:
					for _, e := range x {
						walk(e)
					}
				case string:
					if len(x) >= 8 {
						secrets = append(secrets, x)
					}
				}
			}
			var back any
			_ = json.Unmarshal(b, &back)
			walk(back)
		}
		collect(m["data"])
		collect(m["stringData"])
		if ann, ok := meta["annotations"].(map[string]any); ok {
			if la, ok := ann["kubectl.kubernetes.io/last-applied-configuration"].(string); ok && len(la) >= 8 {
				secrets = append(secrets, la)
			}
		}
		masked := string(out)
		for _, s := range secrets {
			if s != render.Mask && !strings.Contains(`apiVersion kind metadata name annotations`, s) && strings.Contains(masked, s) && !strings.Contains(keysAndMeta(in), s) {
				t.Fatalf("masked output shows %q:\n%s", s, masked)
			}
		}
	})
}

// keysAndMeta is what may legitimately show: map keys of data and the rest of metadata.
func keysAndMeta(u *unstructured.Unstructured) string {
	var b strings.Builder
	for _, f := range []string{"data", "stringData"} {
		if m, ok := u.Object[f].(map[string]any); ok {
			for k := range m {
				b.WriteString(k + " ")
			}
		}
	}
	meta := u.DeepCopy()
	ann := meta.GetAnnotations()
	delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
	meta.SetAnnotations(ann)
	mb, _ := json.Marshal(meta.Object["metadata"])
	b.Write(mb)
	for k, v := range u.Object {
		if k != "data" && k != "stringData" && k != "metadata" {
			vb, _ := json.Marshal(v)
			b.Write(vb)
		}
	}
	return b.String()
}
