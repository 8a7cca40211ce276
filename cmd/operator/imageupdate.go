package main

import (
	"errors"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
	"github.com/openuniverse/operator/upgrade/image"
)

// setupImageUpdate adds the ImageUpdate controller. sweep starts the git sweep now (nil when
// the sweep is off); creds is the operator's own token, used only for the repository the
// operator itself follows when an ImageUpdate names no credentialsSecret.
func setupImageUpdate(mgr ctrl.Manager, o *runOptions, creds *source.TokenFile, sweep func()) error {
	r := &image.Reconciler{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Writers:  writers(o, credsOrNil(creds)),
		Sweep:    sweep,
		Recorder: mgr.GetEventRecorder("universe-operator-imageupdate"),
	}
	return r.Setup(mgr)
}

// writers opens the write path of an ImageUpdate's writebackRepo: a git URL through go-git,
// owner/name through the GitHub git data API (at --github-api-url).
func writers(o *runOptions, own source.Credentials) image.WriterFor {
	return func(repo string, c *image.GitCredentials) (source.Writer, error) {
		repo = strings.TrimSpace(repo)
		var creds source.Credentials
		username := ""
		if c != nil {
			creds, username = source.Static(c.Token), c.Username
			if c.Token.IsZero() {
				creds = nil
			}
		} else if repo == o.Git.URL || repo == o.GitHub.Repository {
			creds = own
		}
		if isGitURL(repo) {
			wo := gitclone.WriterOptions{URL: repo, Username: username, Timeout: o.Git.Timeout}
			if username == "" && repo == o.Git.URL {
				wo.Username = o.Git.Username
			}
			if c != nil {
				wo.SSHKey, wo.KnownHosts = c.SSHKey, c.KnownHosts
			}
			if len(wo.SSHKey) == 0 && repo == o.Git.URL {
				wo.SSHKeyFile, wo.KnownHostsFile = o.Git.SSHKeyFile, o.Git.KnownHostsFile
			}
			return gitclone.NewWriter(creds, wo)
		}
		owner, name, ok := strings.Cut(repo, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q is neither a git URL (https://, http://, ssh://, git@host:path) nor owner/name", repo)
		}
		if creds == nil {
			return nil, errors.New("the GitHub write path needs a token: set credentialsSecret (key token)")
		}
		gho := o.GitHub
		gho.Repository = repo
		return github.NewWriter(creds, gho, source.RetryPolicy{})
	}
}

func isGitURL(s string) bool {
	for _, p := range []string{"https://", "http://", "ssh://", "file://", "git@"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
