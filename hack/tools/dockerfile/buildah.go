package dockerfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Buildah builds the final stage of a Dockerfile with buildah, offline.
type Buildah struct {
	// Dockerfile is the file built.
	Dockerfile string
	// Builder is the name of the builder stage, and Context the directory
	// that takes its place: a build context of that name, which buildah
	// (as BuildKit) uses for the stage, so that the stage is not built
	// and its base image not pulled.
	Builder, Context string
	// BuildArgs are the NAME=VALUE of the build arguments.
	BuildArgs []string
	// Timestamp is the time of the image and of its files, in seconds
	// since the epoch (buildah's --timestamp).
	Timestamp int64
}

// Build builds with the storage under work (the vfs driver: no mounts),
// chroot isolation and no pull, into an OCI image layout, and returns its
// one image.
func (b Buildah) Build(ctx context.Context, work string) (Image, error) {
	empty, layout, tmp := filepath.Join(work, "context"), filepath.Join(work, "layout"), filepath.Join(work, "tmp")
	for _, d := range []string{empty, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return Image{}, err
		}
	}
	args := []string{
		"--storage-driver", "vfs", "--root", filepath.Join(work, "storage"), "--runroot", filepath.Join(work, "run"),
		"build", "--isolation", "chroot", "--pull=never", "--identity-label=false", "--quiet",
		"--build-context", b.Builder + "=" + b.Context,
		"--timestamp", strconv.FormatInt(b.Timestamp, 10),
		"--file", b.Dockerfile, "--tag", "oci:" + layout + ":image",
	}
	for _, a := range b.BuildArgs {
		args = append(args, "--build-arg", a)
	}
	cmd := exec.CommandContext(ctx, "buildah", append(args, empty)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Image{}, fmt.Errorf("buildah %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	images, err := ReadLayout(layout)
	if err != nil {
		return Image{}, err
	}
	if len(images) != 1 {
		return Image{}, fmt.Errorf("buildah wrote %d images, not one", len(images))
	}
	for _, img := range images {
		return img, nil
	}
	return Image{}, errors.New("unreachable")
}

// WriteBuilder writes under dir what builder b leaves: its files with their
// modes, the go build's output holding binary, so that dir can take the
// builder stage's place.
func WriteBuilder(b *Builder, dir string, binary []byte) error {
	target := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
	for p, mode := range b.Files {
		var err error
		switch {
		case mode.IsDir():
			err = os.MkdirAll(target(p), 0o755)
		case p == b.Output:
			err = writeFile(target(p), binary)
		default:
			err = fmt.Errorf("%s: neither a directory nor the go build's output", p)
		}
		if err != nil {
			return err
		}
	}
	// The modes once every file is made, past the umask.
	for p, mode := range b.Files {
		if err := os.Chmod(target(p), chmodMode(mode)); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes data to a new file at p, its directory made.
func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}

// chmodMode is mode as os.Chmod takes it: the permission and the setuid,
// setgid and sticky bits.
func chmodMode(mode fs.FileMode) fs.FileMode {
	return mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}
