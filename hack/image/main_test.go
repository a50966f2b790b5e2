package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
)

// created is the commit date of the test builds.
var created = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// testOptions are the options of a test build of pkg (relative to the
// repository root) named binary.
func testOptions(pkg, binary string) Options {
	return Options{
		Dir:       "../..",
		Package:   pkg,
		Binary:    binary,
		Platforms: Platforms,
		LDFlags:   "-X github.com/kumodo/convoy-apiserver/pkg/version.gitVersion=v1.2.3 -X github.com/kumodo/convoy-apiserver/pkg/version.gitCommit=abc1234 -X github.com/kumodo/convoy-apiserver/pkg/version.buildDate=2026-03-04T05:06:07Z",
		Source:    "https://github.com/kumodo/convoy-apiserver",
		Revision:  "abc1234abc1234abc1234abc1234abc1234abc12",
		Version:   "v1.2.3",
		Created:   created,
	}
}

// standinOptions build the small stand-in binary instead of the server,
// stamped as the server is (its own variable: pkg/version would make the
// stand-in build much of the server's dependencies).
func standinOptions() Options {
	o := testOptions("./hack/image/testdata/standin", "standin")
	o.LDFlags = "-X main.buildDate=2026-03-04T05:06:07Z"
	return o
}

// buildLayout builds o into a new layout and returns its directory.
func buildLayout(t *testing.T, o Options, tag string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	idx, err := Build(testContext(t), o, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, WriteLayout(dir, idx, "ghcr.io/kumodo/convoy-apiserver", tag))
	return dir
}

// readLayout reads back the one index of the layout at dir, with its
// descriptor in index.json.
func readLayout(t *testing.T, dir string) (v1.Descriptor, v1.ImageIndex) {
	t.Helper()
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	m, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1, "one entry in index.json")
	desc := m.Manifests[0]
	require.Equal(t, types.OCIImageIndex, desc.MediaType)
	idx, err := top.ImageIndex(desc.Digest)
	require.NoError(t, err)
	return desc, idx
}

// platformImages returns the images of idx by platform (os/arch), checking
// that they are exactly those of Platforms.
func platformImages(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	got := map[string]v1.Image{}
	var platforms []string
	for _, d := range m.Manifests {
		require.NotNil(t, d.Platform)
		assert.Equal(t, types.OCIManifestSchema1, d.MediaType)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		got[d.Platform.String()] = img
		platforms = append(platforms, d.Platform.String())
	}
	assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)
	return got
}

// layerFiles returns the entries of the one layer of img, in order, and the
// content of each regular file.
func layerFiles(t *testing.T, img v1.Image) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "one layer on an empty base")
	mt, err := layers[0].MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCILayer, mt)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	var hdrs []*tar.Header
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, files
		}
		require.NoError(t, err)
		hdrs = append(hdrs, h)
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			files[h.Name] = data
		}
	}
}

// checkImage checks what every image of the index has, whatever it runs.
func checkImage(t *testing.T, o Options, platform string, img v1.Image) []byte {
	t.Helper()
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, platform, cf.Platform().String())
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/" + o.Binary}, cf.Config.Entrypoint)
	assert.Empty(t, cf.Config.Cmd)
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.source":   o.Source,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.created":  "2026-03-04T05:06:07Z",
	}, cf.Config.Labels)
	assert.True(t, cf.Created.Time.Equal(created), "created %s", cf.Created.Time)
	for _, h := range cf.History {
		assert.True(t, h.Created.Time.Equal(created), "history created %s", h.Created.Time)
	}
	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, mt)

	hdrs, files := layerFiles(t, img)
	require.Len(t, hdrs, 2)
	assert.Equal(t, "tmp/", hdrs[0].Name)
	assert.Equal(t, byte(tar.TypeDir), hdrs[0].Typeflag)
	assert.Equal(t, int64(0o1777), hdrs[0].Mode)
	assert.Equal(t, o.Binary, hdrs[1].Name)
	assert.Equal(t, int64(0o755), hdrs[1].Mode)
	for _, h := range hdrs {
		assert.True(t, h.ModTime.Equal(created), "%s dated %s", h.Name, h.ModTime)
		assert.Zero(t, h.Uid, h.Name)
		assert.Zero(t, h.Gid, h.Name)
	}
	return files[o.Binary]
}

