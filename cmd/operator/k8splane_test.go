package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openuniverse/operator/drive/plane/k8s/ops"
)

// TestK8sCommand: every op is `operator k8s <group> <op>` with the op's doc comment as its
// help; a call posts the --data request to /v1/k8s/<group>/<op> with the --token-file
// token as a bearer (never in the URL) and prints the reply; a refusal is an error naming
// its code; without --token-file nothing is sent.
func TestK8sCommand(t *testing.T) {
	root := newRootCommand()
	for _, op := range ops.All {
		c, _, err := root.Find([]string{"k8s", string(op.Group), op.Member()})
		if err != nil || c.Long != op.Doc() {
			t.Errorf("operator k8s %s %s: %v (help %q)", op.Group, op.Member(), err, c.Long)
		}
	}
	var got struct {
		path, auth, query string
		body              map[string]any
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth, got.query = r.URL.Path, r.Header.Get("Authorization"), r.URL.RawQuery
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &got.body)
		if got.body["cluster"] == "bounded" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"code":"OutOfBound","message":"cluster bounded: refused, not narrowed"}`))
			return
		}
		_, _ = w.Write([]byte(`{"node":"n1","unschedulable":true}`))
	}))
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(io.Discard)
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("k8s", "nodes", "cordon", "--server", srv.URL, "--token-file", tokFile, "--data", `{"cluster":"whole","node":"n1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got.path != "/v1/k8s/nodes/cordon" || got.auth != "Bearer tok-123" || got.query != "" || got.body["node"] != "n1" {
		t.Errorf("sent %+v", got)
	}
	if !strings.Contains(out, `"unschedulable": true`) {
		t.Errorf("printed %q", out)
	}
	if _, err := run("k8s", "nodes", "cordon", "--server", srv.URL, "--token-file", tokFile, "--data", `{"cluster":"bounded","node":"n1"}`); err == nil || !strings.Contains(err.Error(), "OutOfBound") {
		t.Errorf("a refusal: %v", err)
	}
	got.path = ""
	if _, err := run("k8s", "nodes", "list", "--server", srv.URL, "--data", `{}`); err == nil || got.path != "" {
		t.Errorf("without --token-file: %v, sent %q", err, got.path)
	}
	out, err = run("k8s", "rbac")
	if err != nil || !strings.Contains(out, "kind: ClusterRole") || !strings.Contains(out, "pods/eviction") || strings.Contains(out, "- secrets") {
		t.Errorf("k8s rbac: %v\n%s", err, out)
	}
}
