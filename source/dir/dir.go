// Package dir reads manifests from the local filesystem: Read takes a file, a directory
// tree or stdin as one Snapshot (what `operator render` and `operator diff` read), and New
// serves a directory as a source.Source of one commit (what `operator up` applies).
package dir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openuniverse/operator/source"
)

// StdinPath is the file name objects read from standard input are reported under.
const StdinPath = "stdin.yaml"

// Read reads the manifests at path into a Snapshot that source.Parse accepts: a directory
// is walked recursively for .yaml and .yml files (skipping .git), a single file is read
// whatever its name, and "-" reads stdin (reported as StdinPath). Paths keep the form the
// user gave, slash separated, sorted.
func Read(path string, stdin io.Reader) (*source.Snapshot, error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return &source.Snapshot{Files: []source.File{{Path: StdinPath, Data: data}}}, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	if !info.IsDir() {
		if !source.IsManifest(path) {
			return nil, fmt.Errorf("read %s: not a .yaml or .yml file", path)
		}
		data, err := os.ReadFile(path) //nolint:gosec // G304: the file the command line names
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}
		return &source.Snapshot{Files: []source.File{{Path: filepath.ToSlash(path), Data: data}}}, nil
	}
	var files []source.File
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir // a checkout's git store; a Snapshot never holds it
		}
		if d.IsDir() || !source.IsManifest(p) {
			return nil
		}
		f, err := readLimited(p, d)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests under %s: %w", path, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return &source.Snapshot{Files: files}, nil
}

// readLimited reads one manifest of a directory, never following a symbolic link and
// never reading a file over source.DefaultFileBytes (each is a File that Parse reports
// by name).
func readLimited(p string, d fs.DirEntry) (source.File, error) {
	f := source.File{Path: filepath.ToSlash(p)}
	if d.Type()&fs.ModeSymlink != 0 {
		f.Refused = source.ErrSymlink
		return f, nil
	}
	if !d.Type().IsRegular() {
		f.Refused = source.ErrNotFile
		return f, nil
	}
	info, err := d.Info()
	if err != nil {
		return f, err
	}
	f.Size = info.Size()
	if limit := int64(source.DefaultFileBytes); f.Size > limit {
		f.Refused = source.TooLarge(f.Size, limit)
		return f, nil
	}
	f.Data, err = os.ReadFile(p) //nolint:gosec // G304: a regular file (no symlink) under the directory the command line names
	return f, err
}

// Source is a directory read once as the one commit of a repository: its revision is a
// digest of the files, its paths are relative to the directory.
type Source struct{ snap *source.Snapshot }

var _ source.Source = (*Source)(nil)

// New reads the manifests under the directory root.
func New(root string) (*Source, error) {
	if info, err := os.Stat(root); err != nil {
		return nil, err
	} else if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", root)
	}
	snap, err := Read(root, nil)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	prefix := filepath.ToSlash(filepath.Clean(root)) + "/"
	for i, f := range snap.Files {
		snap.Files[i].Path = strings.TrimPrefix(f.Path, prefix)
		fmt.Fprintf(h, "%s\x00%d\x00", snap.Files[i].Path, len(f.Data))
		h.Write(f.Data)
	}
	snap.Revision = "dir:" + hex.EncodeToString(h.Sum(nil))[:12]
	snap.Refetched = len(snap.Files)
	return &Source{snap: snap}, nil
}

// Head returns the digest revision.
func (d *Source) Head(context.Context) (string, error) { return d.snap.Revision, nil }

// Snapshot returns the files read by New, whatever revision is asked.
func (d *Source) Snapshot(context.Context, string) (*source.Snapshot, error) { return d.snap, nil }
