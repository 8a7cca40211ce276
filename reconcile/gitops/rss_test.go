package gitops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openuniverse/operator/e2e/testbed"
	"github.com/openuniverse/operator/source"
)

// envSweepProcess makes TestSweepProcess, in a child process, sweep the
// directory it names against the kubeconfig after the comma.
const envSweepProcess = "GITOPS_TEST_SWEEP_PROCESS"

// envSweepHeapProfile, when set, names the file the sweep process writes its heap profile
// to after the idle sweep (go tool pprof -sample_index=inuse_space or alloc_space).
const envSweepHeapProfile = "GITOPS_TEST_SWEEP_HEAP_PROFILE"

// BenchmarkSweepRSS measures the memory of a process that only sweeps: a
// child process (this test binary) cold-syncs 1000 Service CRs, sweeps
// again idle, and reports its resident set.
//
//	go test -run '^$' -bench SweepRSS -benchtime 1x ./reconcile/gitops/
//
// GITOPS_TEST_SWEEP_HEAP_PROFILE=FILE keeps the child's heap profile (see envSweepHeapProfile).
func BenchmarkSweepRSS(b *testing.B) {
	cfg := testbed.APIServer(b)
	kubeconfig := writeKubeconfig(b, cfg)
	for i := range b.N {
		dir := b.TempDir()
		writeFiles(b, dir, serviceFixture(b, fmt.Sprintf("bench-rss-%d-%d", i, time.Now().Unix()), 1000))
		cmd := exec.Command(os.Args[0], "-test.run=^TestSweepProcess$", "-test.v")
		cmd.Env = append(os.Environ(), envSweepProcess+"="+dir+","+kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("sweep process: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`SWEEP-PROCESS .*`).Find(out)
		if m == nil {
			b.Fatalf("no figures from the sweep process:\n%s", out)
		}
		fmt.Printf("\n%s\n", m)
	}
}

// TestSweepProcess is the child of BenchmarkSweepRSS; it skips otherwise.
func TestSweepProcess(t *testing.T) {
	arg := os.Getenv(envSweepProcess)
	if arg == "" {
		t.Skip("runs only as the child of BenchmarkSweepRSS")
	}
	dir, kubeconfig, _ := strings.Cut(arg, ",")
	ctrllog.SetLogger(logr.Discard())
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scope, _ := NewScope([]string{All}, nil)
	scope = scope.WithCRDs(true) // the fixture declares its CRD
	sw, err := NewSweeper(cfg, dirSource(dir), scope, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	ctx := context.Background()
	cold := sw.Sweep(ctx)
	idle := sw.Sweep(ctx)
	if cold.Error != "" || cold.Summary.Errors > 0 || idle.Summary.Applied != 0 {
		t.Fatalf("cold %+v %s, idle %+v", cold.Summary, cold.Error, idle.Summary)
	}
	runtime.GC()
	if p := os.Getenv(envSweepHeapProfile); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("SWEEP-PROCESS objects=%d cold=%.2fs rss=%dMiB peak_rss=%dMiB heap_inuse=%dMiB\n",
		cold.Summary.Applied, cold.Duration, procStatus("VmRSS")>>20, procStatus("VmHWM")>>20, ms.HeapInuse>>20)
}

// dirSource is a Source over a directory: one fixed revision.
type dirSource string

func (d dirSource) Head(context.Context) (string, error) {
	return "0000000000000000000000000000000000000001", nil
}

func (d dirSource) Snapshot(_ context.Context, rev string) (*source.Snapshot, error) {
	s := &source.Snapshot{Revision: rev}
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(string(d), p)
		s.Files = append(s.Files, source.File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	slices.SortFunc(s.Files, func(a, b source.File) int { return strings.Compare(a.Path, b.Path) })
	s.Refetched = len(s.Files)
	return s, err
}

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(field string) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d", &kb); err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
