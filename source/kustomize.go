package source

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Reasons a kustomization is not built. Compare with errors.Is on FileError;
// the FileError names the entry point's kustomization file, the message the
// kustomization file (a base's, maybe) that holds the refused entry.
var (
	// ErrKustomizeRefused marks a kustomization that asks for what an
	// in-memory build of the repository never does: a remote base or file,
	// an exec, container or Go plugin, a Helm chart, or a file outside the
	// repository.
	ErrKustomizeRefused = errors.New("kustomization refused")
	// ErrKustomizeBuild marks a kustomization whose build failed.
	ErrKustomizeBuild = errors.New("kustomize build failed")
)

// repoRoot is where the snapshot is laid in the in-memory filesystem a build
// reads; a path that cleans to outside it is outside the repository.
const repoRoot = "/repo"

// kustomizations are the kustomization directories of one snapshot.
type kustomizations struct {
	// dirs holds every directory with a kustomization file, sorted.
	dirs []string
	// roots maps the kustomization file of each entry point (a directory
	// neither below another kustomization directory nor referenced by
	// another kustomization as a resource, base or component) to its
	// directory. Only entry points are built; the others are built as
	// part of them.
	roots map[string]string
}

// findKustomizations finds the kustomization directories of files.
func findKustomizations(files []File) kustomizations {
	k := kustomizations{roots: map[string]string{}}
	kfiles := map[string]File{}
	for _, f := range files {
		if isKustomization(f.Path) {
			d := path.Dir(f.Path)
			if _, dup := kfiles[d]; !dup {
				k.dirs = append(k.dirs, d)
				kfiles[d] = f
			}
		}
	}
	sort.Strings(k.dirs)
	isDir := func(d string) bool { _, ok := kfiles[d]; return ok }
	referenced := map[string]bool{}
	for d, f := range kfiles {
		var kz types.Kustomization
		if f.Data == nil || yaml.Unmarshal(f.Data, &kz) != nil {
			continue // the build reports it
		}
		for _, r := range slices.Concat(kz.Resources, kz.Bases, kz.Components) { //nolint:staticcheck // kustomize still reads the deprecated fields; so must the check
			if t := path.Join(d, r); isDir(t) && t != d {
				referenced[t] = true
			}
		}
	}
	for d, f := range kfiles {
		if !referenced[d] && k.owner(path.Join(d, "x"), d) == "" {
			k.roots[f.Path] = d
		}
	}
	return k
}

// owner returns the outermost kustomization directory p lies below, other
// than except; "" when none.
func (k kustomizations) owner(p, except string) string {
	for _, d := range k.dirs {
		if d != except && (d == "." || Under(p, d)) {
			return d
		}
	}
	return ""
}

// snapIndex is the accepted files of a snapshot by path, for a build to read.
type snapIndex struct {
	files map[string]File
	paths []string // sorted
	sec   Secrets
	fs    filesys.FileSystem
	// Of the files SOPS encrypted, which were, and why each that did not
	// decrypt did not; their plaintext is only in fs.
	encrypted map[string]bool
	bad       map[string]error
}

func newSnapIndex(files []File, sec Secrets) *snapIndex {
	x := &snapIndex{files: make(map[string]File, len(files)), sec: sec, encrypted: map[string]bool{}, bad: map[string]error{}}
	for _, f := range files {
		x.files[f.Path] = f
		x.paths = append(x.paths, f.Path)
	}
	sort.Strings(x.paths)
	return x
}

