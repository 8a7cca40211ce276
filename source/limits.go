package source

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// Limits bound what is read from an untrusted repository. Every limit hit is
// a named FileError, never an out-of-memory kill; the files within the
// limits are still applied.
type Limits struct {
	// FileBytes is the largest file read; larger ones are not even fetched.
	FileBytes int64
	// TotalBytes is the most a snapshot reads in all; the files (in path
	// order) past it are refused by name.
	TotalBytes int64
	// Files is the most manifest files a snapshot holds; the files (in path
	// order) past it are refused by name.
	Files int
	// Documents is the most YAML documents one file may hold; a file with
	// more is refused whole.
	Documents int
}

// Defaults of Limits.
const (
	DefaultFileBytes  = 10 << 20  // 10 MiB: far above any manifest, far below the operator's memory
	DefaultTotalBytes = 128 << 20 // 128 MiB in all
	DefaultFiles      = 10000
	DefaultDocuments  = 1000
)

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{FileBytes: DefaultFileBytes, TotalBytes: DefaultTotalBytes, Files: DefaultFiles, Documents: DefaultDocuments}
}

// BindFlags registers the limits' flags on fs, with the values in l as
// defaults.
func (l *Limits) BindFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&l.FileBytes, "gitops-max-file-bytes", l.FileBytes, "Largest manifest file read from git; larger ones are refused by name, unread.")
	fs.Int64Var(&l.TotalBytes, "gitops-max-snapshot-bytes", l.TotalBytes, "Most bytes of manifests read from one revision; files past it are refused by name.")
	fs.IntVar(&l.Files, "gitops-max-files", l.Files, "Most manifest files read from one revision; files past it are refused by name.")
	fs.IntVar(&l.Documents, "gitops-max-documents", l.Documents, "Most YAML documents in one file; a file with more is refused.")
}

// orDefault fills the zero fields with the defaults.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.FileBytes <= 0 {
		l.FileBytes = d.FileBytes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = d.TotalBytes
	}
	if l.Files <= 0 {
		l.Files = d.Files
	}
	if l.Documents <= 0 {
		l.Documents = d.Documents
	}
	return l
}

// MaxFileBytes returns FileBytes, defaulted: what a Source may read of one
// file.
func (l Limits) MaxFileBytes() int64 { return l.orDefault().FileBytes }

// Reasons a file is refused by a limit or its type. Compare with errors.Is
// on FileError.
var (
	// ErrTooLarge marks a file over Limits.FileBytes.
	ErrTooLarge = errors.New("file too large")
	// ErrSnapshotTooLarge marks a file past Limits.TotalBytes.
	ErrSnapshotTooLarge = errors.New("snapshot too large")
	// ErrTooManyFiles marks a file past Limits.Files.
	ErrTooManyFiles = errors.New("too many files")
	// ErrTooManyDocuments marks a file with more than Limits.Documents.
	ErrTooManyDocuments = errors.New("too many documents")
	// ErrSymlink marks a symbolic link in the repository: never followed.
	ErrSymlink = errors.New("symbolic link is not followed")
	// ErrNotFile marks an entry that is not a regular file (a submodule).
	ErrNotFile = errors.New("not a regular file")
)

// TooLarge is the error of a file of size bytes over the limit.
func TooLarge(size, limit int64) error {
	return fmt.Errorf("%w: %d bytes, the limit is %d (--gitops-max-file-bytes)", ErrTooLarge, size, limit)
}
