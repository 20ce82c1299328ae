package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations of the layout's index entry: the tag (what skopeo's
// oci:DIR:TAG and crane's layout commands select by) and the full name
// (what containerd's import names the image).
const (
	AnnotationRefName   = "org.opencontainers.image.ref.name"
	AnnotationImageName = "io.containerd.image.name"
)

// WriteLayout writes img as an OCI image layout in dir, its index naming
// tag and the image's platform. An existing layout in dir is replaced; a
// dir holding anything else is refused.
func WriteLayout(dir string, img v1.Image, tag name.Tag) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("image: layout %s: %w", dir, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("image: %s is not empty and not an OCI layout: refusing to replace it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("image: replacing layout %s: %w", dir, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	err = p.AppendImage(img,
		layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}),
		layout.WithAnnotations(map[string]string{
			AnnotationRefName:   tag.TagStr(),
			AnnotationImageName: tag.Name(),
		}))
	if err != nil {
		return fmt.Errorf("image: layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img as a `docker save` tarball tagged tag (what
// `docker load`, `crane push FILE REF` and skopeo's docker-archive:
// read). The file appears whole or not at all.
func WriteTarball(path string, img v1.Image, tag name.Tag) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := tarball.WriteToFile(tmp.Name(), tag, img); err != nil {
		return fmt.Errorf("image: tarball %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	return nil
}

// Push writes img to the registry as ref (a tag, or a digest that must be
// img's) with the credentials docker and crane use (authn.DefaultKeychain:
// ~/.docker/config.json, DOCKER_CONFIG, credential helpers) and returns
// the digest reference pushed. opts come after the defaults and so
// override them.
func Push(ctx context.Context, ref string, img v1.Image, opts ...remote.Option) (name.Digest, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: push: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("image: push: %w", err)
	}
	all := append([]remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("hactl-image"),
	}, opts...)
	if err := remote.Write(r, img, all...); err != nil {
		return name.Digest{}, fmt.Errorf("image: push %s: %w", ref, err)
	}
	return r.Context().Digest(d.String()), nil
}
