package image

import (
	"errors"
	"strings"
	"testing"
)

var target = Target{Repository: "ghcr.io/hanzoai/cloud", Marker: "apps:cloud"}

func TestRewrite(t *testing.T) {
	cases := []struct {
		name     string
		in, want string
		tag      string
	}{
		{name: "double quotes and a trailing comment",
			in:   "spec:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: \"v1.0.0\" # was v0.9.0, see #12\n",
			want: "spec:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: \"v1.1.0\" # was v0.9.0, see #12\n"},
		{name: "single quotes", in: "image:\n  tag: 'v1.0.0'\n  repository: ghcr.io/hanzoai/cloud\n",
			want: "image:\n  tag: 'v1.1.0'\n  repository: ghcr.io/hanzoai/cloud\n"},
		{name: "unquoted suffixed tag", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.0.0-amd64   # arch\n", tag: "v1.1.0-amd64",
			want: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.1.0-amd64   # arch\n"},
		{name: "CRLF line endings kept", in: "image:\r\n  repository: ghcr.io/hanzoai/cloud\r\n  tag: v1.0.0\r\n# end\r\n",
			want: "image:\r\n  repository: ghcr.io/hanzoai/cloud\r\n  tag: v1.1.0\r\n# end\r\n"},
		{name: "flow mapping", in: "spec: {image: {repository: ghcr.io/hanzoai/cloud, tag: v1.0.0}, replicas: 2}\n",
			want: "spec: {image: {repository: ghcr.io/hanzoai/cloud, tag: v1.1.0}, replicas: 2}\n"},
		{name: "flow mapping without spaces", in: "image: {tag: \"v1.0.0\",repository: ghcr.io/hanzoai/cloud}\n",
			want: "image: {tag: \"v1.1.0\",repository: ghcr.io/hanzoai/cloud}\n"},
		{name: "the right block among many", in: "" +
			"a:\n  image:\n    repository: ghcr.io/hanzoai/iam\n    tag: v1.0.0\n" +
			"b:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.0.0\n" +
			"c:\n  image:\n    repository: ghcr.io/other/cloud-ui\n    tag: v1.0.0\n",
			want: "" +
				"a:\n  image:\n    repository: ghcr.io/hanzoai/iam\n    tag: v1.0.0\n" +
				"b:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.1.0\n" +
				"c:\n  image:\n    repository: ghcr.io/other/cloud-ui\n    tag: v1.0.0\n"},
		{name: "comments that look like image blocks are ignored", in: "" +
			"# image:\n#   repository: ghcr.io/hanzoai/cloud\n#   tag: v1.0.0\n" +
			"note: |\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.0.0\n" +
			"image:\n  repository: ghcr.io/hanzoai/cloud # tag: v1.0.0\n  tag: v1.0.0\n",
			want: "" +
				"# image:\n#   repository: ghcr.io/hanzoai/cloud\n#   tag: v1.0.0\n" +
				"note: |\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.0.0\n" +
				"image:\n  repository: ghcr.io/hanzoai/cloud # tag: v1.0.0\n  tag: v1.1.0\n"},
		{name: "anchored tag value", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: &t v1.0.0\nother: *t\n",
			want: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: &t v1.1.0\nother: *t\n"},
		{name: "a node runtime's nodeImage block", in: "kind: BitcoinRuntime\nspec:\n  network: mainnet\n  nodeImage: {repository: ghcr.io/hanzoai/cloud, tag: v1.0.0}\n",
			want: "kind: BitcoinRuntime\nspec:\n  network: mainnet\n  nodeImage: {repository: ghcr.io/hanzoai/cloud, tag: v1.1.0}\n"},
		{name: "second document", in: "kind: A\n---\n# a comment\nkind: B\nspec:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.0.0\n...\n",
			want: "kind: A\n---\n# a comment\nkind: B\nspec:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v1.1.0\n...\n"},
		{name: "setter marker on a tag line wins over blocks", in: "" +
			"image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.0.0\n" +
			"sidecar:\n  version: v1.0.0 # {\"$imageupdate\": \"apps:cloud\"}\n",
			want: "" +
				"image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.0.0\n" +
				"sidecar:\n  version: v1.1.0 # {\"$imageupdate\": \"apps:cloud\"}\n"},
		{name: "marker on a whole image reference", in: "containers:\n- name: x\n  image: \"GHCR.io/hanzoai/cloud:v1.0.0\" # {\"$imageupdate\":\"apps:cloud\"}\n",
			want: "containers:\n- name: x\n  image: \"GHCR.io/hanzoai/cloud:v1.1.0\" # {\"$imageupdate\":\"apps:cloud\"}\n"},
		{name: "scalar image reference by repository", in: "containers:\n  - image: ghcr.io/hanzoai/cloud:v1.0.0\n    name: c\n",
			want: "containers:\n  - image: ghcr.io/hanzoai/cloud:v1.1.0\n    name: c\n"},
		{name: "plain tag that would parse as a number gets quoted", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1\n", tag: "1.10",
			want: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: \"1.10\"\n"},
		{name: "unicode before the value", in: "ünïcødé: ✓\nimage: {repository: ghcr.io/hanzoai/cloud, tag: v1.0.0} # ✓\n",
			want: "ünïcødé: ✓\nimage: {repository: ghcr.io/hanzoai/cloud, tag: v1.1.0} # ✓\n"},
		{name: "tabs and trailing spaces after the value", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.0.0 \t\n",
			want: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.1.0 \t\n"},
		{name: "idempotent when equal", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.1.0\n",
			want: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: v1.1.0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tag := c.tag
			if tag == "" {
				tag = "v1.1.0"
			}
			got, err := Rewrite("crs/cloud.yaml", []byte(c.in), target, tag, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got\n%q\nwant\n%q", got, c.want)
			}
			again, err := Rewrite("crs/cloud.yaml", got, target, tag, nil)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %q %v", again, err)
			}
		})
	}
}

func TestRewriteErrors(t *testing.T) {
	cases := []struct {
		name, in string
		noMatch  bool
		says     string
	}{
		{name: "no block", in: "image:\n  repository: ghcr.io/hanzoai/iam\n  tag: v1\n", noMatch: true, says: "crs/cloud.yaml: no image block with repository ghcr.io/hanzoai/cloud"},
		{name: "only in a comment", in: "# image: {repository: ghcr.io/hanzoai/cloud, tag: v1}\nx: 1\n", noMatch: true, says: "no image block"},
		{name: "block without a tag", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n", noMatch: true, says: "has no tag"},
		{name: "two exact blocks", in: "a:\n  image: {repository: ghcr.io/hanzoai/cloud, tag: v1}\nb:\n  image: {repository: ghcr.io/hanzoai/cloud, tag: v2}\n", says: "2 image blocks"},
		{name: "digest pinned", in: "image: ghcr.io/hanzoai/cloud@sha256:" + strings.Repeat("ab", 32) + "\n", noMatch: true, says: "pinned by digest"},
		{name: "tag and digest pinned", in: "image: ghcr.io/hanzoai/cloud:v1@sha256:" + strings.Repeat("ab", 32) + "\n", noMatch: true, says: "pinned by digest"},
		{name: "marked tag and digest", in: "image: ghcr.io/hanzoai/cloud:v1@sha256:" + strings.Repeat("ab", 32) + " # {\"$imageupdate\": \"apps:cloud\"}\n", noMatch: true, says: "pinned by digest"},
		{name: "marked invalid reference", in: "image: ghcr.io/Hanzoai/cloud:v1 # {\"$imageupdate\": \"apps:cloud\"}\n", noMatch: true, says: "repository can only contain"},
		{name: "tag is an alias", in: "t: &t v1\nimage:\n  repository: ghcr.io/hanzoai/cloud\n  tag: *t\n", noMatch: true, says: "alias"},
		{name: "block scalar", in: "image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: |\n    v1\n", noMatch: true, says: "block scalar"},
		{name: "not yaml", in: "image: [unclosed\n", says: "crs/cloud.yaml: parse yaml"},
		{name: "same last segment on another registry", in: "image:\n  repository: registry.hanzo.ai/hanzo/cloud\n  tag: v1.0.0\n", noMatch: true, says: "no image block"},
		{name: "marked image of another repository", in: "image: evil.example/x/cloud:v1 # {\"$imageupdate\": \"apps:cloud\"}\n", noMatch: true, says: "is not repository"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rewrite("crs/cloud.yaml", []byte(c.in), target, "v9.9.9", nil)
			var nm *NoMatchError
			if err == nil || errors.As(err, &nm) != c.noMatch || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err %v; want noMatch=%v saying %q", err, c.noMatch, c.says)
			}
		})
	}
	if _, err := Rewrite("f.yaml", []byte("image: {repository: ghcr.io/hanzoai/cloud, tag: v1}\n"), target, "bad tag!", nil); err == nil {
		t.Fatal("an invalid tag was written")
	}
}

