// Command image builds the operator's OCI image without a container engine, and pushes it:
//
//	go run ./hack/image build --version v0.1.0 --revision SHA --out .cache/image
//	go run ./hack/image push --out .cache/image --registry ghcr.io/openuniverse
//
// build compiles a static binary (CGO_ENABLED=0, -trimpath) for each of Platforms
// (linux/amd64, linux/arm64) stamped with the version, layers each onto an empty base with
// go-containerregistry together with a CA bundle (the Mozilla roots of
// golang.org/x/crypto/x509roots/fallback at the version go.mod pins, unless --ca-file) and a
// passwd entry for the nonroot user (65532), and writes one OCI image index of them as an
// OCI layout (OUT/oci), the same layout as one tar (OUT/operator-TAG.oci.tar, for
// `kind load image-archive`, `ctr images import`, skopeo) and, per platform, a tarball for
// `docker load` (OUT/operator-TAG-linux-ARCH.docker.tar). Every input comes from the commit
// (the source, go.mod's pins, the commit time as every timestamp), so the same commit and Go
// toolchain give the same index digest. The tag is the version, a semantic version, never
// "latest". push copies the index of the layout to REGISTRY/operator:TAG with the
// credentials of the docker config.
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
	"golang.org/x/crypto/x509roots/fallback/bundle"
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
)

// Platforms are the platforms of the image index, in its order.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// OCI annotation and label keys.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	refName       = "org.opencontainers.image.ref.name"
	// containerdName is the full image name containerd (kind load image-archive, ctr
	// images import) names an imported image by.
	containerdName = "io.containerd.image.name"
)

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
		fs.StringVar(&o.CAFile, "ca-file", "", "CA bundle (PEM) to include; empty for the Mozilla roots go.mod pins (golang.org/x/crypto/x509roots/fallback)")
		created := fs.Int64("created", 0, "build time as Unix seconds (the commit time, for reproducible builds); 0 for $SOURCE_DATE_EPOCH or the epoch")
		_ = fs.Parse(os.Args[2:])
		o.Created = createdAt(*created)
		var b *Build
		if b, err = BuildImage(ctx, o); err == nil {
			var paths []string
			if paths, err = b.Write(*out); err == nil {
				digest, _ := b.Index.Digest()
				fmt.Printf("built %s:%s %s (%s)\n  %s\n", Repository, b.Tag, digest, platformList(), strings.Join(append([]string{filepath.Join(*out, "oci")}, paths...), "\n  "))
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
	CAFile    string    // CA bundle; empty for the pinned Mozilla roots (mozillaRoots)
	Created   time.Time // build time and every file's mtime
}

// Build is a built image index: one image per platform of Platforms.
type Build struct {
	Index  v1.ImageIndex
	Images []v1.Image // in the order of Platforms
	Tag    string
}

func platformList() string {
	var out []string
	for _, p := range Platforms {
		out = append(out, p.OS+"/"+p.Architecture)
	}
	return strings.Join(out, ", ")
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

// BuildImage compiles the operator for every platform and layers each binary into an
// image of the index.
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
	m := Meta{Version: tag, Revision: o.Revision, Created: o.Created}
	var imgs []v1.Image
	for _, p := range Platforms {
		bin := filepath.Join(dir, "operator-"+p.OS+"-"+p.Architecture)
		if err := compile(ctx, o.ModuleDir, tag, p, bin); err != nil {
			return nil, err
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		img, err := Image(binary, certs, m, p)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs, m)
	if err != nil {
		return nil, err
	}
	return &Build{Index: idx, Images: imgs, Tag: tag}, nil
}

// Index is the OCI image index of imgs (one per platform of Platforms, in that order),
// annotated as the images are.
func Index(imgs []v1.Image, m Meta) (v1.ImageIndex, error) {
	if len(imgs) != len(Platforms) {
		return nil, fmt.Errorf("index: %d images for %d platforms", len(imgs), len(Platforms))
	}
	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		p := Platforms[i]
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &p}}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, map[string]string{
		LabelSource: SourceURL, LabelRevision: m.Revision, LabelVersion: m.Version,
	}).(v1.ImageIndex), nil
}

// BuildTags are the build tags of the binary (the Makefile's GOTAGS): without them
// kustomize's Go-plugin loader links package plugin, so the linker exports every symbol
// and keeps every exported method, and the process starts 50 MiB larger; the git path
// refuses kustomize plugins anyway. The Dockerfile and e2e's build pass the same.
const BuildTags = "kustomize_disable_go_plugin_support"

