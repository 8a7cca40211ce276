package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/openuniverse/operator/kinds"
)

// The rewriter changes the tag value of one image in a YAML file and keeps every other byte:
// quotes, comments, indentation, line endings, flow style, other documents. It locates the
// value through the YAML parser (so comments, anchors, block scalars and flow mappings cannot
// fool it) and splices only that token's bytes.

// Target says which values of a file belong to an ImageUpdate.
type Target struct {
	// Repository is the ImageUpdate's imageRepository. An `image:` block whose `repository`
	// names it (or a scalar `image: <repository>:<tag>`) is a site.
	Repository string
	// Marker is "<namespace>:<name>" of the ImageUpdate: a value whose line carries the
	// comment `# {"$imageupdate": "<namespace>:<name>"}` is a site. When any line carries the
	// marker, only marked values are sites. A marked value that is an image reference must
	// name Repository too.
	Marker string
	// Namespace, when set, is the ImageUpdate's namespace: only documents declaring an object
	// in it hold sites, and a file declaring none is a *ForeignFileError (a tenant rewrites
	// only its own files, never another namespace's image blocks in a shared one).
	Namespace string
}

// ForeignFileError: the file declares no object in the ImageUpdate's namespace.
type ForeignFileError struct {
	Path, Namespace string
}

func (e *ForeignFileError) Error() string {
	return fmt.Sprintf("%s declares no object in namespace %s: an ImageUpdate rewrites only files declaring objects of its own namespace", e.Path, e.Namespace)
}

// Object names the document a site is in.
type Object struct {
	APIVersion, Kind, Namespace, Name string
}

// Site is one tag value in the file.
type Site struct {
	// Line is the 1-based line of the value.
	Line int
	// Current is the tag the value holds now.
	Current string
	// Object is the document's object (empty fields when the document has none).
	Object Object

	start, end int    // byte span of the value token
	quote      byte   // 0, '"' or '\''
	refPrefix  string // for a whole image reference: everything before the tag
}

// NoMatchError: the file has no site for the target.
type NoMatchError struct {
	Path   string
	Target Target
	Detail string
}

func (e *NoMatchError) Error() string {
	msg := fmt.Sprintf("%s: no image block with repository %s and no line marked %s", e.Path, e.Target.Repository, markerComment(e.Target.Marker))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func markerComment(m string) string { return `# {"$imageupdate": "` + m + `"}` }

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// ValidTag reports whether s is a valid OCI tag.
func ValidTag(s string) bool { return tagRE.MatchString(s) }

// Locate returns the sites of t in the YAML file data (path names it in errors).
func Locate(path string, data []byte, t Target) ([]Site, error) {
	if t.Repository == "" && t.Marker == "" {
		return nil, fmt.Errorf("%s: no repository or marker to look for", path)
	}
	lines := lineStarts(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var marked, exact []Site
	var problems []string
	own := false
	want := normalizeRepo(t.Repository)
	markerRE := markerPattern(t.Marker)
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: parse yaml: %w", path, err)
		}
		obj := objectOf(&doc)
		if t.Namespace != "" && obj.Namespace != t.Namespace {
			continue // another namespace's document, or one without a namespace
		}
		own = true
		var walk func(n *yaml.Node, flow bool)
		walk = func(n *yaml.Node, flow bool) {
			flow = flow || n.Style&yaml.FlowStyle != 0
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					k, v := n.Content[i], n.Content[i+1]
					if markerRE != nil && v.Kind == yaml.ScalarNode && (markerRE.MatchString(k.LineComment) || markerRE.MatchString(v.LineComment)) {
						ref := strings.ContainsAny(v.Value, "/:")
						if s, err := site(data, lines, v, flow, ref, obj); err != nil {
							problems = append(problems, err.Error())
						} else if ref && compareRepo(normalizeRepo(v.Value), want) != matchExact {
							problems = append(problems, fmt.Sprintf("line %d: the marked image %s is not repository %s", v.Line, strings.TrimSuffix(s.refPrefix, ":"), t.Repository))
						} else {
							marked = append(marked, s)
						}
					}
					if (k.Value == "image" || k.Value == "nodeImage") && t.Repository != "" {
						s, how, err := imageSite(data, lines, v, flow, want, obj)
						switch {
						case err != nil:
							problems = append(problems, err.Error())
						case how == matchExact:
							exact = append(exact, s)
						}
					}
				}
			}
			for _, c := range n.Content {
				walk(c, flow)
			}
		}
		walk(&doc, false)
	}
	switch {
	case t.Namespace != "" && !own:
		return nil, &ForeignFileError{Path: path, Namespace: t.Namespace}
	case len(marked) > 0:
		return marked, nil
	case len(exact) == 1:
		return exact, nil
	case len(exact) > 1:
		return nil, fmt.Errorf("%s: %d image blocks name repository %s: mark the one to update with %s", path, len(exact), t.Repository, markerComment(t.Marker))
	}
	return nil, &NoMatchError{Path: path, Target: t, Detail: strings.Join(problems, "; ")}
}

