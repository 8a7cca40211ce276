package deploy

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestUIFetchesNothingElsewhere: the page's files name no other origin (no CDN, font or
// image from elsewhere: the only absolute URL is the SVG namespace, an identifier the
// browser never fetches), its writes go through the JSON path the CSRF check demands, and
// it is served with a policy that lets the browser fetch from the plane's origin only.
func TestUIFetchesNothingElsewhere(t *testing.T) {
	abs := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[/"'\s)]|@import|url\(`)
	seen := 0
	err := fs.WalkDir(uiFiles, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		seen++
		b, err := uiFiles.ReadFile(path)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
		for _, line := range strings.Split(text, "\n") {
			if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "//") || strings.HasPrefix(trimmed, "/*") {
				continue // a comment
			}
			if m := abs.FindString(line); m != "" {
				t.Errorf("%s names another origin or an import (%q): %s", path, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil || seen < 3 {
		t.Fatalf("walk the embedded page: %v (%d files)", err, seen)
	}
	js, _ := uiFiles.ReadFile("ui/app.js")
	if !strings.Contains(string(js), `init.headers['Content-Type'] = 'application/json'`) || !strings.Contains(string(js), `credentials: 'same-origin'`) {
		t.Error("app.js writes without Content-Type application/json and same-origin credentials: CookieRequestAllowed refuses them")
	}

	srv := httptest.NewServer(uiHandler())
	defer srv.Close()
	for _, f := range []string{"", "app.js", "style.css"} {
		resp, err := http.Get(srv.URL + Prefix + "/ui/" + f)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || len(body) == 0 || !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "script-src") ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET ui/%s: %d, %d bytes, CSP %q", f, resp.StatusCode, len(body), csp)
		}
	}
}
