package source

// Static returns Credentials that always hand out t, for tokens read from a Secret rather
// than a file (an ImageUpdate's credentialsSecret); Reload returns the same token.
func Static(t Token) Credentials { return static{t} }

type static struct{ t Token }

func (s static) Token() Token           { return s.t }
func (s static) Reload() (Token, error) { return s.t, nil }
