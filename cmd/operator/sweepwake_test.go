package main

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/openuniverse/operator/drive/plane/deploy"
	"github.com/openuniverse/operator/source"
	"github.com/openuniverse/operator/upgrade/image"
)

// scripted is a source.Writer answering one result.
type scripted struct {
	res source.Result
	err error
}

func (w *scripted) Write(context.Context, source.Change) (source.Result, error) { return w.res, w.err }

// TestWakingWriter: a write that lands a commit wakes the sweep once; a no-op write, a failed
// write and a writer that cannot be opened do not; a commit whose wake fails is still the
// commit (the resync applies it), not an error a caller would retry.
func TestWakingWriter(t *testing.T) {
	cases := map[string]struct {
		w         source.Writer
		open      error
		wakeErr   error
		wantWakes int
		wantErr   bool
	}{
		"commit wakes":             {w: &scripted{res: source.Result{Commit: "c1", Parent: "p"}}, wantWakes: 1},
		"no-op does not":           {w: &scripted{res: source.Result{Parent: "p"}}},
		"failed write does not":    {w: &scripted{err: source.ErrConflict}, wantErr: true},
		"unopened does not":        {open: errors.New("bad url"), wantErr: true},
		"wake failure is a commit": {w: &scripted{res: source.Result{Commit: "c1"}}, wakeErr: errors.New("relay forbidden"), wantWakes: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wakes := 0
			wake := func(context.Context) error { wakes++; return tc.wakeErr }
			open := waking(func(string, *image.GitCredentials) (source.Writer, error) { return tc.w, tc.open }, wake, testr.New(t))
			w, err := open("https://git.example/u.git", nil)
			if err == nil {
				var res source.Result
				res, err = w.Write(context.Background(), source.Change{Branch: "main", Message: "m"})
				if want := tc.w.(*scripted).res; err == nil && (res.Commit != want.Commit || res.Parent != want.Parent) {
					t.Errorf("result %+v, want the writer's %+v", res, tc.w.(*scripted).res)
				}
			}
			if (err != nil) != tc.wantErr || wakes != tc.wantWakes {
				t.Errorf("err %v wakes %d, want err %v wakes %d", err, wakes, tc.wantErr, tc.wantWakes)
			}
		})
	}
	// without a sweep to ask, the writer is the writer itself
	plain := &scripted{}
	if w, _ := waking(func(string, *image.GitCredentials) (source.Writer, error) { return plain, nil }, nil, testr.New(t))("r", nil); w != plain {
		t.Errorf("no wake: got %T, want the writer unwrapped", w)
	}
}

// TestSweepAskWithoutSweep: a process with neither its own sweep nor a relay says so with the
// plane's ErrNoSweep (the plane answers a sync with it).
func TestSweepAskWithoutSweep(t *testing.T) {
	if err := (&sweepAsk{}).ask(context.Background()); !errors.Is(err, deploy.ErrNoSweep) {
		t.Errorf("no sweep, no relay: %v, want deploy.ErrNoSweep", err)
	}
}
