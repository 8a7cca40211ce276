package main

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestEnvDefaults(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		args []string
		flag string
		want string
	}{
		"operator variable":       {env: map[string]string{"OPERATOR_API_GROUP": "lux.cloud"}, flag: "api-group", want: "lux.cloud"},
		"legacy variable":         {env: map[string]string{"GITOPS_TOKEN_FILE": "/creds/token"}, flag: "gitops-token-file", want: "/creds/token"},
		"operator beats legacy":   {env: map[string]string{"GITOPS_REPO": "a/b", "OPERATOR_GITHUB_REPOSITORY": "c/d"}, flag: "github-repository", want: "c/d"},
		"command line beats both": {env: map[string]string{"OPERATOR_API_GROUP": "lux.cloud"}, args: []string{"--api-group=zoo.cloud"}, flag: "api-group", want: "zoo.cloud"},
		"empty counts as unset":   {env: map[string]string{"OPERATOR_API_GROUP": ""}, flag: "api-group", want: "hanzo.ai"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			(&runOptions{}).BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := envDefaults(fs); err != nil {
				t.Fatal(err)
			}
			if got := fs.Lookup(tc.flag).Value.String(); got != tc.want {
				t.Errorf("--%s = %q, want %q", tc.flag, got, tc.want)
			}
		})
	}
}

func TestEnvDefaultsRejectsBadValues(t *testing.T) {
	t.Setenv("OPERATOR_LEASE_DURATION", "soon")
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	(&runOptions{}).BindFlags(fs)
	if err := envDefaults(fs); err == nil {
		t.Fatal("a malformed OPERATOR_LEASE_DURATION was accepted")
	}
}
