package main

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/reconcile/install"
	"github.com/openuniverse/operator/source/commitstatus"
)

// TestRunRefusesCommitStatusAtStart: a --commit-status flag that is set either acts or
// `operator run` exits at start, before it reaches a cluster, saying which flag is missing.
func TestRunRefusesCommitStatusAtStart(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"url without provider":   {[]string{"--commit-status-url", "https://gitea.example/api/v1"}, "--commit-status-url is set but --commit-status is not"},
		"context without one":    {[]string{"--commit-status-context", "x/y"}, "--commit-status-context is set but --commit-status is not"},
		"unknown provider":       {[]string{"--github-repository", "o/r", "--commit-status", "bitbucket"}, `--commit-status "bitbucket"`},
		"no token file":          {[]string{"--github-repository", "o/r", "--commit-status", "github"}, "needs --commit-status-token-file"},
		"gitea without its url":  {[]string{"--github-repository", "o/r", "--commit-status", "gitea", "--commit-status-token-file", "/t"}, "needs --commit-status-url"},
		"no git source":          {[]string{"--commit-status", "github", "--commit-status-token-file", "/t"}, "needs the gitops loop"},
		"gitops loop off":        {[]string{"--controllers", "kinds", "--github-repository", "o/r", "--commit-status", "github", "--commit-status-token-file", "/t"}, "needs the gitops loop"},
		"no repository from url": {[]string{"--git-url", "file:///tmp/u", "--commit-status", "gitlab", "--commit-status-url", "https://gl.example/api/v4", "--commit-status-token-file", "/t"}, "--commit-status-repository"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := execute(t, "", append([]string{"run", "--kubeconfig", "/nonexistent"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, stderr, tc.want)
			}
		})
	}
}

func TestResolveCommitStatusDefaults(t *testing.T) {
	base := func() *runOptions {
		o := &runOptions{Controllers: []string{"gitops"}}
		o.CommitStatus = commitstatus.DefaultOptions()
		o.CommitStatus.Provider, o.CommitStatus.TokenFile = commitstatus.GitHub, "/t"
		o.GitHub.BaseURL = "https://api.github.com/"
		return o
	}
	cases := []struct {
		name           string
		mod            func(*runOptions)
		wantRepo, wURL string
	}{
		{"github repository", func(o *runOptions) { o.GitHub.Repository = "o/r" }, "o/r", ""},
		{"enterprise api", func(o *runOptions) { o.GitHub.Repository, o.GitHub.BaseURL = "o/r", "https://ghe.example/api/v3/" }, "o/r", "https://ghe.example/api/v3/"},
		{"git url", func(o *runOptions) {
			o.Git.URL, o.CommitStatus.Provider, o.CommitStatus.URL = "https://gitea.example/org/universe.git", commitstatus.Gitea, "https://gitea.example/api/v1"
		}, "org/universe", "https://gitea.example/api/v1"},
		{"explicit repository wins", func(o *runOptions) { o.GitHub.Repository, o.CommitStatus.Repository = "o/r", "o/other" }, "o/other", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			c.mod(o)
			cs, err := resolveCommitStatus(o)
			if err != nil || cs.Repository != c.wantRepo || cs.URL != c.wURL {
				t.Errorf("resolve = %q %q, %v; want %q %q", cs.Repository, cs.URL, err, c.wantRepo, c.wURL)
			}
		})
	}
}

// TestInstallCommitStatus: install passes --commit-status through to the Deployment's
// operator run, with the token as a read-only mount of its Secret.
func TestInstallCommitStatus(t *testing.T) {
	manifests := printed(t, kinds.DefaultAPIGroup, "install", "--print", "--github-repository", "o/u", "--gitops-webhook-secret", "w",
		"--commit-status", "github", "--commit-status-token-secret", "statuses", "--commit-status-target-url", "https://ops.example/gitops")
	d := deploymentOf(t, objects(t, manifests))
	ctr := d.Spec.Template.Spec.Containers[0]
	o := runOf(t, ctr)
	cs := o.CommitStatus
	if cs.Provider != commitstatus.GitHub || cs.TokenFile != install.CommitStatusTokenFile || cs.TargetURL != "https://ops.example/gitops" {
		t.Errorf("installed commit status options %+v", cs)
	}
	var vol string
	for _, m := range ctr.VolumeMounts {
		if m.MountPath == path.Dir(install.CommitStatusTokenFile) && m.ReadOnly {
			vol = m.Name
		}
	}
	var src *corev1.SecretVolumeSource
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == vol {
			src = v.Secret
		}
	}
	if src == nil || src.SecretName != "statuses" || len(src.Items) != 1 || src.Items[0].Key != "token" {
		t.Errorf("token mount %q from %+v, want Secret statuses key token", vol, src)
	}
}