// extract writes data to an executable file and returns its path.
func extract(t *testing.T, data []byte, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o755))
	return path
}

// checkStatic checks that the ELF binary at path is for machine and loads
// no library (no interpreter, no needed library).
func checkStatic(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, machine, f.Machine)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libs)
}

// testContext is a context that ends a minute before the test's deadline,
// so that a build still running then is stopped, not left behind.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// TestImageServerPackages checks the server as the image builds it,
// without building it: for each platform of the image, with CGO_ENABLED=0,
// its packages resolve (a package that needs cgo, or has no file for the
// platform, is an error here) and hold the CA roots a scratch image needs
// and the version stamp's package. How the image builds a binary (static,
// -trimpath, no build ID, the stamp, the layer) is hack/image's own code,
// checked on the stand-in for both platforms by TestImageRepeatable; the
// server's own build is make image's, and test/e2e runs the server. A
// build of the server here took 529 s of a cold run
// (docs/contributors/performance.md).
func TestImageServerPackages(t *testing.T) {
	for _, p := range Platforms {
		t.Run(p.String(), func(t *testing.T) {
			cmd := exec.CommandContext(testContext(t), "go", "list", "-deps",
				"-f", "{{.ImportPath}}{{with .Error}} ERROR {{.}}{{end}}{{with .DepsErrors}} ERROR {{.}}{{end}}", "./cmd/convoy-apiserver")
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=")
			out, err := cmd.Output()
			require.NoError(t, err, "go list: %s", out)
			pkgs := strings.Split(strings.TrimSpace(string(out)), "\n")
			for _, line := range pkgs {
				assert.NotContains(t, line, " ERROR ")
			}
			assert.Contains(t, pkgs, "golang.org/x/crypto/x509roots/fallback", "the binary embeds the CA roots")
			assert.Contains(t, pkgs, "github.com/kumodo/convoy-apiserver/pkg/version", "the package -ldflags stamps")
			assert.Contains(t, pkgs, "github.com/kumodo/convoy-apiserver/cmd/convoy-apiserver")
		})
	}
}

// TestImageRepeatable builds the stand-in twice: the same index, byte for
// byte, and the same layout files.
func TestImageRepeatable(t *testing.T) {
	o := standinOptions()
	a, b := buildLayout(t, o, "v1.2.3"), buildLayout(t, o, "v1.2.3")
	descA, idxA := readLayout(t, a)
	descB, idxB := readLayout(t, b)
	assert.Equal(t, descA.Digest, descB.Digest)
	assert.Equal(t, "v1.2.3", descA.Annotations["org.opencontainers.image.ref.name"])
	assert.Equal(t, "ghcr.io/kumodo/convoy-apiserver:v1.2.3", descA.Annotations["io.containerd.image.name"])
	im, err := idxA.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, o.labels(), im.Annotations)
	imagesA, imagesB := platformImages(t, idxA), platformImages(t, idxB)
	for platform, img := range imagesA {
		da, err := img.Digest()
		require.NoError(t, err)
		db, err := imagesB[platform].Digest()
		require.NoError(t, err)
		assert.Equal(t, da, db, platform)
		bin := extract(t, checkImage(t, o, platform, img), "standin")
		checkStatic(t, bin, map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform])
		checkBuild(t, bin)
	}
	for _, f := range []string{"index.json", "oci-layout"} {
		ba, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		bb, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		assert.Equal(t, string(ba), string(bb), f)
	}

	// Another commit date is another image.
	later := o
	later.Created = created.Add(time.Hour)
	descC, _ := readLayout(t, buildLayout(t, later, "v1.2.3"))
	assert.NotEqual(t, descA.Digest, descC.Digest)

	// The stand-in runs from its layer.
	bin := extract(t, checkImage(t, o, runtime.GOOS+"/"+runtime.GOARCH, imagesA[runtime.GOOS+"/"+runtime.GOARCH]), "standin")
	out, err := exec.Command(bin, "x").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "standin [x] 2026-03-04T05:06:07Z\n", string(out))
}

