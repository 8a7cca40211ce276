package image

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzTenantRewrite: with a namespace, every site Locate returns is in a document of that
// namespace naming the target's full repository (or marked for it), a file with no document
// of the namespace is a ForeignFileError, and normalizeRepo is idempotent.
func FuzzTenantRewrite(f *testing.F) {
	f.Add("metadata: {namespace: org-a}\nspec: {image: {repository: ghcr.io/orgb/cloud, tag: v1}}\n---\nmetadata: {namespace: org-b}\nimage: ghcr.io/orgb/cloud:v1\n", "ghcr.io/orgb/cloud")
	f.Add("metadata: {namespace: org-b}\nimage: {repository: evil.example/x/cloud, tag: v1}\n", "evil.example/x/cloud")
	f.Add("metadata:\n  namespace: org-a\nv: v1 # {\"$imageupdate\": \"org-a:x\"}\n", "docker.io/library/nginx")
	f.Fuzz(func(t *testing.T, in, repo string) {
		tg := Target{Repository: repo, Marker: "org-a:x", Namespace: "org-a"}
		sites, err := Locate("f.yaml", []byte(in), tg)
		var ff *ForeignFileError
		if errors.As(err, &ff) && ff.Namespace != "org-a" {
			t.Fatalf("foreign file error names %q", ff.Namespace)
		}
		for _, s := range sites {
			if s.Object.Namespace != "org-a" {
				t.Fatalf("a site in namespace %q: %+v", s.Object.Namespace, s)
			}
			if s.refPrefix != "" && normalizeRepo(strings.TrimSuffix(s.refPrefix, ":")) != normalizeRepo(repo) {
				t.Fatalf("a site of repository %q for %q", s.refPrefix, repo)
			}
		}
		if n := normalizeRepo(repo); n != "" && normalizeRepo(n) != n {
			t.Fatalf("normalizeRepo(%q) = %q, again %q", repo, n, normalizeRepo(n))
		}
	})
}

// FuzzRegistryAnswer: whatever a registry answers (status, Link header, body), a listing
// fetches at most MaxPages pages, returns at most MaxTags tags, and an error never carries the
// registry's words.
func FuzzRegistryAnswer(f *testing.F) {
	f.Add(200, `</v2/x/tags/list?last=a>; rel="next"`, `{"name":"x","tags":["a","b"]}`)
	f.Add(500, "", `{"errors":[{"code":"UNKNOWN","message":"secret-internal-detail"}]}`)
	f.Add(200, "", `{"name":"x","tags":["`+strings.Repeat("t\",\"", 50)+`"]}`)
	f.Add(401, "", "not json at all, a long body from an unfriendly host")
	f.Fuzz(func(t *testing.T, code int, link, body string) {
		if code < 100 || code > 599 {
			code = 200
		}
		var pages atomic.Int32
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			h := http.Header{}
			st, b := http.StatusOK, ""
			if strings.HasSuffix(r.URL.Path, "/tags/list") {
				pages.Add(1)
				st, b = code, body
				if link != "" {
					h.Set("Link", link)
				}
			}
			return &http.Response{StatusCode: st, Header: h, Body: io.NopCloser(strings.NewReader(b)), Request: r}, nil
		})
		r := &Registry{Transport: rt, Timeout: 2 * time.Second, MaxPages: 5, MaxTags: 20, MaxBytes: 4096}
		tags, err := r.ListTags(context.Background(), "reg.example/x", nil, false)
		if pages.Load() > 5 {
			t.Fatalf("%d pages fetched", pages.Load())
		}
		if err == nil && len(tags) > 20 {
			t.Fatalf("%d tags returned", len(tags))
		}
		if err != nil && len(body) >= 12 && strings.Contains(err.Error(), body) {
			t.Fatalf("the registry's body in the error: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "secret-internal-detail") {
			t.Fatalf("the registry's words in the error: %v", err)
		}
	})
}
