package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the root command with args and stdin and returns stdout, stderr and the
// exit status main would use.
func execute(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	code := 0
	if err := root.Execute(); err != nil {
		code = exitCode(err)
	}
	return stdout.String(), stderr.String(), code
}

func TestRenderCommand(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"good.yaml":   "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec:\n  image: {repository: registry.example/web, tag: \"1\"}\n  ports: [{name: http, containerPort: 8080}]\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\nstringData: {password: hunter2}\n",
		"broken.yaml": "kind: [\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		stdin      string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		"file": {
			args:     []string{"render", filepath.Join(dir, "good.yaml")},
			wantOut:  []string{"kind: Deployment", "kind: Service", "apiVersion: hanzo.ai/v1"},
			wantCode: 0,
		},
		"stdin with a secret": {
			stdin:    "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: apps}\ndata: {password: aHVudGVyMg==}\n",
			args:     []string{"render", "-"},
			wantOut:  []string{"password: '***'"},
			wantCode: 0,
		},
		"dir with a broken file": {
			args:       []string{"render", dir},
			wantOut:    []string{"kind: Deployment", "password: '***'"},
			wantStderr: []string{"broken.yaml"},
			wantCode:   2,
		},
		"other universe": {
			args:     []string{"render", "--api-group", "lux.cloud", filepath.Join(dir, "good.yaml")},
			wantOut:  []string{"kind: Service", "apiVersion: hanzo.ai/v1"},
			wantCode: 0,
		},
		"missing path": {
			args:     []string{"render", filepath.Join(dir, "nope.yaml")},
			wantCode: 2,
		},
		"bad group": {
			args:     []string{"render", "--api-group", "nodot", "-"},
			wantCode: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := execute(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, secret := range []string{"hunter2", "aHVudGVyMg=="} {
				if strings.Contains(out+stderr, secret) {
					t.Errorf("a secret value is printed:\n%s", out)
				}
			}
		})
	}
}

// TestDiffCommandErrors: an error before any comparison exits 2, never 1 (drift).
func TestDiffCommandErrors(t *testing.T) {
	cases := map[string][]string{
		"bad group":          {"diff", "--api-group", "nodot", "."},
		"missing path":       {"diff", "--kubeconfig", "/nonexistent", "/nonexistent/dir"},
		"missing kubeconfig": {"diff", "--kubeconfig", "/nonexistent", "."},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			if _, stderr, code := execute(t, "", args...); code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
		})
	}
}
