package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/source"
)

// The CR write path: commit a change of one CR's spec.image (a source.CRImage) to the file of
// the universe repository that declares it. The file is found at the head being written on
// (source.Parse of the tree the git sweep reads), the edit is byte-exact (only the image's
// tokens change: the rewriter's splice), and the commit goes through a source.Writer, never
// forced. The operator's source.CRCommitter (cmd/operator) commits through it.

// Errors of the CR write path; the messages name the CR and the file.
var (
	// ErrCRNotFound: no file of the repository declares the CR.
	ErrCRNotFound = errors.New("not declared in the universe repository")
	// ErrCRAmbiguous: more than one document declares the CR.
	ErrCRAmbiguous = errors.New("declared more than once in the universe repository")
	// ErrRepositoryChange: the change names another image repository than the file's.
	ErrRepositoryChange = errors.New("the change names another image repository than the file declares; a tag is never moved to another image")
)

// Committed is what a CR write did.
type Committed struct {
	// Path is the file changed (or found already at the image).
	Path string
	source.Result
}

// CRWriter is the engine under the operator's source.CRCommitter: it finds the file
// declaring a CR and commits the change of its spec.image. Waking the sweep after a commit
// is the committer's (cmd/operator), not the engine's.
type CRWriter struct {
	// Source reads the tree the CR is looked for in: the git sweep's source (its snapshot
	// cache makes a lookup at an unchanged head free). Nil: CRImage.File must be set.
	Source source.Source
	// Writer commits and pushes (source/gitclone or source/github); never forced.
	Writer source.Writer
	// Branch is the branch written, the one the sweep follows; "main" when empty.
	Branch string
	// Author of the commits; source.DefaultAuthor when zero.
	Author source.Signature
	// Limits bound the parse of the tree (the sweep's); zero values are the defaults.
	Limits source.Limits
}