// Rewrite sets newTag at every site of t in data for which newer(current) holds (nil: every
// site whose tag differs) and returns the new bytes; every other byte is kept. It is
// idempotent: sites already at newTag are left alone, and when no site changes data comes
// back unchanged.
func Rewrite(path string, data []byte, t Target, newTag string, newer func(current string) bool) ([]byte, error) {
	if !ValidTag(newTag) {
		return nil, fmt.Errorf("%s: %q is not a valid image tag", path, newTag)
	}
	sites, err := Locate(path, data, t)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	last := 0
	for _, s := range sites {
		if s.Current == newTag || (newer != nil && !newer(s.Current)) {
			continue
		}
		out.Write(data[last:s.start])
		out.WriteString(render(s, newTag))
		last = s.end
	}
	if last == 0 {
		return data, nil
	}
	out.Write(data[last:])
	return out.Bytes(), nil
}

// render spells the new value token in the site's quoting.
func render(s Site, tag string) string {
	v := s.refPrefix + tag
	switch s.quote {
	case '"':
		return `"` + v + `"`
	case '\'':
		return "'" + v + "'"
	}
	if !plainIsString(v) {
		return `"` + v + `"` // 1.10 or 1e3 unquoted would stop being a string
	}
	return v
}

func plainIsString(v string) bool {
	var x any
	if err := yaml.Unmarshal([]byte("v: "+v), &x); err != nil {
		return false
	}
	m, ok := x.(map[string]any)
	if !ok {
		return false
	}
	s, ok := m["v"].(string)
	return ok && s == v
}

type match int

const (
	matchNone match = iota
	matchExact
)

// imageSite reads the value of an `image:` key (or `nodeImage:`, the BitcoinRuntime and
// SolanaRuntime node image): a mapping with repository and tag, or a scalar image reference.
func imageSite(data []byte, lines []int, v *yaml.Node, flow bool, want string, obj Object) (Site, match, error) {
	flow = flow || v.Style&yaml.FlowStyle != 0
	switch v.Kind {
	case yaml.MappingNode:
		var repo, tag *yaml.Node
		for i := 0; i+1 < len(v.Content); i += 2 {
			switch v.Content[i].Value {
			case "repository":
				repo = v.Content[i+1]
			case "tag":
				tag = v.Content[i+1]
			}
		}
		if repo == nil || repo.Kind != yaml.ScalarNode {
			return Site{}, matchNone, nil
		}
		how := compareRepo(normalizeRepo(repo.Value), want)
		if how == matchNone {
			return Site{}, matchNone, nil
		}
		if tag == nil {
			return Site{}, matchNone, fmt.Errorf("line %d: the image block of %s has no tag", repo.Line, repo.Value)
		}
		if tag.Kind == yaml.AliasNode {
			return Site{}, matchNone, fmt.Errorf("line %d: the tag of %s is an alias (*%s); point the marker at the anchored value", tag.Line, repo.Value, tag.Value)
		}
		s, err := site(data, lines, tag, flow, false, obj)
		return s, how, err
	case yaml.ScalarNode:
		how := compareRepo(normalizeRepo(v.Value), want)
		if how == matchNone {
			return Site{}, matchNone, nil
		}
		s, err := site(data, lines, v, flow, true, obj)
		return s, how, err
	}
	return Site{}, matchNone, nil
}

