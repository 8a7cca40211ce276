package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/source/gitclone"
	"github.com/openuniverse/operator/source/github"
	"github.com/openuniverse/operator/upgrade/image"
)

// imageOptions are the ImageUpdate loop's registry rules (--image-*).
type imageOptions struct {
	RegistryHosts   []string
	AllowPrivate    bool
	MaxTags         int
	MaxTagBytes     int
	MaxTagPages     int
	RegistryTimeout time.Duration
}

func (o *imageOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.RegistryHosts, "image-registry-hosts", nil,
		"Registry hosts an ImageUpdate may list tags from (globs: ghcr.io, *.pkg.dev, registry.example:5000; token realms too); empty means any public host.")
	fs.BoolVar(&o.AllowPrivate, "image-allow-private-registries", false,
		"Let ImageUpdates reach registries on loopback, private (RFC 1918, fc00::/7, CGNAT) and link-local addresses (cloud metadata at 169.254.169.254, in-cluster Services). Checked on the address dialed.")
	fs.IntVar(&o.MaxTags, "image-max-tags", image.DefaultMaxTags, "Most tags one listing may return; a longer list is a RegistryError.")
	fs.IntVar(&o.MaxTagBytes, "image-max-tag-bytes", image.DefaultMaxBytes, "Most bytes of registry answers one listing may read.")
	fs.IntVar(&o.MaxTagPages, "image-max-tag-pages", image.DefaultMaxPages, "Most tag-list pages one listing may fetch.")
	fs.DurationVar(&o.RegistryTimeout, "image-registry-timeout", 30*time.Second, "Bound of one tag listing.")
}

// registry is the tag lister of these options.
func (o *imageOptions) registry() (*image.Registry, error) {
	if err := image.ValidHostGlobs(o.RegistryHosts); err != nil {
		return nil, fmt.Errorf("--image-registry-hosts: %w", err)
	}
	if o.MaxTags < 0 || o.MaxTagBytes < 0 || o.MaxTagPages < 0 {
		return nil, errors.New("--image-max-tags, --image-max-tag-bytes and --image-max-tag-pages must not be negative")
	}
	return &image.Registry{Hosts: o.RegistryHosts, AllowPrivate: o.AllowPrivate, MaxTags: o.MaxTags, MaxBytes: o.MaxTagBytes,
		MaxPages: o.MaxTagPages, Timeout: o.RegistryTimeout}, nil
}

// setupImageUpdate adds the ImageUpdate controller. wake asks the git sweep for a pass after
// a push (nil when the sweep is off; its writers are wakingWriters); creds is the operator's own token, used only for the repository the
// operator itself follows when an ImageUpdate names no credentialsSecret — and there only for
// a file the sweep's finder sees declaring an object of the ImageUpdate's namespace.
func setupImageUpdate(mgr ctrl.Manager, o *runOptions, creds *source.TokenFile, wake func(context.Context) error) error {
	reg, err := o.Image.registry()
	if err != nil {
		return err
	}
	u := universe(o)
	own := credsOrNil(creds)
	if u == nil {
		own = nil // no finder to check a file against: no ImageUpdate writes with the operator's token
	}
	r := &image.Reconciler{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Registry: reg,
		Writers:  waking(ownFor(u, writers(o, own), writersWith(o, nil, false)), wake, ctrl.Log.WithName("imageupdate")),
		Recorder: mgr.GetEventRecorder("universe-operator-imageupdate"),
		Alerts:   o.alertHook(),
		Tenancy:  o.Tenancy,
		Universe: u,
	}
	return r.Setup(mgr)
}

// ownFor opens writebackRepo with the operator's token (withOwn) only when it is the universe
// repository the finder checks files of, exactly as spelt; any other, without a
// credentialsSecret, gets no token (withoutOwn).
func ownFor(u *image.Universe, withOwn, withoutOwn image.WriterFor) image.WriterFor {
	return func(repo string, c *image.GitCredentials) (source.Writer, error) {
		if c == nil && (u == nil || strings.TrimSpace(repo) != u.Repo) {
			return withoutOwn(repo, c)
		}
		return withOwn(repo, c)
	}
}

// universe is the repository the operator follows, as the CR write path finds files in it;
// nil without the sweep's source (then no ImageUpdate gets the operator's token: writers
// hands it only to that repository, and without the sweep there is none to hand).
func universe(o *runOptions) *image.Universe {
	if o.commits == nil {
		return nil
	}
	repo := o.Git.URL
	if repo == "" {
		repo = o.GitHub.Repository
	}
	return &image.Universe{Repo: repo, Source: o.commits, Limits: o.GitOps.Limits}
}

// writers opens the write path of an ImageUpdate's writebackRepo: a git URL through go-git,
// owner/name through the GitHub git data API (at --github-api-url).
func writers(o *runOptions, own source.Credentials) image.WriterFor {
	return writersWith(o, own, true)
}

// writersWith is writers; ownKey says whether the operator's own --git-ssh-key-file and
// username may be used for its repository (never for an ImageUpdate the finder cannot check).
func writersWith(o *runOptions, own source.Credentials, ownKey bool) image.WriterFor {
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
			if username == "" && repo == o.Git.URL && ownKey {
				wo.Username = o.Git.Username
			}
			if c != nil {
				wo.SSHKey, wo.KnownHosts = c.SSHKey, c.KnownHosts
			}
			if len(wo.SSHKey) == 0 && repo == o.Git.URL && ownKey {
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