// memfs lays the files in an in-memory filesystem below repoRoot, once.
func (x *snapIndex) memfs() (filesys.FileSystem, error) {
	if x.fs != nil {
		return x.fs, nil
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.MkdirAll(repoRoot); err != nil {
		return nil, err
	}
	for _, p := range x.paths {
		data, enc, err := x.sec.open(x.files[p].Data)
		x.encrypted[p] = enc
		if err != nil {
			x.bad[p] = err
			data = nil
		}
		if err := fs.WriteFile(repoRoot+"/"+p, data); err != nil {
			return nil, err
		}
	}
	x.fs = fs
	return fs, nil
}

func (x *snapIndex) isDir(p string) bool {
	if p == "" || p == "." {
		return true
	}
	i := sort.SearchStrings(x.paths, p+"/")
	return i < len(x.paths) && strings.HasPrefix(x.paths[i], p+"/")
}

// state is what a build saw at p: a file's content id, a directory, or
// nothing. A cached build is reused while every path it looked at is in the
// same state.
func (x *snapIndex) state(p string) string {
	if f, ok := x.files[p]; ok {
		if f.BlobSHA != "" {
			return "f" + f.BlobSHA
		}
		sum := sha256.Sum256(f.Data)
		return "f" + hex.EncodeToString(sum[:])
	}
	if x.isDir(p) {
		return "d"
	}
	return "-"
}

// listing is the state of a directory listed or walked: every file below it.
func (x *snapIndex) listing(p string) string {
	h := sha256.New()
	for _, q := range x.paths {
		if p == "" || strings.HasPrefix(q, p+"/") {
			fmt.Fprintf(h, "%s\x00%s\x00", q, x.state(q))
		}
	}
	return "l" + hex.EncodeToString(h.Sum(nil))
}

// kbuild is one build of an entry point: what it read and what it made.
type kbuild struct {
	deps map[string]string // path (or "ls:"+dir) -> state
	objs []Object
	errs []FileError
}

func (b *kbuild) valid(x *snapIndex) bool {
	for p, st := range b.deps {
		var now string
		if d, ok := strings.CutPrefix(p, "ls:"); ok {
			now = x.listing(d)
		} else {
			now = x.state(p)
		}
		if now != st {
			return false
		}
	}
	return true
}

// buildKustomization builds the entry point whose kustomization file is kfile
// in directory dir, on an in-memory filesystem holding only the snapshot's
// accepted files. Its objects carry File kfile and Doc the 1-based index of
// the object in the build's output.
func buildKustomization(x *snapIndex, kfile, dir string, maxDocs int) *kbuild {
	b := &kbuild{deps: map[string]string{}}
	mem, err := x.memfs()
	if err != nil {
		b.errs = []FileError{{File: kfile, Err: fmt.Errorf("%w: %w", ErrKustomizeBuild, err)}}
		return b
	}
	fs := &snapFS{FileSystem: mem, x: x, deps: b.deps}
	opts := krusty.MakeDefaultOptions() // plugins: builtins only; files: below each kustomization's root
	m, err := krusty.MakeKustomizer(opts).Run(fs, path.Join(repoRoot, dir))
	if fs.refused != nil {
		b.errs = []FileError{{File: kfile, Err: fs.refused}}
		return b
	}
	if err != nil {
		b.errs = []FileError{{File: kfile, Err: fmt.Errorf("%w: %s", ErrKustomizeBuild, strings.ReplaceAll(err.Error(), repoRoot+"/", ""))}}
		return b
	}
	out, err := m.AsYaml()
	if err != nil {
		b.errs = []FileError{{File: kfile, Err: fmt.Errorf("%w: %w", ErrKustomizeBuild, err)}}
		return b
	}
	b.objs, b.errs = parseFile(kfile, out, max(maxDocs, m.Size()))
	return b
}

// snapFS is the filesystem a build reads: the snapshot, below repoRoot,
// read only. It records every path the build looks at (for the cache),
// refuses paths outside the repository and checks every kustomization file
// read before kustomize sees it.
type snapFS struct {
	filesys.FileSystem
	x       *snapIndex
	deps    map[string]string
	refused error
}

func (f *snapFS) refuse(err error) error {
	if f.refused == nil {
		f.refused = err
	}
	return err
}

// rel returns p relative to the repository; an error for a path outside it.
func (f *snapFS) rel(p string) (string, error) {
	c := filepath.ToSlash(filepath.Clean(p))
	if c == repoRoot {
		return "", nil
	}
	if r, ok := strings.CutPrefix(c, repoRoot+"/"); ok {
		return r, nil
	}
	return "", f.refuse(fmt.Errorf("%w: %s is outside the repository", ErrKustomizeRefused, c))
}

func (f *snapFS) see(p string) (string, error) {
	r, err := f.rel(p)
	if err != nil {
		return "", err
	}
	f.deps[r] = f.x.state(r)
	return r, nil
}

func (f *snapFS) seeListing(p string) error {
	r, err := f.rel(p)
	if err != nil {
		return err
	}
	f.deps["ls:"+r] = f.x.listing(r)
	return nil
}

var errReadOnly = errors.New("a kustomize build may not write to the repository")

func (f *snapFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (f *snapFS) Mkdir(string) error                  { return errReadOnly }
func (f *snapFS) MkdirAll(string) error               { return errReadOnly }
func (f *snapFS) RemoveAll(string) error              { return errReadOnly }
func (f *snapFS) WriteFile(string, []byte) error      { return errReadOnly }

func (f *snapFS) Open(p string) (filesys.File, error) {
	if _, err := f.see(p); err != nil {
		return nil, err
	}
	return f.FileSystem.Open(p)
}

func (f *snapFS) IsDir(p string) bool {
	if _, err := f.see(p); err != nil {
		return false
	}
	return f.FileSystem.IsDir(p)
}

func (f *snapFS) Exists(p string) bool {
	if _, err := f.see(p); err != nil {
		return false
	}
	return f.FileSystem.Exists(p)
}

func (f *snapFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if _, err := f.see(p); err != nil {
		return "", "", err
	}
	return f.FileSystem.CleanedAbs(p)
}

func (f *snapFS) ReadDir(p string) ([]string, error) {
	if err := f.seeListing(p); err != nil {
		return nil, err
	}
	return f.FileSystem.ReadDir(p)
}

func (f *snapFS) Glob(pattern string) ([]string, error) {
	if err := f.seeListing(filepath.Dir(pattern)); err != nil {
		return nil, err
	}
	return f.FileSystem.Glob(pattern)
}

func (f *snapFS) Walk(p string, fn filepath.WalkFunc) error {
	if err := f.seeListing(p); err != nil {
		return err
	}
	return f.FileSystem.Walk(p, fn)
}

func (f *snapFS) ReadFile(p string) ([]byte, error) {
	r, err := f.see(p)
	if err != nil {
		return nil, err
	}
	if err := f.x.bad[r]; err != nil {
		return nil, f.refuse(fmt.Errorf("%s: %w", r, err))
	}
	data, err := f.FileSystem.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if f.x.sec.RequireEncrypted && !f.x.encrypted[r] && !isKustomization(r) {
		objs, _ := parseFile(r, data, DefaultDocuments)
		for _, o := range objs {
			if isSecret(o) {
				return nil, f.refuse(plaintextSecret(r, o))
			}
		}
	}
	if isKustomization(r) {
		if err := checkKustomization(r, data, f.x); err != nil {
			return nil, f.refuse(err)
		}
	}
	return data, nil
}

// checkKustomization refuses, by name, what a kustomization file at file may
// not ask of an in-memory build: a resource, base or component not in the
// repository (remote bases are never cloned), a remote file, a Helm chart,
// or an exec, container or Go plugin. Paths outside the repository are
// refused by the filesystem as kustomize reaches for them.
func checkKustomization(file string, data []byte, x *snapIndex) error {
	var kz types.Kustomization
	if err := yaml.Unmarshal(data, &kz); err != nil {
		return nil // kustomize reports the malformed file itself
	}
	dir := path.Dir(file)
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrKustomizeRefused, file, fmt.Sprintf(format, a...))
	}
	for _, r := range slices.Concat(kz.Resources, kz.Bases, kz.Components) { //nolint:staticcheck // kustomize still reads the deprecated fields; so must the check
		if remote(r) {
			return refuse("remote resource %q: remote bases are never fetched; vendor it into the repository", r)
		}
		t := path.Join(repoRoot, dir, r)
		if rel, ok := strings.CutPrefix(t, repoRoot+"/"); !ok && t != repoRoot {
			return refuse("resource %q is outside the repository", r)
		} else if x.state(rel) == "-" {
			return refuse("resource %q is not in the repository at this revision (remote bases are never fetched; only .yaml and .yml files are read)", r)
		}
	}
	var files []string
	files = append(files, kz.Crds...)
	files = append(files, kz.Configurations...)
	if p := kz.OpenAPI["path"]; p != "" {
		files = append(files, p)
	}
	for _, p := range kz.PatchesStrategicMerge { //nolint:staticcheck // still read by kustomize
		if !strings.Contains(string(p), "\n") {
			files = append(files, string(p))
		}
	}
	for _, p := range slices.Concat(kz.Patches, kz.PatchesJson6902) { //nolint:staticcheck // still read by kustomize
		files = append(files, p.Path)
	}
	for _, r := range kz.Replacements {
		files = append(files, r.Path)
	}
	kv := func(s types.KvPairSources) {
		for _, f := range s.FileSources {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			files = append(files, f)
		}
		files = append(files, s.EnvSources...)
		files = append(files, s.EnvSource)
	}
	for _, g := range kz.ConfigMapGenerator {
		kv(g.KvPairSources)
	}
	for _, g := range kz.SecretGenerator {
		kv(g.KvPairSources)
	}
	for _, f := range files {
		if remote(f) {
			return refuse("remote file %q: remote files are never fetched; vendor it into the repository", f)
		}
	}
	if x.sec.RequireEncrypted && len(kz.SecretGenerator) > 0 {
		return fmt.Errorf("%w: %s: secretGenerator makes a Secret from plaintext files", ErrPlaintextSecret, file)
	}
	if len(kz.HelmCharts) > 0 || kz.HelmGlobals != nil || len(kz.HelmChartInflationGenerator) > 0 {
		return refuse("helmCharts: Helm charts are not inflated; render the chart into the repository")
	}
	for _, g := range slices.Concat(kz.Generators, kz.Transformers, kz.Validators) {
		if err := checkPlugin(dir, g, x); err != nil {
			return refuse("%v", err)
		}
	}
	return nil
}

