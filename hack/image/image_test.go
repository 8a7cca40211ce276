package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
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

// TestImage builds the image from this checkout, pushes it to an in-process registry on
// loopback, pulls it back, checks its config, and runs the binary of its layer.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the operator; skipped in -short mode")
	}
	ctx := context.Background()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b, err := BuildImage(ctx, Options{ModuleDir: "../..", Version: "v1.2.3-test.1", Revision: "0123456789abcdef0123456789abcdef01234567", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tarPath, err := b.Write(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tarPath); err != nil {
		t.Errorf("tarball: %v", err)
	}

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
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	built, _ := b.Image.Digest()
	pulled, _ := img.Digest()
	if built != pulled {
		t.Errorf("pulled digest %s, built %s", pulled, built)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(created) {
		t.Errorf("platform %s/%s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	c := cf.Config
	if c.User != "65532:65532" || !cmp.Equal(c.Entrypoint, []string{"/operator"}) || len(c.Cmd) != 0 {
		t.Errorf("user %q entrypoint %q cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/openuniverse/operator",
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.version":  "v1.2.3-test.1",
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
	// The CA bundle is the build machine's, whole.
	store, err := readCerts("")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := countCerts(certs); !bytes.Equal(certs, store) || n == 0 {
		t.Errorf("CA bundle: %d bytes with %d certificates, want the trust store's %d bytes", len(certs), n, len(store))
	}

	// A static binary: no program interpreter to load.
	path := filepath.Join(t.TempDir(), "operator")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary is dynamically linked")
		}
	}
	ef.Close()
	got, err := exec.Command(path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("/operator version: %v\n%s", err, got)
	}
	if !strings.HasPrefix(string(got), "operator v1.2.3-test.1 ") {
		t.Errorf("/operator version printed %q, want the tag", got)
	}

	// The same inputs give the same image.
	again, err := Image(binary, certs, Meta{Version: "v1.2.3-test.1", Revision: wantLabels["org.opencontainers.image.revision"], Created: created})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest(); d != built {
		t.Errorf("rebuilt from the same files: digest %s, want %s", d, built)
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
		"CGO_ENABLED=0 GOOS=" + GOOS + " GOARCH=" + GOARCH,
		"-trimpath",
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
