package source

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Reasons a file or document is not turned into objects. Compare with
// errors.Is on FileError.
var (
	// ErrKustomization marks a Kustomization document in a file not named
	// kustomization.yaml (or .yml): it is never built.
	ErrKustomization = errors.New("a Kustomization document outside a kustomization.yaml is not built")
	// ErrTypeless marks a document without apiVersion or kind.
	ErrTypeless = errors.New("document has no apiVersion or kind")
	// ErrMalformed marks a file that is not valid YAML; none of its documents
	// are applied.
	ErrMalformed = errors.New("malformed yaml")
)

// Object is one decoded manifest together with where it came from.
type Object struct {
	// File is the repository path of the file that declared the object.
	File string
	// Doc is the 1-based index of the document within File.
	Doc int
	// Obj is the decoded object; it is the caller's to modify.
	Obj *unstructured.Unstructured
}

// FileError explains why a file, or one document in it, produced no object.
type FileError struct {
	File string
	// Doc is the 1-based document index, or 0 when the whole file is
	// concerned.
	Doc int
	Err error
}

func (e FileError) Error() string {
	if e.Doc == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s (document %d): %v", e.File, e.Doc, e.Err)
}

func (e FileError) Unwrap() error { return e.Err }

// Parse decodes the manifests of s. Only .yaml and .yml files are read; each
// may hold several documents. Empty documents are ignored. A directory
// holding a kustomization.yaml is built with kustomize instead (see
// findKustomizations and buildKustomization): its objects name the
// kustomization file, and Doc is their place in the build's output. Builds
// that fail or are refused, typeless documents and malformed files are
// reported as FileErrors,
// never dropped silently. A malformed file yields one FileError and no
// objects (a half-read file is never applied), and never affects other files.
// Objects are returned in file order, then document order.
//
// Parse reads under DefaultLimits; see ParseLimited.
func Parse(s *Snapshot) ([]Object, []FileError) { return ParseLimited(s, DefaultLimits()) }

// ParseLimited is Parse under the given limits (zero fields: the defaults).
// A file the Source refused (File.Refused), over FileBytes, past Files or
// TotalBytes, with more than Documents documents, not UTF-8, or with a
// duplicate mapping key is one FileError naming it; the other files are
// parsed as usual.
func ParseLimited(s *Snapshot, l Limits) ([]Object, []FileError) {
	return parseLimited(s, l, parsers{})
}

// ParseSecrets is ParseLimited decrypting SOPS documents, and treating
// plaintext Secrets, as sec says.
func ParseSecrets(s *Snapshot, l Limits, sec Secrets) ([]Object, []FileError) {
	return parseLimited(s, l, parsers{sec: sec})
}

// ParseCache keeps the parse of each file by path and blob id, so that a revision which
// changed one file of a thousand parses one file, and the build of each kustomization by
// the state of every path the build looked at, so that a revision which changed one file
// rebuilds only the kustomizations that read it. The zero value is ready; it holds the
// files and builds of the last snapshot parsed only. It is not safe for concurrent use.
type ParseCache struct {
	// Secrets is how SOPS documents are decrypted and plaintext Secrets
	// treated; changing it drops the cache.
	Secrets Secrets
	last    Secrets

	files  map[string]parsedFile
	builds map[string]*kbuild // by kustomization file
	// built counts the kustomize builds run, for tests.
	built int
}

type parsedFile struct {
	blob string
	docs int
	objs []Object
	errs []FileError
}

// Parse is ParseLimited reusing the objects of files whose blob id has not changed since
// the last call, and of kustomizations none of whose inputs did. The objects it returns
// are shared with later calls: never modify them (deep-copy first).
func (c *ParseCache) Parse(s *Snapshot, l Limits) ([]Object, []FileError) {
	if c.Secrets != c.last {
		c.files, c.builds, c.last = nil, nil, c.Secrets
	}
	next := map[string]parsedFile{}
	nextBuilds := map[string]*kbuild{}
	objs, errs := parseLimited(s, l, parsers{
		sec: c.Secrets,
		file: func(f File, docs int) ([]Object, []FileError) {
			if p, ok := c.files[f.Path]; ok && f.BlobSHA != "" && p.blob == f.BlobSHA && p.docs == docs {
				next[f.Path] = p
				return p.objs, p.errs
			}
			o, e := c.Secrets.parseFile(f, docs)
			if f.BlobSHA != "" {
				next[f.Path] = parsedFile{blob: f.BlobSHA, docs: docs, objs: o, errs: e}
			}
			return o, e
		},
		kustomization: func(x *snapIndex, kfile, dir string, docs int) ([]Object, []FileError) {
			if b, ok := c.builds[kfile]; ok && b.valid(x) {
				nextBuilds[kfile] = b
				return b.objs, b.errs
			}
			c.built++
			b := buildKustomization(x, kfile, dir, docs)
			nextBuilds[kfile] = b
			return b.objs, b.errs
		},
	})
	c.files, c.builds = next, nextBuilds
	return objs, errs
}

// parsers turn a plain file, and a kustomization entry point, into objects.
type parsers struct {
	sec           Secrets
	file          func(File, int) ([]Object, []FileError)
	kustomization func(x *snapIndex, kfile, dir string, docs int) ([]Object, []FileError)
}

