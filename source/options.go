package source

import "github.com/spf13/pflag"

// Options configures what every Source shares: where the token comes from.
type Options struct {
	// TokenFile is the path of a file holding the API token or password
	// (a mounted Secret key). Empty means anonymous access.
	TokenFile string
}

// BindFlags registers the shared source flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TokenFile, "gitops-token-file", o.TokenFile,
		"File holding the git host token; reloaded when it changes. Empty for anonymous access.")
}

// Credentials opens the token file, or returns nil when none is configured.
// Run Watch on the result to pick up rotations without a restart.
func (o Options) Credentials() (*TokenFile, error) {
	if o.TokenFile == "" {
		return nil, nil
	}
	return OpenTokenFile(o.TokenFile)
}
