package source

import "unicode/utf8"

// TruncateBytes cuts s to at most n bytes on a rune boundary, marking the cut with "…": the
// one bound of every message shown beyond the log (GET /gitops, status, Events, alerts).
func TruncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
