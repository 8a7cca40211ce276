package alert

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/openuniverse/operator/source"
)

// The keys of the alerts Secret.
const (
	KeySlackURL   = "slack-url"
	KeyWebhookURL = "webhook-url"
	KeyWebhookKey = "webhook-hmac-key"
)

// minKeyBytes is the shortest HMAC key accepted.
const minKeyBytes = 16

// FromSecret reads the targets from the data of the Secret named ref (namespace/name, for
// the errors): slack-url, webhook-url and webhook-hmac-key, each trimmed. A Secret with
// another key, no target, a URL that is not https, or a webhook without its key (or a key
// without its webhook) is refused; the error names the Secret and the key, never a value.
func FromSecret(ref string, data map[string][]byte) (Config, error) {
	fail := func(key, format string, args ...any) (Config, error) {
		where := "alerts Secret " + ref
		if key != "" {
			where += ": key " + key
		}
		return Config{}, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
	}
	known := []string{KeySlackURL, KeyWebhookURL, KeyWebhookKey}
	var unknown []string
	for k := range data {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fail(unknown[0], "not a key the operator reads (want %s)", strings.Join(known, ", "))
	}
	val := func(k string) (string, bool) {
		v, ok := data[k]
		return strings.TrimSpace(string(v)), ok
	}
	var c Config
	for _, k := range []string{KeySlackURL, KeyWebhookURL} {
		v, ok := val(k)
		if !ok {
			continue
		}
		if v == "" {
			return fail(k, "empty")
		}
		if err := CheckURL(v); err != nil {
			return fail(k, "%v", err)
		}
		if k == KeySlackURL {
			c.SlackURL = source.NewToken(v)
		} else {
			c.WebhookURL = source.NewToken(v)
		}
	}
	key, hasKey := val(KeyWebhookKey)
	switch {
	case c.SlackURL.IsZero() && c.WebhookURL.IsZero():
		return fail("", "holds neither %s nor %s: no alert target", KeySlackURL, KeyWebhookURL)
	case !c.WebhookURL.IsZero() && !hasKey:
		return fail(KeyWebhookKey, "missing: %s is signed with it (HMAC-SHA256)", KeyWebhookURL)
	case hasKey && c.WebhookURL.IsZero():
		return fail(KeyWebhookKey, "set without %s", KeyWebhookURL)
	case hasKey && len(key) < minKeyBytes:
		return fail(KeyWebhookKey, "shorter than %d bytes (openssl rand -hex 32 makes one)", minKeyBytes)
	}
	c.WebhookKey = source.NewToken(key)
	return c, nil
}
