package dockerfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireBuildah skips t where Debian's buildah is not installed or this
// is not root (buildah's storage and chroot need it), but fails t under
// CI=true, where hack/setup.sh installs it and CI runs as root.
func requireBuildah(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("buildah"); err != nil {
		why = "no buildah on PATH: install Debian's buildah (make setup, as root)"
	} else if os.Geteuid() != 0 {
		why = "buildah needs root here: run the test as root"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		require.FailNow(t, why)
	}
	t.Skip(why)
}

// TestDockerfileWithBuildah builds the Dockerfile's final stage with
// buildah, offline, and checks that it is make image's image for this
// machine's platform: the same config (user, entrypoint, no command,
// working directory, labels, time) and the one layer's files with the
// same names, modes, owners, times and content. The builder stage stands
// in with a build context of its name: a directory holding what its
// commands leave (ReadBuilder), the go build's output being the stand-in
// binary that hack/image's fake go wrote into make image's layer.
func TestDockerfileWithBuildah(t *testing.T) {
	requireBuildah(t)
	o := mustObserve(t)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	want, ok := o.made.Images[platform]
	require.True(t, ok, "make image builds no %s", platform)

	_, st, err := o.df.BuildStages()
	require.NoError(t, err)
	b, err := ReadBuilder(st, platform, o.args)
	require.NoError(t, err)
	dir := t.TempDir()
	stage := filepath.Join(dir, "builder")
	require.NoError(t, WriteBuilder(b, stage, standIn))

	epoch, err := strconv.ParseInt(o.args["SOURCE_DATE_EPOCH"], 10, 64)
	require.NoError(t, err)
	got, err := Buildah{
		Dockerfile: filepath.Join(root, "Dockerfile"),
		Builder:    st.Name,
		Context:    stage,
		BuildArgs:  o.buildArgs,
		Timestamp:  epoch,
	}.Build(t.Context(), filepath.Join(dir, "buildah"))
	require.NoError(t, err)

	assert.Empty(t, Diff(want, got))
	assert.True(t, want.Created.Equal(got.Created), "created: make image's %s, buildah's %s", want.Created, got.Created)
	// The one difference of the config: buildah, as Docker, sets PATH in
	// an image FROM scratch; there is no shell in it to read it.
	assert.Empty(t, want.Env)
	for _, kv := range got.Env {
		assert.True(t, strings.HasPrefix(kv, "PATH="), kv)
	}
}
