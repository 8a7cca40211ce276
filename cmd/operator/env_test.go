package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// load resolves run's configuration from args, the environment env and nothing else of the
// test process's environment.
func load(t *testing.T, env map[string]string, args ...string) (*runOptions, *pflag.FlagSet, *loaded) {
	t.Helper()
	l, o, fs, err := tryLoad(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return o, fs, l
}

func tryLoad(env map[string]string, args ...string) (*loaded, *runOptions, *pflag.FlagSet, error) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := &runOptions{}
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	l, err := loadConfig(fs, o, environ)
	return l, o, fs, err
}

// TestConfigPrecedence: flag > OPERATOR_* > legacy env > file > legacy default > default,
// each value reported with its origin.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "operator.yaml")
	if err := os.WriteFile(file, []byte("github-repository: file/repo\ngitops-resync: 3m\nlog-level: debug\ngitops-namespaces: [a, b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		env        map[string]string
		args       []string
		flag, want string
		origin     Origin
	}{
		"default":                           {flag: "api-group", want: "hanzo.ai", origin: OriginDefault},
		"operator variable":                 {env: map[string]string{"OPERATOR_API_GROUP": "lux.cloud"}, flag: "api-group", want: "lux.cloud", origin: OriginEnv},
		"legacy variable":                   {env: map[string]string{"GITOPS_TOKEN_FILE": "/creds/token"}, flag: "gitops-token-file", want: "/creds/token", origin: OriginLegacyEnv},
		"operator beats legacy":             {env: map[string]string{"GITOPS_REPO": "a/b", "OPERATOR_GITHUB_REPOSITORY": "c/d"}, flag: "github-repository", want: "c/d", origin: OriginEnv},
		"flag beats both":                   {env: map[string]string{"OPERATOR_API_GROUP": "lux.cloud"}, args: []string{"--api-group=zoo.cloud"}, flag: "api-group", want: "zoo.cloud", origin: OriginFlag},
		"empty counts as unset":             {env: map[string]string{"OPERATOR_API_GROUP": ""}, flag: "api-group", want: "hanzo.ai", origin: OriginDefault},
		"file":                              {args: []string{"--config", file}, flag: "gitops-resync", want: "3m0s", origin: OriginFile},
		"file list":                         {args: []string{"--config", file}, flag: "gitops-namespaces", want: "a,b", origin: OriginFile},
		"file by OPERATOR_CONFIG":           {env: map[string]string{"OPERATOR_CONFIG": file}, flag: "log-level", want: "debug", origin: OriginFile},
		"legacy beats file":                 {env: map[string]string{"GITOPS_REPO": "legacy/repo"}, args: []string{"--config", file}, flag: "github-repository", want: "legacy/repo", origin: OriginLegacyEnv},
		"env beats file":                    {env: map[string]string{"OPERATOR_LOG_LEVEL": "error"}, args: []string{"--config", file}, flag: "log-level", want: "error", origin: OriginEnv},
		"flag beats file":                   {args: []string{"--config", file, "--gitops-resync=20s"}, flag: "gitops-resync", want: "20s", origin: OriginFlag},
		"legacy seconds":                    {env: map[string]string{"GITOPS_RESYNC_SECS": "90"}, flag: "gitops-resync", want: "1m30s", origin: OriginLegacyEnv},
		"legacy seconds floor":              {env: map[string]string{"GITOPS_RESYNC_SECS": "3"}, flag: "gitops-resync", want: "10s", origin: OriginLegacyEnv},
		"legacy unparseable":                {env: map[string]string{"GITOPS_RESYNC_SECS": "soon"}, flag: "gitops-resync", want: "45s", origin: OriginLegacyEnv},
		"plural before singular":            {env: map[string]string{"GITOPS_NAMESPACES": "a b\tc", "GITOPS_NAMESPACE": "x"}, flag: "gitops-namespaces", want: "a,b,c", origin: OriginLegacyEnv},
		"blank plural falls through":        {env: map[string]string{"GITOPS_NAMESPACES": " , ", "GITOPS_NAMESPACE": "x"}, flag: "gitops-namespaces", want: "x", origin: OriginLegacyEnv},
		"star anywhere":                     {env: map[string]string{"GITOPS_NAMESPACES": "a,*"}, flag: "gitops-namespaces", want: "*", origin: OriginLegacyEnv},
		"switch must be true":               {env: map[string]string{"UPGRADE_FSM_ENABLED": "yes"}, flag: "upgrade-fsm", want: "false", origin: OriginLegacyEnv},
		"local cluster fallback":            {env: map[string]string{"APPS_LOCAL_CLUSTER": "edge"}, flag: "drive-cluster", want: "edge", origin: OriginLegacyEnv},
		"poll floor":                        {env: map[string]string{"APPS_POLL_SECS": "1"}, flag: "drive-interval", want: "5s", origin: OriginLegacyEnv},
		"legacy default":                    {env: map[string]string{"GITOPS_RECONCILE_ENABLED": "true"}, flag: "github-path", want: "infra/k8s/operator/crs", origin: OriginLegacyDefault},
		"no legacy default off legacy mode": {flag: "github-path", want: "", origin: OriginDefault},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, fs, l := load(t, tc.env, tc.args...)
			_ = o
			if got := flagValue(fs.Lookup(tc.flag)); got != tc.want {
				t.Errorf("--%s = %q, want %q", tc.flag, got, tc.want)
			}
			if got := l.Origins[tc.flag].Origin; got != tc.origin {
				t.Errorf("--%s origin %q, want %q", tc.flag, got, tc.origin)
			}
		})
	}
}

func TestConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"unknown key":    {args: []string{"--config", write("a.yaml", "git-url: https://g.example/u.git\ngit-urll: x\n")}, want: `unknown key "git-urll"`},
		"duplicate key":  {args: []string{"--config", write("b.yaml", "log-level: info\nlog-level: debug\n")}, want: "log-level"},
		"map value":      {args: []string{"--config", write("c.yaml", "gitops-namespaces: {a: b}\n")}, want: `"gitops-namespaces"`},
		"bad file value": {args: []string{"--config", write("d.yaml", "gitops-resync: soon\n")}, want: "file " + filepath.Join(dir, "d.yaml")},
		"bad env value":  {env: map[string]string{"OPERATOR_LEASE_DURATION": "soon"}, want: "OPERATOR_LEASE_DURATION"},
		"missing file":   {args: []string{"--config", filepath.Join(dir, "none.yaml")}, want: "none.yaml"},
		"config in file": {args: []string{"--config", write("e.yaml", "config: other.yaml\n")}, want: `unknown key "config"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := tryLoad(tc.env, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestUnknownLegacyVariablesAreWarned: a GITOPS_/APPS_/AGENT_ variable no table knows is
// named in a warning, never silently ignored; known ones are not.
func TestUnknownLegacyVariablesAreWarned(t *testing.T) {
	_, _, l := load(t, map[string]string{"GITOPS_REPOSITORY": "a/b", "APPS_PLATFORM": "x", "AGENT_DEPLOY_URL": "y", "GITOPS_REPO": "c/d", "OPERATOR_GIT_URLL": "z"})
	got := strings.Join(l.Warnings, "\n")
	for _, name := range []string{"GITOPS_REPOSITORY", "APPS_PLATFORM", "AGENT_DEPLOY_URL", "OPERATOR_GIT_URLL"} {
		if !strings.Contains(got, name) {
			t.Errorf("no warning names %s:\n%s", name, got)
		}
	}
	if strings.Contains(got, "GITOPS_REPO ") {
		t.Errorf("a known variable was warned about:\n%s", got)
	}
	if diff := cmp.Diff([]string{"GITOPS_REPO"}, l.Markers); diff != "" {
		t.Errorf("legacy mode markers (-want +got):\n%s", diff)
	}
}