// Commit commits c: the document declaring the CR gets c.Image's tag (and, with
// MoveRepository, its repository), every other byte of the file kept. A file already at the
// image is no commit (Committed.Commit empty, Parent the head naming it). The errors name the
// CR and the file: an image that is not repository:tag, ErrCRNotFound, ErrCRAmbiguous, a file
// that does not parse, ErrRepositoryChange, and the writer's (source.ErrConflict once the
// retries ran out).
func (w *CRWriter) Commit(ctx context.Context, c source.CRImage) (Committed, error) {
	cr := Object{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
	if w.Writer == nil {
		return Committed{}, errors.New("no git writer configured")
	}
	if c.Message == "" {
		return Committed{}, errors.New("set image: the commit message is empty")
	}
	ref, err := kinds.ParseImageRef(c.Image)
	if err != nil || ref.Digest != "" || ref.Tag == "" {
		return Committed{}, fmt.Errorf("set image of %s: %q is not a repository:tag image reference", cr, c.Image)
	}
	repo, tag := ref.Name(), ref.Tag
	if !ValidTag(tag) {
		return Committed{}, fmt.Errorf("set image of %s: %q is not a valid image tag", cr, tag)
	}
	path := source.CleanPath(c.File)
	if w.Source != nil {
		var err error
		if path, err = w.find(ctx, cr); err != nil {
			return Committed{}, err
		}
	}
	if path == "" {
		return Committed{}, fmt.Errorf("set image of %s: no file to write: the committer has no source and the change names no file", cr)
	}
	branch := w.Branch
	if branch == "" {
		branch = "main"
	}
	res, err := w.Writer.Write(ctx, source.Change{Branch: branch, Paths: []string{path}, Message: c.Message, Author: w.Author,
		Edit: func(p string, data []byte) ([]byte, error) {
			return setCRImage(p, data, cr, repo, tag, c.MoveRepository)
		}})
	if err != nil {
		return Committed{Path: path, Result: res}, hostError(fmt.Sprintf("commit %s to %s", cr, path), err)
	}
	return Committed{Path: path, Result: res}, nil
}

// find returns the one file declaring cr at the source's head.
func (w *CRWriter) find(ctx context.Context, cr Object) (string, error) {
	rev, err := w.Source.Head(ctx)
	if err != nil {
		return "", hostError(fmt.Sprintf("find the file of %s", cr), err)
	}
	snap, err := w.Source.Snapshot(ctx, rev)
	if err != nil {
		return "", hostError(fmt.Sprintf("find the file of %s at %s", cr, short(rev)), err)
	}
	return FindCR(snap, cr, w.Limits)
}

// String spells the object as Kind group namespace/name.
func (o Object) String() string {
	g := o.APIVersion
	if i := strings.IndexByte(g, '/'); i >= 0 {
		g = g[:i]
	} else {
		g = "" // the core group
	}
	kind := o.Kind
	if g != "" {
		kind += "." + g
	}
	if o.Namespace == "" {
		return kind + " " + o.Name
	}
	return kind + " " + o.Namespace + "/" + o.Name
}

// group is the API group of an apiVersion ("" for the core group).
func group(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// sameObject: a and b are the same object (the version of their apiVersion aside).
func sameObject(a, b Object) bool {
	return group(a.APIVersion) == group(b.APIVersion) && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// FindCR returns the path of the one file of snap declaring cr, parsed as the sweep parses
// it. No match is ErrCRNotFound (naming the files that did not parse: the CR may be in one of
// them); two are ErrCRAmbiguous naming both.
func FindCR(snap *source.Snapshot, cr Object, l source.Limits) (string, error) {
	objs, ferrs := source.ParseLimited(snap, l)
	var files, where []string
	for _, o := range objs {
		u := o.Obj
		if sameObject(Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}, cr) {
			files = append(files, o.File)
			where = append(where, fmt.Sprintf("%s (document %d)", o.File, o.Doc))
		}
	}
	switch len(files) {
	case 1:
		return files[0], nil
	case 0:
		msg := " at " + short(snap.Revision)
		if len(ferrs) > 0 {
			var bad []string
			for _, e := range ferrs {
				bad = append(bad, e.Error())
			}
			sort.Strings(bad)
			msg += fmt.Sprintf("; %d file(s) could not be read, the CR may be in one of them: %s", len(bad), strings.Join(bad, "; "))
		}
		return "", fmt.Errorf("%s: %w%s", cr, ErrCRNotFound, msg)
	}
	return "", fmt.Errorf("%s: %w: at %s in %s", cr, ErrCRAmbiguous, short(snap.Revision), strings.Join(where, " and "))
}

// SetCRImage returns data with spec.image.tag of the document declaring cr set to tag,
// every other byte kept (quotes, comments, flow style, line endings, other documents). The
// document's spec.image is a mapping with repository and tag, or a scalar repository:tag;
// its repository must be repository (normalized: docker.io/library/x is x). A file already at
// tag comes back unchanged. The document must declare cr in cr's own namespace (the finder's
// rule: another namespace's document is another CR) and name repository in full (registry
// host and path; the same path on another registry is another image). Errors name the file
// and the object.
func SetCRImage(path string, data []byte, cr Object, repository, tag string) ([]byte, error) {
	return setCRImage(path, data, cr, repository, tag, false)
}

// MoveCRImage is SetCRImage that also sets spec.image.repository when the file names another
// one (a rollback or revert to an image recorded under another repository).
func MoveCRImage(path string, data []byte, cr Object, repository, tag string) ([]byte, error) {
	return setCRImage(path, data, cr, repository, tag, true)
}

//nolint:funlen,gocyclo // one check per YAML shape a CR's image may take
func setCRImage(path string, data []byte, cr Object, repository, tag string, move bool) ([]byte, error) {
	if move && strings.TrimSpace(repository) == "" {
		return nil, fmt.Errorf("%s: %s: no repository to set", path, cr)
	}
	if !ValidTag(tag) {
		return nil, fmt.Errorf("%s: %q is not a valid image tag", path, tag)
	}
	lines := lineStarts(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var image *yaml.Node
	flow := false
	docs := 0
	for n := 1; ; n++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: parse yaml (document %d): %w", path, n, err)
		}
		if !sameObject(objectOf(&doc), cr) {
			continue
		}
		if docs++; docs > 1 {
			return nil, fmt.Errorf("%s: %s is declared twice in the file: %w", path, cr, ErrCRAmbiguous)
		}
		root := doc.Content[0]
		spec := mapValue(root, "spec")
		if spec == nil || spec.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: %s (document %d) has no spec mapping", path, cr, n)
		}
		if image = mapValue(spec, "image"); image == nil {
			return nil, fmt.Errorf("%s: %s (document %d) has no spec.image", path, cr, n)
		}
		flow = root.Style&yaml.FlowStyle != 0 || spec.Style&yaml.FlowStyle != 0
	}
	if docs == 0 {
		return nil, fmt.Errorf("%s: %s is not in the file (%w at this head)", path, cr, ErrCRNotFound)
	}
	want := normalizeRepo(repository)
	if want == "" {
		return nil, fmt.Errorf("%s: %s: the change names no valid image repository (%q): a tag is written only to the image of the change's full repository", path, cr, repository)
	}
	var s Site
	var repoSite *Site
	var err error
	switch image.Kind {
	case yaml.MappingNode:
		repo, tagNode := mapValue(image, "repository"), mapValue(image, "tag")
		if repo == nil || repo.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: %s: spec.image has no repository", path, cr)
		}
		if move && normalizeRepo(repo.Value) != want {
			rs, err := site(data, lines, repo, flow || image.Style&yaml.FlowStyle != 0, false, Object{})
			if err != nil {
				return nil, fmt.Errorf("%s: %s: spec.image.repository: %w", path, cr, err)
			}
			repoSite = &rs
		} else if normalizeRepo(repo.Value) != want {
			return nil, fmt.Errorf("%s: %s declares spec.image.repository %s, the change %s: %w", path, cr, repo.Value, repository, ErrRepositoryChange)
		}
		if tagNode == nil {
			return nil, fmt.Errorf("%s: line %d: %s: spec.image has no tag to change; add `tag:` under spec.image", path, repo.Line, cr)
		}
		if tagNode.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("%s: line %d: %s: spec.image.tag is an alias (*%s)", path, tagNode.Line, cr, tagNode.Value)
		}
		s, err = site(data, lines, tagNode, flow || image.Style&yaml.FlowStyle != 0, false, Object{})
	case yaml.ScalarNode:
		if move && normalizeRepo(image.Value) != want {
			s, err = site(data, lines, image, flow, true, Object{})
			if err == nil {
				s.refPrefix, s.Current = repository+":", "" // the whole reference changes
			}
			break
		}
		if normalizeRepo(image.Value) != want {
			return nil, fmt.Errorf("%s: %s declares spec.image %s, the change %s: %w", path, cr, image.Value, repository, ErrRepositoryChange)
		}
		s, err = site(data, lines, image, flow, true, Object{})
	default:
		return nil, fmt.Errorf("%s: line %d: %s: spec.image is neither a mapping nor an image reference", path, image.Line, cr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, cr, err)
	}
	if s.Current == tag && repoSite == nil {
		return data, nil
	}
	var out bytes.Buffer
	out.Grow(len(data) + len(tag) + len(repository))
	last := 0
	splice := func(at Site, value string) {
		out.Write(data[last:at.start])
		out.WriteString(render(at, value))
		last = at.end
	}
	switch {
	case repoSite == nil:
		splice(s, tag)
	case repoSite.start < s.start:
		splice(*repoSite, repository)
		splice(s, tag)
	default:
		splice(s, tag)
		splice(*repoSite, repository)
	}
	out.Write(data[last:])
	return out.Bytes(), nil
}

