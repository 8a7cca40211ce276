package source

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The write path: a commit of pure edits, pushed without force, re-applied on the new head
// when another writer moved the branch in between.
//
// A caller (ImageUpdate, later the drive loop) builds a Change and hands it to a Writer —
// gitclone.Writer for any git server, github.Writer for the GitHub git data API:
//
//	res, err := w.Write(ctx, source.Change{
//		Branch: "main", Paths: []string{"crs/app.yaml"},
//		Edit:   func(path string, data []byte) ([]byte, error) { return rewrite(data) },
//		Message: "...", Author: source.Signature{Name: "...", Email: "..."},
//	})
//
// Edit sees the file as it is at the head being built on, never a cached copy; returning the
// bytes unchanged means there is nothing to commit (Result.Commit is then empty). Because the
// writer calls Edit again after a rejected push, it must be a pure function of its inputs.

// Edit changes one file: it gets the file's path and its bytes at the head being written on
// and returns the new bytes. It must be pure and deterministic (it is re-applied to a newer
// head after a conflict); an error aborts the write without retry.
type Edit func(path string, data []byte) ([]byte, error)

// Signature names a commit author.
type Signature struct {
	Name  string
	Email string
}

// DefaultAuthor is the author of commits whose Change names none.
var DefaultAuthor = Signature{Name: "universe-operator", Email: "universe-operator@users.noreply.invalid"}

// Change is one commit to write.
type Change struct {
	// Branch is the branch read and, unless PushBranch is set, written.
	Branch string
	// PushBranch, when set and different from Branch, receives the commit instead. It is
	// created from Branch's head when missing and otherwise built on its own head; it is
	// never force-pushed, so commits others added to it are kept.
	PushBranch string
	// Paths are the files Edit is applied to, slash separated from the repository root. A
	// missing file is an error (ErrFileNotFound).
	Paths []string
	Edit  Edit
	// Message is the commit message; required.
	Message string
	// Author defaults to DefaultAuthor; it is also the committer.
	Author Signature
	// SigningKey is an armored OpenPGP private key signing the commit (git.asc), with
	// SigningPassphrase when the key is encrypted. Writers that cannot sign refuse the
	// change (ErrSigningUnsupported) rather than write an unsigned commit.
	SigningKey        []byte
	SigningPassphrase Token
}

// Target is the branch the commit lands on.
func (c Change) Target() string {
	if c.PushBranch != "" {
		return c.PushBranch
	}
	return c.Branch
}

// Validate reports a Change a writer cannot act on.
func (c Change) Validate() error {
	switch {
	case c.Branch == "":
		return errors.New("write: branch is empty")
	case len(c.Paths) == 0:
		return errors.New("write: no path to edit")
	case c.Edit == nil:
		return errors.New("write: no edit")
	case c.Message == "":
		return errors.New("write: commit message is empty")
	}
	if err := ValidBranch(c.Branch); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if c.PushBranch != "" {
		if err := ValidBranch(c.PushBranch); err != nil {
			return fmt.Errorf("write: push %w", err)
		}
	}
	for _, p := range c.Paths {
		if CleanPath(p) == "" || CleanPath(p) != p {
			return fmt.Errorf("write: path %q is not a clean relative file path", p)
		}
	}
	return nil
}

// Result is what a write did.
type Result struct {
	// Commit is the SHA of the pushed commit; empty when the edit changed nothing.
	Commit string
	// Parent is the head the commit (or the no-op) was computed on.
	Parent string
	// Branch is the branch written (Change.Target).
	Branch string
	// Attempts counts the pushes tried, 1 without conflict.
	Attempts int
	// Changed lists the paths whose bytes the edit changed.
	Changed []string
}

// Errors of the write path. Conflicts are retried by Retry; the others are not.
var (
	// ErrConflict: the branch moved between read and push (non-fast-forward, a stale ref
	// update, a lost ref lock). Retry re-reads the head and re-applies the edit.
	ErrConflict = errors.New("branch moved while writing")
	// ErrFileNotFound: a path of the Change does not exist at the head.
	ErrFileNotFound = errors.New("file not found")
	// ErrSigningUnsupported: the writer cannot sign commits.
	ErrSigningUnsupported = errors.New("commit signing is not supported by this writer")
)

// EditError is an error returned by a Change's Edit, naming the file.
type EditError struct {
	Path string
	Err  error
}

func (e *EditError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *EditError) Unwrap() error { return e.Err }

// A Writer commits a Change and pushes it. Implementations retry conflicts themselves
// (through Retry), so an ErrConflict coming out of Write means the retries ran out.
type Writer interface {
	Write(ctx context.Context, c Change) (Result, error)
}

// RetryPolicy bounds the fetch-reapply-push loop.
type RetryPolicy struct {
	// Attempts is the number of pushes tried; 0 means 5.
	Attempts int
	// Base is the first backoff; it doubles per attempt up to Max. Zero values mean 200 ms
	// and 5 s. Each wait is drawn uniformly from [d/2, d) (jitter), so racing writers part.
	Base, Max time.Duration
	// Sleep waits d or until ctx ends; nil uses a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the policy writers use when given a zero one.
var DefaultRetry = RetryPolicy{Attempts: 5, Base: 200 * time.Millisecond, Max: 5 * time.Second}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultRetry.Attempts
	}
	if p.Base <= 0 {
		p.Base = DefaultRetry.Base
	}
	if p.Max <= 0 {
		p.Max = DefaultRetry.Max
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// Backoff is the jittered wait before attempt n+1 (n ≥ 1) given a uniform draw u in [0, 1).
func (p RetryPolicy) Backoff(n int, u float64) time.Duration {
	p = p.withDefaults()
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	return d/2 + time.Duration(u*float64(d/2))
}

// Retry runs attempt until it returns anything but ErrConflict, at most p.Attempts times,
// waiting a jittered backoff between tries. attempt gets the 1-based attempt number; the
// returned Result's Attempts is set to the number of attempts made.
func Retry(ctx context.Context, p RetryPolicy, attempt func(ctx context.Context, n int) (Result, error)) (Result, error) {
	p = p.withDefaults()
	var (
		res Result
		err error
	)
	for n := 1; ; n++ {
		res, err = attempt(ctx, n)
		res.Attempts = n
		if err == nil || !errors.Is(err, ErrConflict) {
			return res, err
		}
		if n >= p.Attempts {
			return res, fmt.Errorf("gave up after %d attempts: %w", n, err)
		}
		if serr := p.Sleep(ctx, p.Backoff(n, rand.Float64())); serr != nil { //nolint:gosec // jitter
			return res, errors.Join(err, serr)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ApplyEdit runs c.Edit over the files read by read (which returns ErrFileNotFound for a
// missing path) and returns the changed files' new bytes by path.
func ApplyEdit(c Change, read func(path string) ([]byte, error)) (map[string][]byte, []string, error) {
	out := map[string][]byte{}
	var changed []string
	for _, p := range c.Paths {
		data, err := read(p)
		if err != nil {
			return nil, nil, &EditError{Path: p, Err: err}
		}
		next, err := c.Edit(p, data)
		if err != nil {
			return nil, nil, &EditError{Path: p, Err: err}
		}
		if string(next) != string(data) {
			out[p] = next
			changed = append(changed, p)
		}
	}
	return out, changed, nil
}
