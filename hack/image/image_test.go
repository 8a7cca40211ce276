package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestTag(t *testing.T) {
	cases := map[string]struct {
		in, want string
		err      bool
	}{
		"release":              {in: "v0.3.1", want: "v0.3.1"},
		"no v":                 {in: "1.2.3", want: "v1.2.3"},
		"pre-release":          {in: "v1.0.0-rc.1", want: "v1.0.0-rc.1"},
		"describe past a tag":  {in: "v0.3.1-4-g1a2b3c4-dirty", want: "v0.3.1-4-g1a2b3c4-dirty"},
		"bare commit":          {in: "e76306a", want: "v0.0.0-ge76306a"},
		"bare commit, dirty":   {in: "e76306a-dirty", want: "v0.0.0-ge76306a-dirty"},
		"latest":               {in: "latest", err: true},
		"short form":           {in: "v1.2", err: true},
		"build metadata":       {in: "v1.2.3+meta", err: true},
		"empty":                {in: "", err: true},
		"leading zero":         {in: "v01.2.3", err: true},
		"not a version at all": {in: "main", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Tag(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("Tag(%q) = %q, %v; want %q, error %t", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestImage builds the image index (linux/amd64 and linux/arm64) from this checkout once,
// pushes it to an in-process registry on loopback, pulls it back, checks the index and each
// image's config and layer, runs the binary of the host's platform, and builds again from
// the same commit: the same index digest, the same archive bytes (the second build only
// links: go's build cache holds the packages of the first).
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the operator twice (two platforms); skipped in -short mode")
	}
	ctx := context.Background()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const rev = "0123456789abcdef0123456789abcdef01234567"
	opts := Options{ModuleDir: "../..", Version: "v1.2.3-test.1", Revision: rev, Created: created}
	start := time.Now()
	b, err := BuildImage(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build (%s): %s", platformList(), time.Since(start).Round(time.Millisecond))
	out := t.TempDir()
	paths, err := b.Write(out)
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{filepath.Join(out, "operator-v1.2.3-test.1.oci.tar"),
		filepath.Join(out, "operator-v1.2.3-test.1-linux-amd64.docker.tar"), filepath.Join(out, "operator-v1.2.3-test.1-linux-arm64.docker.tar")}
	if diff := cmp.Diff(wantPaths, paths); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("tarball: %v", err)
		}
	}
	built, _ := b.Index.Digest()

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	pushed, err := Push(ctx, filepath.Join(out, "oci"), host+"/openuniverse")
	if err != nil {
		t.Fatal(err)
	}
	want := host + "/openuniverse/operator:v1.2.3-test.1"
	if len(pushed) != 1 || pushed[0].String() != want {
		t.Fatalf("pushed %v, want [%s]", pushed, want)
	}
	// Only the semver tag exists: no latest.
	tags, err := remote.List(pushed[0].Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1.2.3-test.1"}, tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	ref, err := name.ParseReference(want)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d != built {
		t.Errorf("pulled index digest %s, built %s", d, built)
	}
	if mt, _ := idx.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("index of %d manifests, want linux/amd64 and linux/arm64", len(im.Manifests))
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/openuniverse/operator",
		"org.opencontainers.image.revision": rev,
		"org.opencontainers.image.version":  "v1.2.3-test.1",
	}
	if diff := cmp.Diff(wantLabels, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for i, d := range im.Manifests {
		arch := []string{"amd64", "arm64"}[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: %s platform %+v, want linux/%s", i, d.MediaType, d.Platform, arch)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(arch, func(t *testing.T) { checkImage(t, img, arch, machines[arch], created, wantLabels) })
	}

	// The same commit again: the same index, the same archive.
	start = time.Now()
	again, err := BuildImage(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build of the same commit: %s", time.Since(start).Round(time.Millisecond))
	if d, _ := again.Index.Digest(); d != built {
		t.Errorf("rebuilt from the same commit: index digest %s, want %s", d, built)
	}
	out2 := t.TempDir()
	paths2, err := again.Write(out2)
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := os.ReadFile(paths[0])
	a2, _ := os.ReadFile(paths2[0])
	if !bytes.Equal(a1, a2) || len(a1) == 0 {
		t.Errorf("the OCI archive differs between two builds of the same commit (%d, %d bytes)", len(a1), len(a2))
	}
	checkArchive(t, a1, built.String(), "ghcr.io/openuniverse/operator:v1.2.3-test.1")
}

// checkImage checks one platform's image: its config, its one layer, and its binary (run
// when the platform is the host's).
func checkImage(t *testing.T, img v1.Image, arch string, machine elf.Machine, created time.Time, wantLabels map[string]string) {
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != arch || !cf.Created.Equal(created) {
		t.Errorf("platform %s/%s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	c := cf.Config
	if c.User != "65532:65532" || !cmp.Equal(c.Entrypoint, []string{"/operator"}) || len(c.Cmd) != 0 {
		t.Errorf("user %q entrypoint %q cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	if diff := cmp.Diff(wantLabels, c.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want one", len(layers), err)
	}
	files := map[string]*tar.Header{}
	var binary, certs []byte
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		switch h.Name {
		case "operator":
			binary, _ = io.ReadAll(tr)
		case "etc/ssl/certs/ca-certificates.crt":
			certs, _ = io.ReadAll(tr)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if files[shell] != nil {
			t.Errorf("the image has %s", shell)
		}
	}
	if h := files["operator"]; h == nil || h.Mode != 0o755 || h.Uid != 0 {
		t.Fatalf("/operator: %+v", h)
	}
	if h := files["tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", h)
	}
	for name, h := range files {
		if !h.ModTime.Equal(created) {
			t.Errorf("%s mtime %s, want %s", name, h.ModTime, created)
		}
	}
	// The CA bundle is the pinned Mozilla roots, whole: not the build machine's.
	if n, _ := countCerts(certs); !bytes.Equal(certs, mozillaRoots()) || n < 100 {
		t.Errorf("CA bundle: %d bytes with %d certificates, want the %d bytes of the pinned roots", len(certs), n, len(mozillaRoots()))
	}

	// A static binary of the platform: no program interpreter to load.
	path := filepath.Join(t.TempDir(), "operator")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if ef.Machine != machine {
		t.Errorf("the binary is for %s, want %s", ef.Machine, machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked")
		}
	}
	ef.Close()
	if arch != runtime.GOARCH {
		return
	}
	got, err := exec.Command(path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("/operator version: %v\n%s", err, got)
	}
	if !strings.HasPrefix(string(got), "operator v1.2.3-test.1 ") {
		t.Errorf("/operator version printed %q, want the tag", got)
	}
	// The same files give the same image.
	p := v1.Platform{OS: "linux", Architecture: arch}
	again, err := Image(binary, certs, Meta{Version: "v1.2.3-test.1", Revision: wantLabels[LabelRevision], Created: created}, p)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != mustDigest(t, img) {
		t.Errorf("rebuilt from the same files: digest %s, want %s", d, mustDigest(t, img))
	}
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkArchive reads the OCI archive as kind's containerd imports it: an oci-layout, an
// index.json whose one entry is the index, named for containerd, and every blob it needs.
func checkArchive(t *testing.T, archive []byte, digest, fullName string) {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatal("the archive has no oci-layout")
	}
	var top v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest.String() != digest || !top.Manifests[0].MediaType.IsIndex() ||
		top.Manifests[0].Annotations["io.containerd.image.name"] != fullName || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3-test.1" {
		t.Fatalf("index.json: %s", files["index.json"])
	}
	if _, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]; !ok {
		t.Errorf("the archive lacks the index blob %s", digest)
	}
}

// TestDockerfileEquivalent checks the Dockerfile builds what hack/image builds: the same
// compile flags, path, user and labels, on a distroless static nonroot base.
func TestDockerfileEquivalent(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{
		"FROM --platform=${BUILDPLATFORM} golang:${GO_VERSION} AS build",
		"CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH}",
		"-trimpath",
		"-tags " + BuildTags,
		`-ldflags "` + LDFlags("${VERSION}") + `"`,
		"-o " + Entrypoint + " ./cmd/operator",
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"COPY --from=build /operator " + Entrypoint,
		"USER " + User,
		`ENTRYPOINT ["` + Entrypoint + `"]`,
		LabelSource + `="` + SourceURL + `"`,
		LabelRevision + `="${REVISION}"`,
		LabelVersion + `="${VERSION}"`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile does not say %s", want)
		}
	}
	if strings.Count(df, "\nFROM ") != 2 {
		t.Error("Dockerfile: want two stages (build, distroless)")
	}
}

// TestBuildTagsLeaveOutGoPlugins checks the operator built with BuildTags links no package
// plugin (which makes the linker export every symbol and keep every exported method: the
// process started at 130 MiB resident instead of 80), and that every build of the binary
// (the Makefile, e2e's, the demo) passes the tags.
func TestBuildTagsLeaveOutGoPlugins(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-tags", BuildTags, "./cmd/operator")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "plugin" {
			t.Errorf("./cmd/operator built with -tags %s still links package plugin", BuildTags)
		}
	}
	for _, f := range []string{"Makefile", "e2e/harness_test.go", "hack/demo.sh"} {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), BuildTags) {
			t.Errorf("%s builds the operator without -tags %s", f, BuildTags)
		}
	}
}