// mapValue returns the value of key in mapping m, nil when absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Universe is the universe repository as the CR write path finds CRs in it: the git sweep's
// source and limits. An ImageUpdate writing to it may rewrite only a file the finder sees
// declaring an object of the ImageUpdate's namespace (DeclaresIn).
type Universe struct {
	// Repo is the writebackRepo spelling of the repository (--git-url or
	// --github-repository).
	Repo   string
	Source source.Source
	Limits source.Limits
}

// ownFile refuses path unless the finder sees it declaring an object in namespace at the
// source's head.
func (u *Universe) ownFile(ctx context.Context, path, namespace string) error {
	rev, err := u.Source.Head(ctx)
	if err != nil {
		return hostError("find "+path, err)
	}
	snap, err := u.Source.Snapshot(ctx, rev)
	if err != nil {
		return hostError("find "+path+" at "+short(rev), err)
	}
	if !DeclaresIn(snap, path, namespace, u.Limits) {
		return &ForeignFileError{Path: path, Namespace: namespace}
	}
	return nil
}

// DeclaresIn reports whether the file path of snap declares an object in namespace, parsed as
// the sweep and FindCR parse it.
func DeclaresIn(snap *source.Snapshot, path, namespace string, l source.Limits) bool {
	for _, f := range snap.Files {
		if f.Path != path {
			continue
		}
		objs, _ := source.ParseLimited(&source.Snapshot{Revision: snap.Revision, Files: []source.File{f}}, l)
		for _, o := range objs {
			if o.Obj.GetNamespace() == namespace {
				return true
			}
		}
	}
	return false
}
