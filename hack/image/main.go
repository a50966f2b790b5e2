// Command image builds the image of convoy-apiserver without a container
// engine, as ko does: the server built static for each platform, as the one
// layer of an image on scratch, the index of the platforms written as an OCI
// image layout (and pushed, given --push); two runs on one commit give the
// same digests. `make image` runs it with the Makefile's values; what the
// image holds and why it repeats: docs/operators/image-and-chart.md.
//
//	go run ./hack/image --out bin/image --ldflags "$(LDFLAGS)" --created 2026-01-02T03:04:05Z ...
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
)

// The OCI annotation keys and label names the image carries.
const (
	labelSource   = "org.opencontainers.image.source"
	labelRevision = "org.opencontainers.image.revision"
	labelVersion  = "org.opencontainers.image.version"
	labelCreated  = "org.opencontainers.image.created"
	// refName names the index in the layout's index.json (the tag).
	refName = "org.opencontainers.image.ref.name"
	// containerdName is the full name (repository:tag) that containerd's
	// import and other tools read from a layout's index.json.
	containerdName = "io.containerd.image.name"
)

// User is the numeric user and group the image runs as: not root, and
// numeric so that the kubelet can check runAsNonRoot without an /etc/passwd.
const User = "65532:65532"

// Options is what one build makes.
type Options struct {
	// Dir is the root of the Go module the package is built in.
	Dir string
	// Package is the main package to build, relative to Dir
	// (./cmd/convoy-apiserver).
	Package string
	// Binary is the file name of the binary in the image, at its root; the
	// entrypoint is /Binary.
	Binary string
	// Platforms are the platforms of the index, in its order.
	Platforms []v1.Platform
	// LDFlags are the linker flags of the version stamp; -s -w -buildid=
	// are added.
	LDFlags string
	// Source, Revision and Version are the labels
	// org.opencontainers.image.source, .revision and .version.
	Source, Revision, Version string
	// Created is the commit's time: the label
	// org.opencontainers.image.created, the images' created, and the time
	// of every file of the layer.
	Created time.Time
}

// Platforms are the platforms `make image` builds.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// labels are the labels of every image of the index, and the annotations of
// the index.
func (o Options) labels() map[string]string {
	return map[string]string{
		labelSource:   o.Source,
		labelRevision: o.Revision,
		labelVersion:  o.Version,
		labelCreated:  o.Created.UTC().Format(time.RFC3339),
	}
}