// site computes the byte span of scalar n's token and its current tag.
//
//nolint:gocyclo // one case per YAML node shape an image may take
func site(data []byte, lines []int, n *yaml.Node, flow, ref bool, obj Object) (Site, error) {
	s := Site{Line: n.Line, Object: obj}
	if n.Kind != yaml.ScalarNode {
		return s, fmt.Errorf("line %d: the tag value is not a scalar", n.Line)
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return s, fmt.Errorf("line %d: the tag value is a block scalar", n.Line)
	}
	if n.Line < 1 || n.Line > len(lines) {
		return s, fmt.Errorf("line %d: out of range", n.Line)
	}
	i := lines[n.Line-1]
	for c := 1; c < n.Column && i < len(data); c++ { // columns count characters
		_, w := utf8.DecodeRune(data[i:])
		i += w
	}
	// An anchor (&a) or a tag (!!str) may precede the value.
	for i < len(data) && (data[i] == '&' || data[i] == '!') {
		for i < len(data) && !isSpace(data[i]) && !isBreak(data[i]) {
			i++
		}
		for i < len(data) && isSpace(data[i]) {
			i++
		}
	}
	s.start = i
	var raw string
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		j := i + 1
		for j < len(data) && data[j] != '"' && !isBreak(data[j]) {
			if data[j] == '\\' {
				return s, fmt.Errorf("line %d: the tag value has escapes", n.Line)
			}
			j++
		}
		if j >= len(data) || data[j] != '"' {
			return s, fmt.Errorf("line %d: the quoted tag value spans lines", n.Line)
		}
		s.quote, s.end, raw = '"', j+1, string(data[i+1:j])
	case n.Style&yaml.SingleQuotedStyle != 0:
		j := i + 1
		for j < len(data) && data[j] != '\'' && !isBreak(data[j]) {
			j++
		}
		if j >= len(data) || data[j] != '\'' || (j+1 < len(data) && data[j+1] == '\'') {
			return s, fmt.Errorf("line %d: the quoted tag value has escapes or spans lines", n.Line)
		}
		s.quote, s.end, raw = '\'', j+1, string(data[i+1:j])
	default:
		j := i
		for j < len(data) && !isBreak(data[j]) {
			if isSpace(data[j]) && j+1 < len(data) && data[j+1] == '#' {
				break
			}
			if flow && (data[j] == ',' || data[j] == '}' || data[j] == ']') {
				break
			}
			j++
		}
		for j > i && isSpace(data[j-1]) {
			j--
		}
		s.end, raw = j, string(data[i:j])
	}
	if raw != n.Value {
		return s, fmt.Errorf("line %d: the tag value spans lines or is not plain text", n.Line)
	}
	if !ref {
		s.Current = raw
		return s, nil
	}
	r, err := kinds.ParseImageRef(raw)
	switch {
	case err != nil:
		return s, fmt.Errorf("line %d: %w", n.Line, err)
	case r.Digest != "":
		return s, fmt.Errorf("line %d: %s is pinned by digest", n.Line, raw)
	case r.Tag == "":
		return s, fmt.Errorf("line %d: %s has no tag", n.Line, raw)
	}
	s.refPrefix, s.Current = r.Name()+":", r.Tag
	return s, nil
}

// normalizeRepo is the full name (kinds.ImageRef.Canonical) of r, an image repository or a
// whole reference: registry host and path, Docker Hub's implicit parts made explicit (x is
// index.docker.io/library/x), an https:// or http:// prefix and a tag or digest dropped. Two
// spellings of one repository compare equal; the same path on two registries never does. A
// name that does not parse is "" (it matches nothing).
func normalizeRepo(r string) string {
	r = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(r), "https://"), "http://")
	if host, rest, ok := strings.Cut(r, "/"); ok {
		r = strings.ToLower(host) + "/" + rest // a host is case-insensitive; a path is not
	}
	ref, err := kinds.ParseImageRef(r)
	if err != nil {
		return ""
	}
	return ref.Canonical()
}

// compareRepo: have and want (normalized) are the same repository. Only the full name
// counts: a repository of the same last path segment on another registry or under another
// owner is another image.
func compareRepo(have, want string) match {
	if have == "" || want == "" || have != want {
		return matchNone
	}
	return matchExact
}

func markerPattern(m string) *regexp.Regexp {
	if m == "" {
		return nil
	}
	return regexp.MustCompile(`\{\s*"\$imageupdate"\s*:\s*"` + regexp.QuoteMeta(m) + `"\s*\}`)
}

// objectOf reads apiVersion, kind and metadata of a document whose root is a mapping.
func objectOf(doc *yaml.Node) Object {
	var o Object
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return o
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i].Value, root.Content[i+1]
		switch k {
		case "apiVersion":
			o.APIVersion = v.Value
		case "kind":
			o.Kind = v.Value
		case "metadata":
			for j := 0; j+1 < len(v.Content); j += 2 {
				switch v.Content[j].Value {
				case "name":
					o.Name = v.Content[j+1].Value
				case "namespace":
					o.Namespace = v.Content[j+1].Value
				}
			}
		}
	}
	return o
}

// lineStarts returns the byte offset of each line start, breaking lines as YAML does (\r\n,
// \r, \n, NEL, LS, PS), so the parser's line numbers index it. A leading BOM is skipped.
func lineStarts(data []byte) []int {
	start := 0
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		start = 3
	}
	out := []int{start}
	for i := start; i < len(data); {
		switch {
		case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
			i += 2
		case data[i] == '\r' || data[i] == '\n':
			i++
		case bytes.HasPrefix(data[i:], []byte("\u0085")) || bytes.HasPrefix(data[i:], []byte("\u2028")) || bytes.HasPrefix(data[i:], []byte("\u2029")):
			_, w := utf8.DecodeRune(data[i:])
			i += w
		default:
			i++
			continue
		}
		out = append(out, i)
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' }
func isBreak(b byte) bool { return b == '\n' || b == '\r' }