// parseLimited applies the limits to every file, then parses each accepted
// file that lies below no kustomization directory and builds each
// kustomization entry point (see findKustomizations) where its
// kustomization file comes in path order. Files below a kustomization
// directory are read only by builds, never also as plain manifests.
func parseLimited(s *Snapshot, l Limits, p parsers) ([]Object, []FileError) {
	l = l.orDefault()
	if p.file == nil {
		p.file = p.sec.parseFile
	}
	if p.kustomization == nil {
		p.kustomization = func(x *snapIndex, kfile, dir string, docs int) ([]Object, []FileError) {
			b := buildKustomization(x, kfile, dir, docs)
			return b.objs, b.errs
		}
	}
	var errs []FileError
	var accepted []File
	files, total := 0, int64(0)
	for _, f := range s.Files {
		if !IsManifest(f.Path) {
			continue
		}
		if f.Refused != nil {
			errs = append(errs, FileError{File: f.Path, Err: f.Refused})
			continue
		}
		size := max(f.Size, int64(len(f.Data)))
		if size > l.FileBytes {
			errs = append(errs, FileError{File: f.Path, Err: TooLarge(size, l.FileBytes)})
			continue
		}
		if files++; files > l.Files {
			errs = append(errs, FileError{File: f.Path, Err: fmt.Errorf("%w: more than %d manifest files (--gitops-max-files)", ErrTooManyFiles, l.Files)})
			continue
		}
		if total += size; total > l.TotalBytes {
			errs = append(errs, FileError{File: f.Path, Err: fmt.Errorf("%w: the files before it already hold %d of the %d bytes a revision may (--gitops-max-snapshot-bytes)",
				ErrSnapshotTooLarge, total-size, l.TotalBytes)})
			continue
		}
		accepted = append(accepted, f)
	}
	kz := findKustomizations(accepted)
	var x *snapIndex
	var objs []Object
	for _, f := range accepted {
		if dir, ok := kz.roots[f.Path]; ok {
			if x == nil {
				x = newSnapIndex(accepted, p.sec)
			}
			o, e := p.kustomization(x, f.Path, dir, l.Documents)
			objs = append(objs, o...)
			errs = append(errs, e...)
			continue
		}
		if kz.owner(f.Path, "") != "" {
			continue // read by the build of its kustomization
		}
		o, e := p.file(f, l.Documents)
		objs = append(objs, o...)
		errs = append(errs, e...)
	}
	return objs, errs
}

// ErrNotUTF8 marks a file that is not UTF-8 text.
var ErrNotUTF8 = errors.New("not UTF-8")

// encoding refuses what is not UTF-8, naming UTF-16 and UTF-32 (by their
// byte order marks) so the fix is plain.
func encoding(data []byte) error {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xFE, 0xFF}):
		return fmt.Errorf("%w: the file is UTF-32; save it as UTF-8", ErrNotUTF8)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return fmt.Errorf("%w: the file is UTF-16; save it as UTF-8", ErrNotUTF8)
	case !utf8.Valid(data):
		return fmt.Errorf("%w: the file holds bytes that are not UTF-8 text; save it as UTF-8", ErrNotUTF8)
	}
	return nil
}

func parseFile(file string, data []byte, maxDocs int) ([]Object, []FileError) {
	if err := encoding(data); err != nil {
		return nil, []FileError{{File: file, Err: fmt.Errorf("%w: %w", ErrMalformed, err)}}
	}
	var objs []Object
	var errs []FileError
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, []FileError{{File: file, Err: fmt.Errorf("%w: %w", ErrMalformed, err)}}
		}
		if doc > maxDocs {
			return nil, []FileError{{File: file, Err: fmt.Errorf("%w: more than %d YAML documents (--gitops-max-documents); none of the file is applied", ErrTooManyDocuments, maxDocs)}}
		}
		obj, err := decode(raw)
		switch {
		case err != nil && errors.Is(err, ErrTypeless):
			errs = append(errs, FileError{File: file, Doc: doc, Err: err})
		case err != nil:
			return nil, []FileError{{File: file, Doc: doc, Err: fmt.Errorf("%w: %w", ErrMalformed, err)}}
		case obj == nil:
			// An empty document (a bare "---" or only comments).
		case isKustomizeKind(obj):
			errs = append(errs, FileError{File: file, Doc: doc, Err: ErrKustomization})
		case obj.IsList():
			items, ierrs := listItems(file, doc, obj)
			objs = append(objs, items...)
			errs = append(errs, ierrs...)
		default:
			objs = append(objs, Object{File: file, Doc: doc, Obj: obj})
		}
	}
	return objs, errs
}

// decode turns one YAML document into an object; nil, nil for an empty one.
func decode(raw []byte) (*unstructured.Unstructured, error) {
	// Strict: a duplicate mapping key is an error, not a silent last-wins.
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || string(js) == "null" {
		return nil, nil
	}
	if js[0] != '{' {
		return nil, fmt.Errorf("%w: not a mapping", ErrTypeless)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(js, &m); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: m}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil, ErrTypeless
	}
	return obj, nil
}

func isKustomizeKind(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "Kustomization" &&
		strings.HasPrefix(obj.GetAPIVersion(), "kustomize.config.k8s.io/")
}

// listItems expands a List document (kind: List, or any *List with items), as
// kubectl apply does; every item keeps the document's index.
func listItems(file string, doc int, obj *unstructured.Unstructured) ([]Object, []FileError) {
	var objs []Object
	var errs []FileError
	items, _ := obj.Object["items"].([]any)
	for i, it := range items {
		m, ok := it.(map[string]any)
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		if !ok || apiVersion == "" || kind == "" {
			errs = append(errs, FileError{File: file, Doc: doc, Err: fmt.Errorf("list item %d: %w", i+1, ErrTypeless)})
			continue
		}
		objs = append(objs, Object{File: file, Doc: doc, Obj: &unstructured.Unstructured{Object: m}})
	}
	return objs, errs
}