// Build compiles the binary for every platform into work (a directory) and
// returns the image index of the images.
func Build(ctx context.Context, o Options, work string) (v1.ImageIndex, error) {
	if o.Created.IsZero() {
		return nil, errors.New("no creation time: the commit's date is needed for a repeatable image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, p := range o.Platforms {
		bin := filepath.Join(work, p.OS+"-"+p.Architecture, o.Binary)
		if err := compile(ctx, o, p, bin); err != nil {
			return nil, err
		}
		img, err := platformImage(o, p, bin)
		if err != nil {
			return nil, fmt.Errorf("the image of %s: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, o.labels()).(v1.ImageIndex), nil
}

// compile builds o.Package for platform p into out: static, without paths of
// this machine, without a build ID, without the checkout's VCS state (the
// commit is in the stamp of -ldflags; a build from a copy of the sources
// without .git, as the Dockerfile's, would have none), with the lowest
// instruction set level of the architecture (an environment's GOAMD64 or
// GOARM64 would change the binary). The Dockerfile repeats these settings;
// hack/tools/dockerfile checks that it does.
func compile(ctx context.Context, o Options, p v1.Platform, out string) error {
	ldflags := strings.TrimSpace(o.LDFlags + " -s -w -buildid=")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, o.Package)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w: %s", o.Package, p, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// binaryLayer is a layer of two entries, in this order: the directory tmp/
// (mode 1777: the place of temporary files where no volume is mounted
// there) and the binary name (mode 0755), both owned by root and dated at
// mtime, so that it is the same for the same binary.
func binaryLayer(bin, name string, mtime time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime = mtime.UTC().Truncate(time.Second)
	entries := []struct {
		hdr  tar.Header
		data []byte
	}{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(data))}, data: data},
	}
	for _, e := range entries {
		e.hdr.ModTime, e.hdr.Format = mtime, tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	content := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(content)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// platformImage is the image of platform p: an empty base, the layer of the
// binary bin, the user, the entrypoint and the labels.
func platformImage(o Options, p v1.Platform, bin string) (v1.Image, error) {
	layer, err := binaryLayer(bin, o.Binary, o.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "hack/image: /" + o.Binary + ", built " + p.String(), Comment: o.Version},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Config.User = User
	cf.Config.Entrypoint = []string{"/" + o.Binary}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = o.labels()
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes idx as the one entry of a new OCI image layout at dir
// (what was there is removed), named tag (org.opencontainers.image.ref.name)
// and repository:tag (io.containerd.image.name).
func WriteLayout(dir string, idx v1.ImageIndex, repository, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	anns := map[string]string{refName: tag}
	if repository != "" {
		anns[containerdName] = repository + ":" + tag
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(anns)); err != nil {
		return fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	return nil
}

// Push pushes idx, its images and their blobs to ref (REGISTRY/REPOSITORY:TAG),
// with the credentials of the Docker config (~/.docker/config.json,
// DOCKER_CONFIG) and its credential helpers. A registry on a loopback address
// is spoken to over plain http.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("the reference %q: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	return nil
}

// run is main with its arguments and output.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	o := Options{Platforms: Platforms}
	var out, repository, tag, created, pushRef, platforms string
	fs.StringVar(&o.Dir, "dir", ".", "root of the Go module")
	fs.StringVar(&o.Package, "package", "./cmd/convoy-apiserver", "main package to build")
	fs.StringVar(&o.Binary, "binary", "convoy-apiserver", "file name of the binary in the image (the entrypoint is /NAME)")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "platforms of the index, comma-separated")
	fs.StringVar(&o.LDFlags, "ldflags", "", "linker flags of the version stamp (-s -w -buildid= are added)")
	fs.StringVar(&o.Source, "source", "", "label org.opencontainers.image.source")
	fs.StringVar(&o.Revision, "revision", "", "label org.opencontainers.image.revision (the commit)")
	fs.StringVar(&o.Version, "version", "", "label org.opencontainers.image.version")
	fs.StringVar(&created, "created", "", "the commit's date, RFC 3339: label org.opencontainers.image.created and every time of the image")
	fs.StringVar(&out, "out", "bin/image", "directory of the OCI image layout (replaced)")
	fs.StringVar(&repository, "repository", "", "repository of the image, written with the tag in the layout (io.containerd.image.name)")
	fs.StringVar(&tag, "tag", "", "tag of the index in the layout (org.opencontainers.image.ref.name)")
	fs.StringVar(&pushRef, "push", "", "push the index to this reference too (REGISTRY/REPOSITORY:TAG)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if tag == "" {
		return errors.New("--tag is required")
	}
	if _, err := name.NewTag("example.com/image:" + tag); err != nil {
		return fmt.Errorf("--tag %q is not a valid tag: %w", tag, err)
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return fmt.Errorf("--created %q (the commit's date, RFC 3339): %w", created, err)
	}
	o.Created = t
	o.Platforms = nil
	for _, s := range strings.Split(platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--platforms: %w", err)
		}
		o.Platforms = append(o.Platforms, *p)
	}

	work, err := os.MkdirTemp("", "convoy-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	idx, err := Build(ctx, o, work)
	if err != nil {
		return err
	}
	if err := WriteLayout(out, idx, repository, tag); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s:%s@%s\n", out, repository, tag, digest)
	if pushRef != "" {
		if err := Push(ctx, idx, pushRef); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", pushRef, digest)
	}
	return nil
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
