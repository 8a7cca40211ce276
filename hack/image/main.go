// Command image builds the operator's OCI image without a container engine, and pushes it:
//
//	go run ./hack/image build --version v0.1.0 --revision SHA --out .cache/image
//	go run ./hack/image push --out .cache/image --registry ghcr.io/openuniverse
//
// build compiles a static linux/amd64 binary (CGO_ENABLED=0, -trimpath) stamped with the
// version, layers it onto an empty base with go-containerregistry together with the build
// machine's CA certificates and a passwd entry for the nonroot user (65532), and writes the
// image as an OCI layout (OUT/oci) and a docker-loadable tarball (OUT/operator-TAG.tar).
// The tag is the version, a semantic version, never "latest". push copies the images of
// the layout to REGISTRY/operator:TAG with the credentials of the docker config.
//
// The Dockerfile at the repository root builds the same image with a container engine.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/mod/semver"
)

// What the image is, shared with the Dockerfile (image_test checks it says the same).
const (
	// Repository is the image's name within a registry.
	Repository = "operator"
	// DefaultRegistry is where releases are pushed; the install default image points there.
	DefaultRegistry = "ghcr.io/openuniverse"
	// SourceURL is the org.opencontainers.image.source label.
	SourceURL = "https://github.com/openuniverse/operator"
	// User is the non-root user and group the operator runs as (distroless's nonroot).
	User = "65532:65532"
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/operator"
	// CertsPath is where the CA bundle goes: Go's first place on Linux.
	CertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// GOOS and GOARCH of the image.
	GOOS, GOARCH = "linux", "amd64"
)

// OCI annotation and label keys.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	refName       = "org.opencontainers.image.ref.name"
)

// trustStores are the CA bundles of the common distributions, in the order Go's crypto/x509
// reads them on Linux.
var trustStores = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|push [flags]")
		os.Exit(2)
	}
	ctx := context.Background()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	out := fs.String("out", ".cache/image", "directory of the OCI layout (OUT/oci) and the tarball")
	var err error
	switch os.Args[1] {
	case "build":
		var o Options
		fs.StringVar(&o.ModuleDir, "module", ".", "root of the operator module")
		fs.StringVar(&o.Version, "version", "", "version (git describe); a semantic version, or a bare commit that becomes v0.0.0-g<commit>")
		fs.StringVar(&o.Revision, "revision", "", "commit the image is built from")
		fs.StringVar(&o.CAFile, "ca-file", "", "CA bundle to include; empty for the build machine's trust store")
		created := fs.Int64("created", 0, "build time as Unix seconds (the commit time, for reproducible builds); 0 for $SOURCE_DATE_EPOCH or the epoch")
		_ = fs.Parse(os.Args[2:])
		o.Created = createdAt(*created)
		var b *Build
		if b, err = BuildImage(ctx, o); err == nil {
			var tarPath string
			if tarPath, err = b.Write(*out); err == nil {
				digest, _ := b.Image.Digest()
				fmt.Printf("built %s:%s %s\n  %s\n  %s\n", Repository, b.Tag, digest, filepath.Join(*out, "oci"), tarPath)
			}
		}
	case "push":
		registry := fs.String("registry", "", "registry and namespace to push to, e.g. ghcr.io/openuniverse")
		_ = fs.Parse(os.Args[2:])
		var refs []name.Reference
		if refs, err = Push(ctx, filepath.Join(*out, "oci"), *registry); err == nil {
			for _, r := range refs {
				fmt.Println("pushed", r.String())
			}
		}
	default:
		err = fmt.Errorf("unknown command %q (want build or push)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func createdAt(unix int64) time.Time {
	if unix == 0 {
		if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
			unix = s
		}
	}
	return time.Unix(unix, 0).UTC()
}

// Options are what BuildImage builds.
type Options struct {
	ModuleDir string    // root of the operator module
	Version   string    // see Tag
	Revision  string    // commit, for the revision label
	CAFile    string    // CA bundle; empty for the first of trustStores that exists
	Created   time.Time // build time and every file's mtime
}

// Build is a built image.
type Build struct {
	Image v1.Image
	Tag   string
}

// commitish is what `git describe --always` prints without a tag: a short commit, maybe
// dirty.
var commitish = regexp.MustCompile(`^[0-9a-f]{7,40}(-dirty)?$`)

// Tag returns the image tag for version: a semantic version as it is (a leading v added
// when missing), a bare commit as the pre-release v0.0.0-g<commit>. Anything else, and
// "latest" above all, is refused: tags name one build.
func Tag(version string) (string, error) {
	v := strings.TrimSpace(version)
	if commitish.MatchString(v) {
		v = "v0.0.0-g" + v
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	// semver.Canonical also accepts v1 and v1.2 (as v1.0.0, v1.2.0), and drops +build,
	// which a tag cannot carry anyway: require the full form.
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return "", fmt.Errorf("version %q is not a semantic version (vMAJOR.MINOR.PATCH[-PRERELEASE]); tag a release or pass VERSION=v0.1.0", version)
	}
	return v, nil
}

