package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// rustEnv reads the Rust operator's documented environment blocks (testdata, with their
// provenance).
func rustEnv(t *testing.T) map[string][]corev1.EnvVar {
	t.Helper()
	b, err := os.ReadFile("testdata/rust-operator-env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string][]corev1.EnvVar{}
	if err := yaml.UnmarshalStrict(b, &blocks); err != nil {
		t.Fatal(err)
	}
	return blocks
}

func envMap(vars ...[]corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, vs := range vars {
		for _, v := range vs {
			m[v.Name] = v.Value
		}
	}
	return m
}

func loopsOn(l *loaded) []string {
	var on []string
	for _, d := range l.Loops {
		if d.On {
			on = append(on, d.Loop)
		}
	}
	return on
}

// TestRustDeploymentEnvironment swaps the Rust operator's documented environment in for our
// flags: each block turns on its loop alone (every master switch defaults off), with the
// Rust defaults and parsing rules, and the tokens given as values become in-memory
// credentials that `config print` never shows.
func TestRustDeploymentEnvironment(t *testing.T) {
	blocks := rustEnv(t)
	for _, name := range []string{"gitops", "drive", "agents", "tenants", "preflight-gc"} {
		if len(blocks[name]) == 0 {
			t.Fatalf("testdata has no %s block", name)
		}
	}
	type want struct {
		loops    []string
		settings map[string]string
	}
	cases := map[string]want{
		"gitops": {loops: []string{"kinds", "gitops", "imageupdate"}, settings: map[string]string{
			"github-repository": "hanzoai/universe", "github-branch": "main", "github-path": "infra/k8s/operator/crs",
			"github-api-url": "https://api.github.com", "gitops-token-file": "/creds/token", "gitops-resync": "45s",
			"gitops-namespaces": "hanzo", "namespace": "hanzo-operator-system", "leader-elect": "true",
			"health-probe-bind-address": "0.0.0.0:8081",
			// the Rust /reconcile took no secret: ours is off rather than open
			"webhook-bind-address": "0", "upgrade-fsm": "false",
		}},
		"drive": {loops: []string{"kinds", "drive", "imageupdate"}, settings: map[string]string{
			"drive-platform-url": "https://platform.hanzo.ai", "drive-org-id": "hanzo", "drive-cluster": "hanzo-k8s",
			"drive-mode": "dry-run", "drive-allow": "hanzo/*", "drive-interval": "1m0s", "drive-token-file": "",
			"github-repository": "", // no sweep: no Rust git defaults
		}},
		"agents": {loops: []string{"kinds", "agents", "imageupdate"}, settings: map[string]string{
			"agent-deploy-mode": "bind-only", "agent-cloud-url": "https://cloud.hanzo.ai", "agent-visor-url": "https://visor.hanzo.ai",
			"agent-cloud-token-file": "",
		}},
		"tenants": {loops: []string{"kinds", "tenants", "imageupdate"}, settings: map[string]string{}},
		"preflight-gc": {loops: []string{"kinds", "imageupdate", "upgrade-fsm"}, settings: map[string]string{
			"upgrade-fsm": "true", "preflight-gc-interval": "10m0s", "preflight-gc-grace": "5m0s",
		}},
		// a first deploy is inert: the variables without their switches start no loop
		"switches off": {loops: []string{"kinds", "imageupdate"}, settings: map[string]string{"drive-mode": "dry-run"}},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			env := envMap(blocks[name])
			if name == "switches off" {
				all := envMap(blocks["gitops"], blocks["drive"], blocks["agents"], blocks["tenants"])
				for _, sw := range []string{"GITOPS_RECONCILE_ENABLED", "APPS_CONTROLLER", "TENANT_CONTROLLER", "AGENT_DEPLOY_MODE"} {
					delete(all, sw)
				}
				env = all
			}
			o, fs, l := load(t, env)
			if !l.Legacy {
				t.Fatal("legacy mode off")
			}
			if diff := cmp.Diff(w.loops, loopsOn(l)); diff != "" {
				t.Errorf("loops on (-want +got):\n%s", diff)
			}
			got := map[string]string{}
			for k := range w.settings {
				got[k] = flagValue(fs.Lookup(k))
			}
			if diff := cmp.Diff(w.settings, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			for _, d := range l.Loops {
				if d.Why == "" {
					t.Errorf("loop %s: no reason", d.Loop)
				}
			}
			switch name {
			case "drive":
				if o.driveToken == nil || o.driveToken.Token().Reveal() != "test-platform-token-7f3a" || o.driveToken.From != "APPS_SERVICE_TOKEN" {
					t.Errorf("drive token %v, want APPS_SERVICE_TOKEN's value in memory", o.driveToken)
				}
			case "agents":
				if o.agentToken == nil || o.agentToken.Token().Reveal() != "test-agent-token-c41e" {
					t.Errorf("agent token %v, want AGENT_DEPLOY_SERVICE_TOKEN's value in memory", o.agentToken)
				}
			}
			var out bytes.Buffer
			printConfig(&out, fs, o, l)
			for _, tok := range []string{"test-platform-token-7f3a", "test-agent-token-c41e"} {
				if strings.Contains(out.String(), tok) {
					t.Errorf("config print shows a token:\n%s", out.String())
				}
			}
			for _, tok := range []*memoryToken{o.driveToken, o.agentToken} {
				if tok == nil {
					continue
				}
				if s := fmt.Sprintf("%v %s %+v %#v", tok, tok, tok, tok); strings.Contains(s, "test-") {
					t.Errorf("a memory token prints its value: %s", s)
				}
			}
		})
	}
	// The token variables in the order the Rust operator reads them.
	o, _, _ := load(t, map[string]string{"APPS_CONTROLLER": "true", "PLATFORM_SERVICE_TOKEN": "p", "HANZO_API_KEY": "h"})
	if o.driveToken == nil || o.driveToken.From != "PLATFORM_SERVICE_TOKEN" {
		t.Errorf("drive token from %v, want PLATFORM_SERVICE_TOKEN before HANZO_API_KEY", o.driveToken)
	}
	// A token file wins over a token value.
	o, _, _ = load(t, map[string]string{"APPS_SERVICE_TOKEN": "v"}, "--drive-token-file=/t")
	if o.driveToken != nil {
		t.Error("a token value was kept beside --drive-token-file")
	}
	// --controllers beats the master switches.
	_, _, l := load(t, map[string]string{"GITOPS_RECONCILE_ENABLED": "true"}, "--controllers=kinds")
	if diff := cmp.Diff([]string{"kinds"}, loopsOn(l)); diff != "" {
		t.Errorf("--controllers in legacy mode (-want +got):\n%s", diff)
	}
	// Outside legacy mode our default holds.
	_, _, l = load(t, map[string]string{"OPERATOR_LOG_LEVEL": "debug"})
	if l.Legacy || !slices.Equal(loopsOn(l), []string{"kinds", "gitops", "imageupdate"}) {
		t.Errorf("legacy %t loops %v, want our defaults", l.Legacy, loopsOn(l))
	}
}

// TestConfigPrint: every setting with its origin, YAML that --config reads back to the same
// configuration.
func TestConfigPrint(t *testing.T) {
	out, stderr, code := execute(t, "", "config", "print", "--gitops-resync=2m", "--controllers=kinds,drive")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, line := range []string{`gitops-resync: "2m0s"  # flag --gitops-resync`, `api-group: "hanzo.ai"  # default`, "#   drive: on (--controllers from flag --controllers)", "#   gitops: off"} {
		if !strings.Contains(out, line+"\n") && !strings.Contains(out, line) {
			t.Errorf("no line %q in:\n%s", line, out)
		}
	}
	file := t.TempDir() + "/printed.yaml"
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	o1, _, _ := load(t, nil, "--gitops-resync=2m", "--controllers=kinds,drive")
	o2, _, l := load(t, nil, "--config", file)
	o1.loaded, o2.loaded, o1.ConfigFile, o2.ConfigFile = nil, nil, "", ""
	if diff := cmp.Diff(o1, o2, cmp.AllowUnexported(runOptions{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("config print read back is another configuration (-flags +file):\n%s", diff)
	}
	if l.Origins["gitops-resync"].Origin != OriginFile {
		t.Errorf("origin %v", l.Origins["gitops-resync"])
	}
}