func TestRewriteForwardOnlyAndObject(t *testing.T) {
	in := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata:\n  name: cloud\n  namespace: apps\nspec:\n  image:\n    repository: ghcr.io/hanzoai/cloud\n    tag: v2.0.0\n"
	sites, err := Locate("f.yaml", []byte(in), target)
	if err != nil || len(sites) != 1 {
		t.Fatal(sites, err)
	}
	if s := sites[0]; s.Current != "v2.0.0" || s.Line != 9 || s.Object != (Object{APIVersion: "hanzo.ai/v1", Kind: "Service", Namespace: "apps", Name: "cloud"}) {
		t.Fatalf("site %+v", s)
	}
	p, _ := ParsePolicy("")
	out, err := Rewrite("f.yaml", []byte(in), target, "v1.5.0", func(cur string) bool { return Newer(p, "v1.5.0", cur) })
	if err != nil || string(out) != in {
		t.Fatalf("rewrote to an older tag: %q %v", out, err)
	}
}

// FuzzRewrite: on any input the rewriter either errors or changes only the located value
// bytes, and applying it again changes nothing.
func FuzzRewrite(f *testing.F) {
	f.Add("image:\n  repository: ghcr.io/hanzoai/cloud\n  tag: \"v1.0.0\" # c\n", "v1.2.3")
	f.Add("a: {image: {repository: ghcr.io/hanzoai/cloud, tag: v1}}\r\n", "v2")
	f.Add("x: y # {\"$imageupdate\": \"apps:cloud\"}\n", "1.0")
	f.Add("- image: ghcr.io/hanzoai/cloud:v1\n---\nimage: 'ghcr.io/hanzoai/cloud:v0'\n", "v3-amd64")
	f.Fuzz(func(t *testing.T, in, tag string) {
		out, err := Rewrite("f.yaml", []byte(in), target, tag, nil)
		if err != nil {
			return
		}
		again, err := Rewrite("f.yaml", out, target, tag, nil)
		if err != nil {
			t.Fatalf("second pass fails: %v on %q", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
		sites, err := Locate("f.yaml", out, target)
		if err != nil {
			t.Fatalf("rewritten file no longer locates: %v", err)
		}
		for _, s := range sites {
			if s.Current != tag {
				t.Fatalf("site at line %d holds %q, want %q", s.Line, s.Current, tag)
			}
		}
		// Only value bytes changed: the parts outside the new values equal the input's
		// parts outside the old values.
		before, _ := Locate("f.yaml", []byte(in), target)
		if len(before) != len(sites) {
			t.Fatalf("%d sites before, %d after", len(before), len(sites))
		}
		var a, b strings.Builder
		last := 0
		for _, s := range before {
			a.WriteString(in[last:s.start])
			last = s.end
		}
		a.WriteString(in[last:])
		last = 0
		for _, s := range sites {
			b.WriteString(string(out[last:s.start]))
			last = s.end
		}
		b.WriteString(string(out[last:]))
		if a.String() != b.String() {
			t.Fatalf("bytes outside the values changed:\n%q\n%q", a.String(), b.String())
		}
	})
}

// TestRewriteHostileTenant is issue 23's attack on the rewriter: an ImageUpdate in namespace
// org-a naming evil.example/x/cloud and org B's file moved org B's ghcr.io/orgb/cloud (the
// same last path segment) to a tag org A published. Now a file without a document of the
// ImageUpdate's namespace is a ForeignFileError, another registry's cloud is another image,
// and in a shared file only the tenant's own documents are sites.
func TestRewriteHostileTenant(t *testing.T) {
	orgB := "apiVersion: hanzo.ai/v1\nkind: Service\nmetadata: {name: cloud, namespace: org-b}\nspec:\n  image:\n    repository: ghcr.io/orgb/cloud\n    tag: v1.0.0\n"
	evil := Target{Repository: "evil.example/x/cloud", Marker: "org-a:x", Namespace: "org-a"}
	var ff *ForeignFileError
	if _, err := Rewrite("tenants/org-b/cloud.yaml", []byte(orgB), evil, "v6.6.6", nil); !errors.As(err, &ff) || ff.Namespace != "org-a" {
		t.Fatalf("org A rewrote org B's file: %v", err)
	}
	// Even from org B's own namespace, another registry's cloud is not ghcr.io/orgb/cloud.
	evil.Namespace = "org-b"
	var nm *NoMatchError
	if _, err := Rewrite("tenants/org-b/cloud.yaml", []byte(orgB), evil, "v6.6.6", nil); !errors.As(err, &nm) {
		t.Fatalf("evil.example/x/cloud matched ghcr.io/orgb/cloud: %v", err)
	}
	// A marker org A copied into org B's document is not org A's site either.
	marked := strings.Replace(orgB, "tag: v1.0.0", `tag: v1.0.0 # {"$imageupdate": "org-a:x"}`, 1)
	if _, err := Rewrite("shared.yaml", []byte(marked), Target{Repository: "ghcr.io/orgb/cloud", Marker: "org-a:x", Namespace: "org-a"}, "v6.6.6", nil); !errors.As(err, &ff) {
		t.Fatalf("a marker in org B's document moved it: %v", err)
	}
	// A shared file: only org A's document changes.
	orgA := strings.NewReplacer("org-b", "org-a").Replace(orgB)
	got, err := Rewrite("shared.yaml", []byte(orgB+"---\n"+orgA), Target{Repository: "ghcr.io/orgb/cloud", Namespace: "org-a"}, "v1.1.0", nil)
	if err != nil || string(got) != orgB+"---\n"+strings.Replace(orgA, "v1.0.0", "v1.1.0", 1) {
		t.Fatalf("shared file: %v\n%s", err, got)
	}
}

// TestNormalizeRepoFullName: repositories compare by registry host and path as
// go-containerregistry names them.
func TestNormalizeRepoFullName(t *testing.T) {
	same := [][2]string{
		{"nginx", "docker.io/library/nginx"}, {"nginx:1.2", "index.docker.io/library/nginx"}, {"hanzo/web", "docker.io/hanzo/web"},
		{"GHCR.IO/orgb/cloud", "ghcr.io/orgb/cloud:v1"}, {"https://ghcr.io/orgb/cloud", "ghcr.io/orgb/cloud@sha256:" + strings.Repeat("a", 64)},
		{"localhost:5000/a", "localhost:5000/a"},
	}
	for _, p := range same {
		if a, b := normalizeRepo(p[0]), normalizeRepo(p[1]); a == "" || a != b {
			t.Errorf("%s (%s) != %s (%s)", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"evil.example/x/cloud", "ghcr.io/orgb/cloud"}, {"ghcr.io/orga/cloud", "ghcr.io/orgb/cloud"}, {"ghcr.io/cloud", "docker.io/library/cloud"},
		{"localhost:5000/a", "localhost:5001/a"}, {"ghcr.io/orgb/cloud", "ghcr.io/orgb/cloud/sub"},
	}
	for _, p := range differ {
		if normalizeRepo(p[0]) == normalizeRepo(p[1]) {
			t.Errorf("%s == %s", p[0], p[1])
		}
	}
	if normalizeRepo("not a repo!") != "" || compareRepo("", "") != matchNone {
		t.Error("an invalid name matches")
	}
}
