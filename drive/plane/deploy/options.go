package deploy

import (
	"time"

	"github.com/spf13/pflag"
)

// Options are the plane's flags, shared by `operator run` and `operator deploy-plane`.
type Options struct {
	BindAddress string
	Auth        AuthOptions
	// Login: the OIDC authorization-code flow with PKCE for the dashboard; off unless
	// PublicURL and ClientID are set.
	PublicURL        string
	ClientID         string
	ClientSecretFile string
	Scopes           []string
	// Keepalive is the interval of the streams' ":" comment lines (at most 15 s).
	Keepalive time.Duration
	// StreamBuffer bounds the events queued for one stream client; a client that falls
	// further behind is disconnected (its EventSource reconnects and gets a fresh burst).
	StreamBuffer int
	// MaxStreamsPerIdentity and MaxStreams bound the open streams of one token subject and of
	// the whole plane; one more is answered 429.
	MaxStreamsPerIdentity int
	MaxStreams            int
	// DiffRate (per second) and DiffBurst bound each identity's live diffs (managed-resources:
	// one server-side dry-run per child); one more is answered 429 with Retry-After.
	DiffRate  float64
	DiffBurst int
	// ReadTimeout, WriteTimeout and IdleTimeout are the server's; a stream lifts the read
	// deadline and renews its write deadline (WriteTimeout) before every frame.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
}

// DefaultOptions are the defaults; BindAddress "" is off.
func DefaultOptions() Options {
	return Options{Auth: DefaultAuthOptions(), Scopes: []string{"openid", "profile", "email", "groups"},
		Keepalive: 15 * time.Second, StreamBuffer: 256, MaxStreamsPerIdentity: 8, MaxStreams: 512, DiffRate: 0.2, DiffBurst: 5,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
}

// BindFlags registers the flags; bindDefault is the default listen address.
func (o *Options) BindFlags(fs *pflag.FlagSet, bindDefault string) {
	d := DefaultOptions()
	*o = d
	fs.StringVar(&o.BindAddress, "deploy-plane-bind-address", bindDefault, "Address of the /v1/deploy plane (Argo CD API dialect); empty or 0 turns it off. Needs --deploy-plane-oidc-issuer.")
	fs.StringVar(&o.Auth.Issuer, "deploy-plane-oidc-issuer", "", "OIDC issuer whose signed tokens the plane accepts (discovery and JWKS). Required: the plane never runs open.")
	fs.StringVar(&o.Auth.Audience, "deploy-plane-oidc-audience", "", "Audience (client id) a token must be issued for.")
	fs.StringVar(&o.Auth.OrgClaim, "deploy-plane-org-claim", d.Auth.OrgClaim, "Token claim holding the caller's organisation.")
	fs.StringVar(&o.Auth.AdminClaim, "deploy-plane-admin-claim", d.Auth.AdminClaim, "Token claim (string or list) the admin predicate reads.")
	fs.StringSliceVar(&o.Auth.AdminValues, "deploy-plane-admin-values", d.Auth.AdminValues, "Values of --deploy-plane-admin-claim that make a caller of --deploy-plane-admin-org an admin (whole fleet, may sync and roll back).")
	fs.StringVar(&o.Auth.AdminOrg, "deploy-plane-admin-org", "", "The reserved org of the platform's super-admins: only a token whose --deploy-plane-org-claim is this org can be an admin. Empty: nobody is (the plane is read-only).")
	fs.StringVar(&o.PublicURL, "deploy-plane-public-url", "", "External URL of the plane (e.g. https://deploy.example.com), for the sign-in redirect; sign-in is off without it.")
	fs.StringVar(&o.ClientID, "deploy-plane-oidc-client-id", "", "OAuth client id of the dashboard sign-in; sign-in is off without it.")
	fs.StringVar(&o.ClientSecretFile, "deploy-plane-oidc-client-secret-file", "", "File holding the OAuth client secret (optional for a public client using PKCE).")
	fs.StringSliceVar(&o.Scopes, "deploy-plane-oidc-scopes", d.Scopes, "Scopes the sign-in requests.")
	fs.DurationVar(&o.Keepalive, "deploy-plane-keepalive", d.Keepalive, "Interval of the streams' keepalive comments (at most 15s).")
	fs.IntVar(&o.MaxStreamsPerIdentity, "deploy-plane-max-streams-per-identity", d.MaxStreamsPerIdentity, "Open streams one token subject may hold; one more is answered 429.")
	fs.IntVar(&o.MaxStreams, "deploy-plane-max-streams", d.MaxStreams, "Open streams of the whole plane; one more is answered 429.")
	fs.Float64Var(&o.DiffRate, "deploy-plane-diff-rate", d.DiffRate, "Live diffs (managed-resources, one server-side dry-run per child) per second one identity may ask for, after --deploy-plane-diff-burst.")
	fs.IntVar(&o.DiffBurst, "deploy-plane-diff-burst", d.DiffBurst, "Live diffs one identity may ask for at once.")
	fs.DurationVar(&o.ReadTimeout, "deploy-plane-read-timeout", d.ReadTimeout, "Time to read a whole request, body included.")
	fs.DurationVar(&o.WriteTimeout, "deploy-plane-write-timeout", d.WriteTimeout, "Time to write a response; a stream renews it before every frame, so a reader that stops reading is dropped after it.")
	fs.DurationVar(&o.IdleTimeout, "deploy-plane-idle-timeout", d.IdleTimeout, "Time an idle keep-alive connection stays open.")
}

// Enabled reports whether the plane should listen.
func (o Options) Enabled() bool { return o.BindAddress != "" && o.BindAddress != "0" }