// checkBuild checks how the binary at path was built: without cgo, with
// -trimpath, without the checkout's VCS state, no build ID, and the -ldflags
// stamp.
func checkBuild(t *testing.T, path string) {
	t.Helper()
	info, err := buildinfo.ReadFile(path)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	assert.Equal(t, "0", settings["CGO_ENABLED"])
	// With -trimpath, go build records no -ldflags: look for their effects.
	assert.Equal(t, "true", settings["-trimpath"])
	for key := range settings {
		assert.NotContains(t, key, "vcs.", "no VCS state of the checkout")
	}
	id, err := exec.CommandContext(testContext(t), "go", "tool", "buildid", path).CombinedOutput()
	require.NoError(t, err, string(id))
	assert.Empty(t, strings.TrimSpace(string(id)), "no build ID")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(data, []byte("2026-03-04T05:06:07Z")), "the stamp's build date is in the binary")
}

// TestImagePush pushes the index of the stand-in to a registry on 127.0.0.1
// (go-containerregistry's pkg/registry, as make run's) and reads it back.
func TestImagePush(t *testing.T) {
	reg, err := ociregistry.Start(ociregistry.Options{})
	require.NoError(t, err)
	defer reg.Close()

	o := standinOptions()
	idx, err := Build(testContext(t), o, t.TempDir())
	require.NoError(t, err)
	want, err := idx.Digest()
	require.NoError(t, err)
	ref := reg.Host() + "/kumodo/convoy-apiserver:v1.2.3"
	require.NoError(t, Push(context.Background(), idx, ref))

	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	got, err := remote.Index(r)
	require.NoError(t, err)
	digest, err := got.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, digest)
	for platform, img := range platformImages(t, got) {
		checkImage(t, o, platform, img)
	}
}

// TestImageRun runs the command as make image does, with a push.
func TestImageRun(t *testing.T) {
	reg, err := ociregistry.Start(ociregistry.Options{})
	require.NoError(t, err)
	defer reg.Close()
	out := filepath.Join(t.TempDir(), "image")
	ref := reg.Host() + "/convoy-apiserver:dev"
	var stdout bytes.Buffer
	require.NoError(t, run(testContext(t), []string{
		"--dir", "../..", "--package", "./hack/image/testdata/standin", "--binary", "standin",
		"--created", "2026-03-04T05:06:07Z", "--version", "v0.0.0-dev+abc", "--revision", "abc",
		"--source", "https://github.com/kumodo/convoy-apiserver",
		"--out", out, "--repository", "ghcr.io/kumodo/convoy-apiserver", "--tag", "v0.0.0-dev-abc",
		"--push", ref,
	}, &stdout))
	desc, idx := readLayout(t, out)
	assert.Equal(t, "v0.0.0-dev-abc", desc.Annotations["org.opencontainers.image.ref.name"])
	assert.Contains(t, stdout.String(), "ghcr.io/kumodo/convoy-apiserver:v0.0.0-dev-abc@"+desc.Digest.String())
	assert.Contains(t, stdout.String(), "pushed "+ref+"@"+desc.Digest.String())
	platformImages(t, idx)
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	pushed, err := remote.Head(r)
	require.NoError(t, err)
	assert.Equal(t, desc.Digest, pushed.Digest)
}

// TestImageRunRefuses checks the arguments run refuses before building.
func TestImageRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no tag", []string{"--created", "2026-03-04T05:06:07Z"}, "--tag is required"},
		{"a plus in the tag", []string{"--created", "2026-03-04T05:06:07Z", "--tag", "v0.0.0-dev+abc"}, "not a valid tag"},
		{"no date", []string{"--tag", "v1"}, "--created"},
		{"unknown date", []string{"--tag", "v1", "--created", "unknown"}, "--created"},
		{"a bad platform", []string{"--tag", "v1", "--created", "2026-03-04T05:06:07Z", "--platforms", "linux/amd64/v1/x"}, "--platforms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, run(context.Background(), tc.args, io.Discard), tc.want)
		})
	}
}
