package dockerfile

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ReadLayout reads the images of the OCI image layout at dir, by platform
// (OS/ARCH): those of its index.json, an image index's images included.
func ReadLayout(dir string) (map[string]Image, error) {
	var top ocispec.Index
	if err := readJSON(dir, "", &top); err != nil {
		return nil, err
	}
	images := map[string]Image{}
	var walk func(descs []ocispec.Descriptor) error
	walk = func(descs []ocispec.Descriptor) error {
		for _, d := range descs {
			switch d.MediaType {
			case ocispec.MediaTypeImageIndex:
				var idx ocispec.Index
				if err := readJSON(dir, d.Digest, &idx); err != nil {
					return err
				}
				if err := walk(idx.Manifests); err != nil {
					return err
				}
			case ocispec.MediaTypeImageManifest:
				platform, img, err := readImage(dir, d.Digest)
				if err != nil {
					return fmt.Errorf("the image %s: %w", d.Digest, err)
				}
				images[platform] = img
			default:
				return fmt.Errorf("%s: the media type %s is not read here", d.Digest, d.MediaType)
			}
		}
		return nil
	}
	if err := walk(top.Manifests); err != nil {
		return nil, fmt.Errorf("the layout %s: %w", dir, err)
	}
	return images, nil
}

// readImage reads the image of the manifest m: its platform and Image.
func readImage(dir string, m digest.Digest) (string, Image, error) {
	var manifest ocispec.Manifest
	if err := readJSON(dir, m, &manifest); err != nil {
		return "", Image{}, err
	}
	var cf ocispec.Image
	if err := readJSON(dir, manifest.Config.Digest, &cf); err != nil {
		return "", Image{}, err
	}
	img := Image{
		User:       cf.Config.User,
		Entrypoint: cf.Config.Entrypoint,
		Cmd:        cf.Config.Cmd,
		WorkingDir: cf.Config.WorkingDir,
		Labels:     cf.Config.Labels,
		Env:        cf.Config.Env,
	}
	if img.Labels == nil {
		img.Labels = map[string]string{}
	}
	if cf.Created != nil {
		img.Created = *cf.Created
	}
	for _, l := range manifest.Layers {
		files, err := readLayer(dir, l)
		if err != nil {
			return "", Image{}, fmt.Errorf("the layer %s: %w", l.Digest, err)
		}
		img.Layers = append(img.Layers, files)
	}
	return cf.OS + "/" + cf.Architecture, img, nil
}

// readLayer reads the entries of one layer.
func readLayer(dir string, l ocispec.Descriptor) ([]File, error) {
	f, err := os.Open(blobPath(dir, l.Digest))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	switch l.MediaType {
	case ocispec.MediaTypeImageLayerGzip, "application/vnd.docker.image.rootfs.diff.tar.gzip":
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	case ocispec.MediaTypeImageLayer:
	default:
		return nil, fmt.Errorf("the media type %s is not read here", l.MediaType)
	}
	var files []File
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		file := File{
			Name:    strings.Trim(strings.TrimPrefix(h.Name, "./"), "/"),
			Mode:    h.FileInfo().Mode(),
			UID:     h.Uid,
			GID:     h.Gid,
			ModTime: h.ModTime,
		}
		if h.Typeflag == tar.TypeReg {
			sum := sha256.New()
			if _, err := io.Copy(sum, tr); err != nil {
				return nil, err
			}
			file.Digest = digest.NewDigest(digest.SHA256, sum).String()
		}
		files = append(files, file)
	}
}

// readJSON decodes the blob d of the layout at dir into v; an empty d is
// the layout's index.json.
func readJSON(dir string, d digest.Digest, v any) error {
	p := filepath.Join(dir, "index.json")
	if d != "" {
		p = blobPath(dir, d)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// blobPath is where the layout at dir keeps the blob d.
func blobPath(dir string, d digest.Digest) string {
	return filepath.Join(dir, "blobs", d.Algorithm().String(), d.Encoded())
}
