package kinds

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ImageRef is an image reference [registry/]repository[:tag][@digest], each part as written:
// go-containerregistry's name package validates it, but its defaults (index.docker.io,
// library/, latest) are never filled in, so String gives back exactly the text parsed and a
// builder's output keeps the CR's spelling. Canonical is the defaulted form, for comparing.
type ImageRef struct {
	// Registry is the host[:port] as written; "" when the reference names none (Docker Hub).
	Registry string
	// Repository is the path after the registry, as written (nginx, not library/nginx).
	Repository string
	// Tag is "" when the reference has none (no implicit latest).
	Tag string
	// Digest is algorithm:hex without the '@'; "" when the reference is not pinned.
	Digest string
}

// ParseImageRef parses ref. A reference that name rejects (empty, upper case in the
// repository, a tag or digest that is not one, spaces, an empty path element) is an error naming ref and the part.
// The split follows name's own rules: a tag is what follows the last ':' after the last '/'
// (so a registry port is never a tag), and the first path element is a registry only when it
// is localhost or holds a '.' or ':'.
func ParseImageRef(ref string) (ImageRef, error) {
	if ref == "" {
		return ImageRef{}, errors.New("image reference is empty")
	}
	if err := validate(ref); err != nil {
		return ImageRef{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	var r ImageRef
	rest, digest, _ := strings.Cut(ref, "@")
	r.Digest = digest
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i+1:], "/") {
		rest, r.Tag = rest[:i], rest[i+1:]
	}
	if host, path, ok := strings.Cut(rest, "/"); ok && (host == "localhost" || strings.ContainsAny(host, ".:")) {
		r.Registry, rest = host, path
	}
	r.Repository = rest
	if slices.Contains(strings.Split(rest, "/"), "") {
		// name lets an empty path element through (https://host/x parses as registry "https:")
		return ImageRef{}, fmt.Errorf("image reference %q: repository %q has an empty path element", ref, rest)
	}
	return r, nil
}

// validate checks ref with name (WeakValidation: registry and tag may be implicit).
func validate(ref string) error {
	if strings.Contains(ref, "@") {
		_, err := name.NewDigest(ref, name.WeakValidation) // also checks a tag before the '@'
		return err
	}
	_, err := name.NewTag(ref, name.WeakValidation)
	return err
}

// String is the reference as it was written.
func (r ImageRef) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Name is registry/repository as written, without tag or digest.
func (r ImageRef) Name() string {
	if r.Registry == "" {
		return r.Repository
	}
	return r.Registry + "/" + r.Repository
}

// WithTag is r at tag: the digest is dropped, since a new tag names other content.
func (r ImageRef) WithTag(tag string) ImageRef {
	r.Tag, r.Digest = tag, ""
	return r
}

// Canonical is the full repository name as name spells it: Docker Hub's implicit parts made
// explicit (nginx and docker.io/nginx are index.docker.io/library/nginx), the registry in
// lower case (a host is case-insensitive), tag and digest dropped. Two spellings of one
// repository compare equal; the same path on two registries never does.
func (r ImageRef) Canonical() string {
	n := r.Repository
	if r.Registry != "" {
		n = strings.ToLower(r.Registry) + "/" + n
	}
	repo, err := name.NewRepository(n, name.WeakValidation)
	if err != nil {
		return n // unreachable for a parsed reference: its parts passed the same checks
	}
	return repo.Name()
}

// SpecParts is the repository and tag an ImageSpec holds for r, so that Repository + ":" +
// Tag (Repository alone without a tag) is r.String() again: a digest rides with the tag, or
// with the repository when there is no tag (repo@sha256:… has no version to label).
func (r ImageRef) SpecParts() (repository, tag string) {
	repository, tag = r.Name(), r.Tag
	if r.Digest == "" {
		return repository, tag
	}
	if tag == "" {
		return repository + "@" + r.Digest, ""
	}
	return repository, tag + "@" + r.Digest
}

// ImageSpecParts is SpecParts of the reference image, for a caller that must fill an
// ImageSpec whatever it is given: a reference that does not parse is the repository whole,
// with no tag guessed from it, so the two parts still join back to image.
func ImageSpecParts(image string) (repository, tag string) {
	ref, err := ParseImageRef(image)
	if err != nil {
		return image, ""
	}
	return ref.SpecParts()
}