// checkPlugin refuses a generator, transformer or validator entry (inline
// YAML or a file) that is not one of kustomize's builtins: exec, container
// (KRM function) and Go plugins run code and are never loaded.
func checkPlugin(dir, entry string, x *snapIndex) error {
	if remote(entry) {
		return fmt.Errorf("remote plugin configuration %q is never fetched", entry)
	}
	data := []byte(entry)
	if !strings.Contains(entry, "\n") {
		f, ok := x.files[path.Join(dir, entry)]
		if !ok {
			return nil // a directory (built as a kustomization) or missing: kustomize says
		}
		data = f.Data
	}
	objs, _ := parseFile("", data, DefaultDocuments)
	for _, o := range objs {
		ann := o.Obj.GetAnnotations()
		if fn, ok := ann["config.kubernetes.io/function"]; ok {
			kind := "container"
			if strings.Contains(fn, "exec") {
				kind = "exec"
			}
			return fmt.Errorf("%s plugin %s %q: exec and container functions are never run", kind, o.Obj.GetKind(), o.Obj.GetName())
		}
		if o.Obj.GetAPIVersion() != "builtin" {
			return fmt.Errorf("plugin %s %s %q is not a kustomize builtin: exec, container and Go plugins are never run", o.Obj.GetAPIVersion(), o.Obj.GetKind(), o.Obj.GetName())
		}
		if strings.HasPrefix(o.Obj.GetKind(), "HelmChart") {
			return fmt.Errorf("%s %q: Helm charts are not inflated; render the chart into the repository", o.Obj.GetKind(), o.Obj.GetName())
		}
	}
	return nil
}

// remote reports whether a kustomization entry names something kustomize
// would fetch: a superset of what its git URL parser accepts (a scheme, an
// scp-style user@host, github.com/...) and of its http(s) file loads.
func remote(s string) bool {
	l := strings.ToLower(s)
	l = strings.TrimPrefix(l, "git::")
	return strings.Contains(l, "://") || scpUser.MatchString(l) ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:")
}

var scpUser = regexp.MustCompile(`^[a-z][a-z0-9-]*@`)
