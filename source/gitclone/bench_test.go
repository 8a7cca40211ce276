package gitclone

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"testing"
	"time"
)

// BenchmarkSnapshotOneChange is the go-git half of push → applied (issue 17): a
// 1 000-file repository on the git server, then per iteration one pushed change and the
// Head and Snapshot that read it. It reports the fetch (sync: ls-remote, negotiation,
// pack) and the read (walk the tree, read the changed blobs) apart, in ms per push.
//
//	go test -run '^$' -bench SnapshotOneChange ./source/gitclone/
func BenchmarkSnapshotOneChange(b *testing.B) {
	log.SetOutput(io.Discard) // the git server logs every request
	defer log.SetOutput(os.Stderr)
	srv, _, url := httpServer(b)
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("crs/%03d/cfg-%05d.yaml", i/100, i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%05d, namespace: x}\ndata: {v: \"0\"}\n", i)
	}
	push(b, srv, files)
	tf, _ := tokenFile(b, password)
	s, err := New(tf, Options{URL: url, Branch: "main", Path: "crs", CacheDir: b.TempDir(), Username: user})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rev, err := s.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	first, err := s.Snapshot(ctx, rev)
	if err != nil {
		b.Fatal(err)
	}
	var head, snap time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		push(b, srv, map[string]string{"crs/000/cfg-00000.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-00000, namespace: x}\ndata: {v: \"%d\"}\n", i+1)})
		b.StartTimer()
		t0 := time.Now()
		rev, err := s.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		sn, err := s.Snapshot(ctx, rev)
		if err != nil {
			b.Fatal(err)
		}
		head, snap = head+t1.Sub(t0), snap+time.Since(t1)
		if len(sn.Files) != len(first.Files) || sn.Refetched != 1 {
			b.Fatalf("snapshot: %d files, %d refetched; want %d, 1", len(sn.Files), sn.Refetched, len(first.Files))
		}
	}
	b.ReportMetric(float64(head.Milliseconds())/float64(b.N), "head-ms/push")
	b.ReportMetric(float64(snap.Milliseconds())/float64(b.N), "snapshot-ms/push")
}

// BenchmarkResolvePullRef is the git half of a preview: a 1 000-file repository whose main
// the clone already holds, then per iteration a new refs/pull/N/head changing one file,
// and the Resolve (ls-remote, depth-1 fetch of that ref) and Snapshot (walk, read the one
// changed blob) that read it, in ms per pull request.
//
//	go test -run '^$' -bench ResolvePullRef ./source/gitclone/
func BenchmarkResolvePullRef(b *testing.B) {
	log.SetOutput(io.Discard) // the git server logs every request
	defer log.SetOutput(os.Stderr)
	srv, _, url := httpServer(b)
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("crs/%03d/cfg-%05d.yaml", i/100, i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%05d, namespace: x}\ndata: {v: \"0\"}\n", i)
	}
	push(b, srv, files)
	tf, _ := tokenFile(b, password)
	s, err := New(tf, Options{URL: url, Branch: "main", Path: "crs", CacheDir: b.TempDir(), Username: user})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rev, err := s.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	base, err := s.Snapshot(ctx, rev)
	if err != nil {
		b.Fatal(err)
	}
	var resolve, snap time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ref := fmt.Sprintf("refs/pull/%d/head", i+1)
		want := pushRef(b, srv, ref, map[string]string{"crs/000/cfg-00000.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-00000, namespace: x}\ndata: {v: \"%d\"}\n", i+1)})
		if _, err := s.Snapshot(ctx, rev); err != nil { // the sweep read main last
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		sha, err := s.Resolve(ctx, ref)
		if err != nil || sha != want {
			b.Fatalf("Resolve(%s) = %s, %v; want %s", ref, sha, err, want)
		}
		t1 := time.Now()
		sn, err := s.Snapshot(ctx, sha)
		if err != nil {
			b.Fatal(err)
		}
		resolve, snap = resolve+t1.Sub(t0), snap+time.Since(t1)
		if len(sn.Files) != len(base.Files) || sn.Refetched != 1 {
			b.Fatalf("snapshot: %d files, %d refetched; want %d, 1", len(sn.Files), sn.Refetched, len(base.Files))
		}
	}
	b.ReportMetric(float64(resolve.Milliseconds())/float64(b.N), "resolve-ms/pr")
	b.ReportMetric(float64(snap.Milliseconds())/float64(b.N), "snapshot-ms/pr")
}