// LDFlags are the linker flags of the binary: no symbol table or DWARF, the version stamped
// into main.version. The Dockerfile passes the same.
func LDFlags(tag string) string { return "-s -w -X main.version=" + tag }

// compile builds a static binary of ./cmd/operator for p. The build cache is go's own, so
// a second build of the same commit only links.
func compile(ctx context.Context, moduleDir, tag string, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", BuildTags, "-ldflags", LDFlags(tag), "-o", out, "./cmd/operator")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/operator for %s/%s: %w\n%s", p.OS, p.Architecture, err, stderr.String())
	}
	return nil
}

// readCerts reads a PEM CA bundle at path, or, with no path, returns mozillaRoots; either
// must hold certificates.
func readCerts(path string) ([]byte, error) {
	data, p := mozillaRoots(), "golang.org/x/crypto/x509roots/fallback/bundle"
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		p = path
	}
	if n, err := countCerts(data); err != nil || n == 0 {
		return nil, fmt.Errorf("CA bundle %s: %d certificates (%v)", p, n, err)
	}
	return data, nil
}

// mozillaRoots is the NSS (Mozilla) root store of golang.org/x/crypto/x509roots/fallback at
// the version go.mod pins, as PEM: the same bytes from the same commit on any machine. The
// roots it constrains (distrusted after a date, which a PEM file cannot say) are left out.
func mozillaRoots() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
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

// Image is the image of platform p: it layers binary (at Entrypoint) and certs (at CertsPath), with /etc/passwd and
// /etc/group naming the nonroot user and a world-writable /tmp, onto an empty base: one
// layer, no shell, nothing else. Every file carries m.Created as its mtime, so the same
// inputs give the same digest.
func Image(binary, certs []byte, m Meta, p v1.Platform) (v1.Image, error) {
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
	cf.OS, cf.Architecture, cf.Variant, cf.Created = p.OS, p.Architecture, p.Variant, v1.Time{Time: m.Created}
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

// Write writes the index as an OCI layout at out/oci (replacing what was there), its entry
// named by the tag (and, for containerd, by DefaultRegistry/operator:TAG); the same layout
// as one tar, out/operator-TAG.oci.tar; and each platform's image as a tarball for
// `docker load`, out/operator-TAG-OS-ARCH.docker.tar (named DefaultRegistry/operator:TAG).
// It returns the tars' paths.
func (b *Build) Write(out string) ([]string, error) {
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	full := DefaultRegistry + "/" + Repository + ":" + b.Tag
	if err := p.AppendIndex(b.Index, layout.WithAnnotations(map[string]string{refName: b.Tag, containerdName: full})); err != nil {
		return nil, err
	}
	archive := filepath.Join(out, Repository+"-"+b.Tag+".oci.tar")
	if err := tarDir(dir, archive, b.created()); err != nil {
		return nil, err
	}
	paths := []string{archive}
	ref, err := name.NewTag(full)
	if err != nil {
		return nil, err
	}
	for i, img := range b.Images {
		pl := Platforms[i]
		path := filepath.Join(out, Repository+"-"+b.Tag+"-"+pl.OS+"-"+pl.Architecture+".docker.tar")
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// created is the build time the images carry.
func (b *Build) created() time.Time {
	if len(b.Images) > 0 {
		if cf, err := b.Images[0].ConfigFile(); err == nil {
			return cf.Created.Time
		}
	}
	return time.Unix(0, 0).UTC()
}

// tarDir writes the files under dir into a tar at path, in lexical order, every entry
// with mtime and owner 0: the same layout gives the same bytes.
func tarDir(dir, path string, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Push copies every tagged image index (or image) of the OCI layout at dir to
// registry/operator:TAG, with the docker config's credentials. Registries on loopback are
// spoken to over plain HTTP.
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
		if d.MediaType.IsIndex() {
			ii, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return pushed, err
			}
			if err := remote.WriteIndex(ref, ii, opts...); err != nil {
				return pushed, fmt.Errorf("push %s: %w", ref, err)
			}
		} else {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return pushed, err
			}
			if err := remote.Write(ref, img, opts...); err != nil {
				return pushed, fmt.Errorf("push %s: %w", ref, err)
			}
		}
		pushed = append(pushed, ref)
	}
	if len(pushed) == 0 {
		return nil, fmt.Errorf("layout %s holds no tagged image (run make image first)", dir)
	}
	return pushed, nil
}
