package dockerfile

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDockerfileAsMakeImage holds the Dockerfile, given the build arguments
// of make print-docker-build-args, to what make image does for each of its
// platforms: the builder stage's go build has hack/image's arguments and
// variables, and the final stage makes an image of the same config and
// files (names, types, modes, owners) as make image's.
func TestDockerfileAsMakeImage(t *testing.T) {
	o := mustObserve(t)
	assert.Empty(t, o.df.Warnings, "BuildKit's parser and linter")
	require.Len(t, o.made.Images, 2, "make image's platforms")
	for platform := range o.made.Images {
		t.Run(platform, func(t *testing.T) {
			assert.Empty(t, Compare(o.df, platform, o.args, o.made))
		})
	}
}

// TestDockerfileDriftIsFound changes the Dockerfile as a drift would, and
// checks that Compare says so.
func TestDockerfileDriftIsFound(t *testing.T) {
	o := mustObserve(t)
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	text := string(data)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"a flag of go build", "go build -trimpath ", "go build ", "-trimpath"},
		{"a linker flag", " -s -w -buildid=", " -s -buildid=", "-w"},
		{"the version stamp", "version.gitCommit=$GIT_COMMIT", "version.gitCommit=$VERSION", "gitCommit"},
		{"the instruction set", "GOAMD64=v1", "GOAMD64=v3", "GOAMD64"},
		{"cgo", "CGO_ENABLED=0 ", "", "CGO_ENABLED"},
		{"the target platform", "GOARCH=$TARGETARCH", "GOARCH=amd64", "GOARCH"},
		{"a cache outside a cache mount", "GOCACHE=/cache/build", "GOCACHE=/root/.cache/go-build", "GOCACHE"},
		{"the mode of tmp", "mkdir -p -m 1777", "mkdir -p -m 0777", "tmp: mode"},
		{"the mode of the binary", "chmod 0755", "chmod 0700", "convoy-apiserver: mode"},
		{"a base image", "FROM scratch", "FROM busybox", "not scratch"},
		{"a second layer", "COPY --from=build /out/ /\n", "COPY --from=build /out/ /\nCOPY --from=build /out/tmp /var/tmp\n", "not a COPY of one directory"},
		{"the owner", "COPY --from=build /out/ /", "COPY --from=build --chown=65532:65532 /out/ /", "--chown"},
		{"the user", "USER 65532:65532", "USER 65532", "user"},
		{"the entrypoint", `ENTRYPOINT ["/convoy-apiserver"]`, `ENTRYPOINT ["/convoy-apiserver", "--v=2"]`, "entrypoint"},
		{"a command", `ENTRYPOINT ["/convoy-apiserver"]`, "ENTRYPOINT [\"/convoy-apiserver\"]\nCMD [\"--help\"]", "cmd"},
		{"the working directory", "WORKDIR /\n", "WORKDIR /tmp\n", "working directory"},
		{"a label's value", "revision=$IMAGE_REVISION", "revision=$GIT_COMMIT", "org.opencontainers.image.revision"},
		{"a label missing", " \\\n      org.opencontainers.image.created=$BUILD_DATE", "", "org.opencontainers.image.created"},
		{"an argument not declared", "ARG IMAGE_SOURCE=https://github.com/kumodo/convoy-apiserver\n", "", "org.opencontainers.image.source"},
		{"an environment variable", "FROM scratch\n", "FROM scratch\nENV GODEBUG=x509sha1=1\n", "ENV in the final stage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, text, tc.old)
			df, err := Parse(strings.NewReader(strings.Replace(text, tc.old, tc.new, 1)))
			require.NoError(t, err)
			var diffs []string
			for platform := range o.made.Images {
				diffs = append(diffs, Compare(df, platform, o.args, o.made)...)
			}
			require.NotEmpty(t, diffs)
			assert.Contains(t, strings.Join(diffs, "\n"), tc.want)
		})
	}
}

// goDirective is go.mod's go line.
var goDirective = regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`)

// baseImage is a golang image of a version, pinned by digest.
var baseImage = regexp.MustCompile(`^golang:(\d+\.\d+)\.\d+(-[a-z0-9]+)?@sha256:[0-9a-f]{64}$`)

// TestDockerfileBuilderBase: the builder stage is the Go toolchain's image
// of go.mod's Go version, pinned by digest, and runs on the build machine's
// platform (it cross-compiles).
func TestDockerfileBuilderBase(t *testing.T) {
	o := mustObserve(t)
	_, st, err := o.df.BuildStages()
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := goDirective.FindStringSubmatch(string(mod))
	require.NotNil(t, goVersion, "go.mod's go line")
	m := baseImage.FindStringSubmatch(st.BaseName)
	require.NotNil(t, m, "%s: golang:X.Y.Z[-VARIANT]@sha256:DIGEST", st.BaseName)
	assert.Equal(t, goVersion[1], m[1], "the Go version of go.mod")
	assert.Equal(t, "$BUILDPLATFORM", st.Platform)
}

// TestDockerBuildArgs: what make print-docker-build-args prints is what the
// Dockerfile declares, with BuildKit's SOURCE_DATE_EPOCH, the commit's time
// as make image's.
func TestDockerBuildArgs(t *testing.T) {
	o := mustObserve(t)
	declared := map[string]bool{"SOURCE_DATE_EPOCH": true}
	for _, st := range o.df.Stages {
		v := vars{}
		for _, cmd := range st.Commands {
			require.NoError(t, v.declare(cmd, nil))
		}
		for k := range v {
			declared[k] = true
		}
	}
	for k := range o.args {
		assert.True(t, declared[k], "make print-docker-build-args prints %s, which the Dockerfile does not declare", k)
	}
	epoch, err := strconv.ParseInt(o.args["SOURCE_DATE_EPOCH"], 10, 64)
	require.NoError(t, err)
	for platform, img := range o.made.Images {
		assert.Equal(t, time.Unix(epoch, 0).UTC(), img.Created.UTC(), "%s: make image's time", platform)
	}
}

// TestDockerignoreKeepsTheBuildsFiles: the build context that .dockerignore
// leaves holds every file go build of the server reads, for each platform.
func TestDockerignoreKeepsTheBuildsFiles(t *testing.T) {
	o := mustObserve(t)
	for platform := range o.made.Images {
		t.Run(platform, func(t *testing.T) {
			files, err := BuildFiles(t.Context(), root, "./cmd/convoy-apiserver", platform)
			require.NoError(t, err)
			require.Greater(t, len(files), 2)
			excluded, err := Excluded(root, files)
			require.NoError(t, err)
			assert.Empty(t, excluded)
		})
	}
	// And leaves out what it does not read: the checkout, the tests.
	excluded, err := Excluded(root, []string{".git/HEAD", "bin/convoy-apiserver", "hack/image/main.go", "pkg/render/render_test.go", "pkg/render/testdata/a.yaml", "test/e2e/main_test.go"})
	require.NoError(t, err)
	assert.Len(t, excluded, 6)
}
