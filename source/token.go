package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

// redacted is what every printing of a Token shows.
const redacted = "[REDACTED]"

// Token is a secret read from a file: an API token, a password, a webhook
// secret. Every way of printing it (fmt verbs, %#v, JSON, logr values) shows
// "[REDACTED]"; Reveal is the only way to the value and is called only where
// the value goes into a request header or an HMAC key.
type Token struct {
	v string
}

// NewToken wraps s.
func NewToken(s string) Token { return Token{v: s} }

// Reveal returns the secret. Call it only to set a header or key an HMAC.
func (t Token) Reveal() string { return t.v }

// IsZero reports whether the token is empty.
func (t Token) IsZero() bool { return t.v == "" }

// String implements fmt.Stringer.
func (t Token) String() string { return redacted }

// GoString implements fmt.GoStringer.
func (t Token) GoString() string { return redacted }

// Format implements fmt.Formatter, so that no verb or flag reveals the value.
func (t Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON implements json.Marshaler.
func (t Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler (YAML, flags, some loggers).
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalLog implements logr.Marshaler.
func (t Token) MarshalLog() any { return redacted }

// Scrub returns err with every occurrence of the token's value replaced, for
// errors that come from libraries we do not control. It returns nil for nil.
func (t Token) Scrub(err error) error {
	if err == nil || t.v == "" || !strings.Contains(err.Error(), t.v) {
		return err
	}
	return scrubbed{msg: strings.ReplaceAll(err.Error(), t.v, redacted), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (s scrubbed) Error() string { return s.msg }

// Unwrap keeps errors.Is and errors.As working on the original chain.
func (s scrubbed) Unwrap() error { return s.err }

// Credentials hands out the current token. Reload re-reads it after the
// remote refused it, in case it was rotated since it was last read.
type Credentials interface {
	Token() Token
	Reload() (Token, error)
}

// NoCredentials reports whether c is nil, or a nil *TokenFile (as returned
// by Options.Credentials when no file is configured) held in the interface.
func NoCredentials(c Credentials) bool {
	f, ok := c.(*TokenFile)
	return c == nil || (ok && f == nil)
}

// ErrEmptyToken is returned when a token file holds only whitespace.
var ErrEmptyToken = errors.New("token file is empty")

// TokenFile holds the token read from a file (typically a mounted Secret key).
// The value is trimmed of surrounding whitespace. Watch reloads it when the
// file changes; Reload re-reads it on demand. It is safe for concurrent use.
type TokenFile struct {
	path string

	mu  sync.RWMutex
	tok Token
}

// OpenTokenFile reads the token at path.
func OpenTokenFile(path string) (*TokenFile, error) {
	f := &TokenFile{path: path}
	if _, err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// String implements fmt.Stringer: the path, never the token.
func (f *TokenFile) String() string {
	if f == nil {
		return "TokenFile(<nil>)"
	}
	return "TokenFile(" + f.path + ")"
}

// GoString implements fmt.GoStringer.
func (f *TokenFile) GoString() string { return f.String() }

// Format implements fmt.Formatter, so that no verb or flag (%v %+v %#v %s %q
// %x …) prints the token: fmt would otherwise print the unexported fields raw.
func (f *TokenFile) Format(s fmt.State, _ rune) { _, _ = s.Write([]byte(f.String())) }

// MarshalLog implements logr.Marshaler.
func (f *TokenFile) MarshalLog() any { return f.String() }

// MarshalJSON implements json.Marshaler.
func (f *TokenFile) MarshalJSON() ([]byte, error) { return json.Marshal(f.String()) }

// Loopback reports whether host (a name or an IP, without port) is this
// machine: the only place plain http may carry a token.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Path returns the file the token is read from.
func (f *TokenFile) Path() string { return f.path }

// Token returns the token as last read. A nil *TokenFile holds the empty
// token, so a nil one stored in an interface fails closed rather than panics.
func (f *TokenFile) Token() Token {
	if f == nil {
		return Token{}
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.tok
}

// Reload re-reads the file. On error the previous token is kept.
func (f *TokenFile) Reload() (Token, error) {
	if f == nil {
		return Token{}, errors.New("no token file configured")
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		// os errors name the path only, never the content.
		return f.Token(), fmt.Errorf("read token file: %w", err)
	}
	v := string(bytes.TrimSpace(b))
	if v == "" {
		return f.Token(), fmt.Errorf("read token file %s: %w", f.path, ErrEmptyToken)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tok = Token{v: v}
	return f.tok, nil
}

// Watch reloads the token whenever the file, or the directory entry it is
// mounted through, changes, until ctx is done. It watches the parent
// directory, so Kubernetes' atomic symlink swap of Secret volumes
// (..data) is seen as well as an in-place write. It returns nil when ctx ends.
func (f *TokenFile) Watch(ctx context.Context, log logr.Logger) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch token file %s: %w", f.path, err)
	}
	defer func() { _ = w.Close() }()
	dir := filepath.Dir(f.path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch token file directory %s: %w", dir, err)
	}
	// The file may have changed between OpenTokenFile and the watch starting.
	f.reloadLogged(log)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Chmod) {
				continue
			}
			f.reloadLogged(log)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Error(err, "Watching token file", "path", f.path)
		}
	}
}

func (f *TokenFile) reloadLogged(log logr.Logger) {
	old := f.Token()
	tok, err := f.Reload()
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		// Mid-swap or deleted; the next event or a Reload on failure fixes it.
		log.V(1).Info("Token file missing, keeping the previous token", "path", f.path)
	case err != nil:
		log.Error(err, "Reloading token file", "path", f.path)
	case tok != old:
		log.Info("Token file reloaded", "path", f.path)
	}
}
