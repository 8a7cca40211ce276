package kinds_test

import (
	"strings"
	"testing"

	"github.com/openuniverse/operator/kinds"
)

// dg is a well-formed sha256 digest (name refuses a short one).
const dg = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestParseImageRef: every spelling parses into its parts as written and String gives the
// same text back; Canonical fills Docker Hub's defaults; SpecParts joins back to the reference.
func TestParseImageRef(t *testing.T) {
	cases := []struct {
		ref                      string
		want                     kinds.ImageRef
		canonical, repo, specTag string
	}{
		{"ghcr.io/hanzo/cloud:v1.2.3", kinds.ImageRef{Registry: "ghcr.io", Repository: "hanzo/cloud", Tag: "v1.2.3"},
			"ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud", "v1.2.3"},
		// no tag: none is implied (name would say latest)
		{"ghcr.io/hanzo/cloud", kinds.ImageRef{Registry: "ghcr.io", Repository: "hanzo/cloud"},
			"ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud", ""},
		// a registry port is never a tag
		{"localhost:5000/x:1", kinds.ImageRef{Registry: "localhost:5000", Repository: "x", Tag: "1"},
			"localhost:5000/x", "localhost:5000/x", "1"},
		{"localhost:5000/hanzo/cloud", kinds.ImageRef{Registry: "localhost:5000", Repository: "hanzo/cloud"},
			"localhost:5000/hanzo/cloud", "localhost:5000/hanzo/cloud", ""},
		{"localhost/x", kinds.ImageRef{Registry: "localhost", Repository: "x"}, "localhost/x", "localhost/x", ""},
		{"registry.example.com:8443/a/b/c:v2", kinds.ImageRef{Registry: "registry.example.com:8443", Repository: "a/b/c", Tag: "v2"},
			"registry.example.com:8443/a/b/c", "registry.example.com:8443/a/b/c", "v2"},
		// digest only: it rides with the repository in an ImageSpec (no version to label)
		{"ghcr.io/hanzo/cloud@" + dg, kinds.ImageRef{Registry: "ghcr.io", Repository: "hanzo/cloud", Digest: dg},
			"ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud@" + dg, ""},
		{"localhost:5000/x@" + dg, kinds.ImageRef{Registry: "localhost:5000", Repository: "x", Digest: dg},
			"localhost:5000/x", "localhost:5000/x@" + dg, ""},
		// tag and digest: the digest rides with the tag
		{"ghcr.io/hanzo/cloud:v1@" + dg, kinds.ImageRef{Registry: "ghcr.io", Repository: "hanzo/cloud", Tag: "v1", Digest: dg},
			"ghcr.io/hanzo/cloud", "ghcr.io/hanzo/cloud", "v1@" + dg},
		// Docker Hub short names: kept as written, canonical with index.docker.io and library/
		{"nginx", kinds.ImageRef{Repository: "nginx"}, "index.docker.io/library/nginx", "nginx", ""},
		{"nginx:1.27", kinds.ImageRef{Repository: "nginx", Tag: "1.27"}, "index.docker.io/library/nginx", "nginx", "1.27"},
		{"coredns/coredns:1.11.1", kinds.ImageRef{Repository: "coredns/coredns", Tag: "1.11.1"},
			"index.docker.io/coredns/coredns", "coredns/coredns", "1.11.1"},
		{"docker.io/nginx@" + dg, kinds.ImageRef{Registry: "docker.io", Repository: "nginx", Digest: dg},
			"index.docker.io/library/nginx", "docker.io/nginx@" + dg, ""},
		// a host is case-insensitive (canonical lower case, spelling kept); a tag may hold capitals
		{"GHCR.io/hanzo/cloud:V1_rc.2", kinds.ImageRef{Registry: "GHCR.io", Repository: "hanzo/cloud", Tag: "V1_rc.2"},
			"ghcr.io/hanzo/cloud", "GHCR.io/hanzo/cloud", "V1_rc.2"},
		// a first element without '.' or ':' is a path, not a registry
		{"hanzo/cloud:v1", kinds.ImageRef{Repository: "hanzo/cloud", Tag: "v1"}, "index.docker.io/hanzo/cloud", "hanzo/cloud", "v1"},
	}
	for _, c := range cases {
		got, err := kinds.ParseImageRef(c.ref)
		if err != nil {
			t.Errorf("ParseImageRef(%q): %v", c.ref, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseImageRef(%q) = %+v, want %+v", c.ref, got, c.want)
		}
		if got.String() != c.ref {
			t.Errorf("ParseImageRef(%q).String() = %q: not the text parsed", c.ref, got.String())
		}
		if got.Canonical() != c.canonical {
			t.Errorf("ParseImageRef(%q).Canonical() = %q, want %q", c.ref, got.Canonical(), c.canonical)
		}
		repo, tag := got.SpecParts()
		if repo != c.repo || tag != c.specTag {
			t.Errorf("ParseImageRef(%q).SpecParts() = %q, %q; want %q, %q", c.ref, repo, tag, c.repo, c.specTag)
		}
		back := repo
		if tag != "" {
			back += ":" + tag
		}
		if back != c.ref {
			t.Errorf("SpecParts of %q join back to %q", c.ref, back)
		}
	}
}

// TestParseImageRefRefuses: what name rejects is an error naming the reference and the part
// at fault; nothing is guessed from a reference that does not parse.
func TestParseImageRefRefuses(t *testing.T) {
	for ref, part := range map[string]string{
		"":                                   "empty",
		"ghcr.io/Hanzo/cloud:v1":             "repository",
		"Nginx":                              "repository",
		"ghcr.io/hanzo/cloud:":               "tag",
		":v1":                                "repository",
		"ghcr.io/hanzo/cloud:v 1":            "tag",
		"ghcr.io/hanzo/cloud@sha256:abcd":    "sha256",
		"ghcr.io/hanzo/cloud@md5:abcd":       "algorithm",
		"ghcr.io/hanzo/cloud@" + dg + "@x":   "exactly one '@'",
		"ghcr.io/hanzo/cloud:v1:v2":          "repository",
		" ghcr.io/hanzo/cloud:v1":            "registries",
		"ghcr.io/hanzo/cloud:" + long(129):   "tag",
		"ghcr.io/hanzo/cloud:bad!@" + dg:     "repository",
		"https://ghcr.io/hanzo/cloud:v1.2.3": "empty path element",
		"ghcr.io/hanzo//cloud":               "empty path element",
		"ghcr.io/hanzo/cloud/":               "empty path element",
	} {
		_, err := kinds.ParseImageRef(ref)
		if err == nil {
			t.Errorf("ParseImageRef(%q) accepted", ref)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, part) || (ref != "" && !strings.Contains(msg, ref)) {
			t.Errorf("ParseImageRef(%q) = %q: want the reference and %q named", ref, msg, part)
		}
	}
}

// TestImageSpecParts: what does not parse is the repository whole, so an ImageSpec still
// joins back to the image as written; what parses is SpecParts.
func TestImageSpecParts(t *testing.T) {
	for image, want := range map[string][2]string{
		"ghcr.io/Hanzo/dns:v1":        {"ghcr.io/Hanzo/dns:v1", ""},
		"ghcr.io/x/app:v1@sha256:abc": {"ghcr.io/x/app:v1@sha256:abc", ""},
		"":                            {"", ""},
		"localhost:5000/x:1":          {"localhost:5000/x", "1"},
		"localhost:5000/x:1@" + dg:    {"localhost:5000/x", "1@" + dg},
		"localhost:5000/x@" + dg:      {"localhost:5000/x@" + dg, ""},
	} {
		if r, g := kinds.ImageSpecParts(image); r != want[0] || g != want[1] {
			t.Errorf("ImageSpecParts(%q) = %q, %q; want %q", image, r, g, want)
		}
	}
}

func long(n int) string { return strings.Repeat("t", n) }

// TestImageRefWithTag: a new tag keeps registry and repository as written and drops the
// digest (the digest pinned the old content).
func TestImageRefWithTag(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost:5000/x:1":            "localhost:5000/x:v2",
		"nginx":                         "nginx:v2",
		"ghcr.io/hanzo/cloud:v1@" + dg:  "ghcr.io/hanzo/cloud:v2",
		"docker.io/library/redis@" + dg: "docker.io/library/redis:v2",
	} {
		r, err := kinds.ParseImageRef(ref)
		if err != nil {
			t.Fatalf("ParseImageRef(%q): %v", ref, err)
		}
		if got := r.WithTag("v2").String(); got != want {
			t.Errorf("%q WithTag(v2) = %q, want %q", ref, got, want)
		}
	}
}