// TestIndexWriteAndPush is the index path without a compile (it runs in -short mode too):
// the images of two platforms from the same files make one OCI index with their platforms in
// order; written twice, the OCI archive is the same bytes; pushed, the registry serves the
// index at the tag with the built digest.
func TestIndexWriteAndPush(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := Meta{Version: "v1.2.3-test.1", Revision: "0123456789abcdef0123456789abcdef01234567", Created: created}
	b := &Build{Tag: m.Version}
	for _, p := range Platforms {
		img, err := Image([]byte("not a binary: "+p.Architecture), mozillaRoots(), m, p)
		if err != nil {
			t.Fatal(err)
		}
		b.Images = append(b.Images, img)
	}
	idx, err := Index(b.Images, m)
	if err != nil {
		t.Fatal(err)
	}
	b.Index = idx
	built, _ := idx.Digest()
	var archives [][]byte
	var out string
	for range 2 {
		out = t.TempDir()
		paths, err := b.Write(out)
		if err != nil {
			t.Fatal(err)
		}
		a, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, a)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two writes of the same index give different OCI archives")
	}
	checkArchive(t, archives[0], built.String(), "ghcr.io/openuniverse/operator:v1.2.3-test.1")

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	if _, err := Push(context.Background(), filepath.Join(out, "oci"), host+"/openuniverse"); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/openuniverse/operator:v1.2.3-test.1")
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	im, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != built || len(im.Manifests) != 2 ||
		im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" {
		t.Fatalf("pulled index %s (built %s): %+v", d, built, im.Manifests)
	}
	for i, d := range im.Manifests {
		img, err := pulled.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != Platforms[i].Architecture || cf.OS != "linux" {
			t.Errorf("manifest %d: config says %s/%s", i, cf.OS, cf.Architecture)
		}
	}
}