// BuildImage compiles the operator and layers it into an image.
func BuildImage(ctx context.Context, o Options) (*Build, error) {
	tag, err := Tag(o.Version)
	if err != nil {
		return nil, err
	}
	certs, err := readCerts(o.CAFile)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "operator-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "operator")
	if err := compile(ctx, o.ModuleDir, tag, bin); err != nil {
		return nil, err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	img, err := Image(binary, certs, Meta{Version: tag, Revision: o.Revision, Created: o.Created})
	if err != nil {
		return nil, err
	}
	return &Build{Image: img, Tag: tag}, nil
}

// LDFlags are the linker flags of the binary: no symbol table or DWARF, the version stamped
// into main.version. The Dockerfile passes the same.
func LDFlags(tag string) string { return "-s -w -X main.version=" + tag }

// compile builds a static linux/amd64 binary of ./cmd/operator.
func compile(ctx context.Context, moduleDir, tag, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", LDFlags(tag), "-o", out, "./cmd/operator")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+GOOS, "GOARCH="+GOARCH)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/operator: %w\n%s", err, stderr.String())
	}
	return nil
}

// readCerts reads a PEM CA bundle, path or the first trust store found, and checks it
// holds certificates.
func readCerts(path string) ([]byte, error) {
	candidates := trustStores
	if path != "" {
		candidates = []string{path}
	}
	for _, p := range candidates {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) && path == "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		if n, err := countCerts(data); err != nil || n == 0 {
			return nil, fmt.Errorf("CA bundle %s: %d certificates (%v)", p, n, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("no CA bundle in the build machine's trust store (%s); pass --ca-file", strings.Join(trustStores, ", "))
}

// countCerts parses every CERTIFICATE block of a PEM bundle.
func countCerts(data []byte) (int, error) {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return n, err
		}
		n++
	}
}

// Meta labels the image.
type Meta struct {
	Version, Revision string
	Created           time.Time
}

// Image layers binary (at Entrypoint) and certs (at CertsPath), with /etc/passwd and
// /etc/group naming the nonroot user and a world-writable /tmp, onto an empty base: one
// layer, no shell, nothing else. Every file carries m.Created as its mtime, so the same
// inputs give the same digest.
func Image(binary, certs []byte, m Meta) (v1.Image, error) {
	layer, err := rootfs(binary, certs, m.Created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: m.Created}, CreatedBy: "hack/image", Comment: "operator " + m.Version},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = GOOS, GOARCH, v1.Time{Time: m.Created}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Entrypoint},
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=" + CertsPath},
		Labels: map[string]string{
			LabelSource:   SourceURL,
			LabelRevision: m.Revision,
			LabelVersion:  m.Version,
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, map[string]string{
		LabelSource: SourceURL, LabelRevision: m.Revision, LabelVersion: m.Version,
	}).(v1.Image), nil
}

// rootfs is the image's one layer, as a deterministic tar.
func rootfs(binary, certs []byte, mtime time.Time) (v1.Layer, error) {
	const root, nonroot = 0, 65532
	type entry struct {
		name string
		mode int64
		uid  int
		data []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CertsPath, "/"), mode: 0o644, data: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, dir: true},
		{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, data: binary},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime, Format: tar.FormatPAX}
		if e.uid == root {
			h.Uname, h.Gname = "root", "root"
		} else {
			h.Uname, h.Gname = "nonroot", "nonroot"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Write writes the image as an OCI layout at out/oci (replacing what was there), its index
// entry named by the tag, and as a tarball out/operator-TAG.tar for `docker load` (named
// DefaultRegistry/operator:TAG). It returns the tarball's path.
func (b *Build) Write(out string) (string, error) {
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	if err := p.AppendImage(b.Image, layout.WithAnnotations(map[string]string{refName: b.Tag})); err != nil {
		return "", err
	}
	ref, err := name.NewTag(DefaultRegistry + "/" + Repository + ":" + b.Tag)
	if err != nil {
		return "", err
	}
	tarPath := filepath.Join(out, Repository+"-"+b.Tag+".tar")
	return tarPath, tarball.WriteToFile(tarPath, ref, b.Image)
}

// Push copies every tagged image of the OCI layout at dir to registry/operator:TAG, with the
// docker config's credentials. Registries on loopback are spoken to over plain HTTP.
func Push(ctx context.Context, dir, registry string, opts ...remote.Option) ([]name.Reference, error) {
	if registry == "" {
		return nil, errors.New("push: set REGISTRY (e.g. ghcr.io/openuniverse)")
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s (run make image first): %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	var pushed []name.Reference
	for _, d := range im.Manifests {
		tag := d.Annotations[refName]
		if tag == "" {
			continue
		}
		if _, err := Tag(tag); err != nil {
			return pushed, fmt.Errorf("layout %s: image %s: %w", dir, d.Digest, err)
		}
		ref, err := name.NewTag(strings.TrimSuffix(registry, "/") + "/" + Repository + ":" + tag)
		if err != nil {
			return pushed, err
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return pushed, err
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			return pushed, fmt.Errorf("push %s: %w", ref, err)
		}
		pushed = append(pushed, ref)
	}
	if len(pushed) == 0 {
		return nil, fmt.Errorf("layout %s holds no tagged image (run make image first)", dir)
	}
	return pushed, nil
}
