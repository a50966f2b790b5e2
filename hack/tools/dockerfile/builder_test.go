package dockerfile

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stage parses a Dockerfile of one stage.
func stage(t *testing.T, text string) instructions.Stage {
	t.Helper()
	df, err := Parse(strings.NewReader(text))
	require.NoError(t, err)
	require.Len(t, df.Stages, 1)
	return df.Stages[0]
}

// TestReadBuilder reads what a builder stage's RUN does: the go build with
// its variables (the stage's ENV, the command's own; ARGs expanded, the
// platform's among them), the mounts, and the modes its commands give.
func TestReadBuilder(t *testing.T) {
	st := stage(t, `FROM --platform=$BUILDPLATFORM golang AS build
WORKDIR /src
ENV CGO_ENABLED=0
ARG TARGETARCH
ARG V=dev
RUN --mount=type=bind,target=. --mount=type=cache,target=/c \
    mkdir -p -m 1777 out/tmp && mkdir -m 2750 /var/x \
 && GOCACHE=/c GOARCH=$TARGETARCH go build -ldflags "-X m.v=$V" -o out/bin ./cmd \
 && chmod 4711 out/bin
`)
	b, err := ReadBuilder(st, "linux/arm64", map[string]string{"V": "v1"})
	require.NoError(t, err)
	assert.Equal(t, "golang", b.Base)
	assert.Equal(t, "$BUILDPLATFORM", b.Platform)
	assert.Equal(t, "/src", b.WorkDir)
	assert.Equal(t, []string{"/src"}, b.Sources)
	assert.Equal(t, []string{"/c"}, b.Caches)
	assert.Equal(t, Build{
		Args: []string{"build", "-ldflags", "-X m.v=v1", "-o", "out/bin", "./cmd"},
		Env:  map[string]string{"CGO_ENABLED": "0", "GOCACHE": "/c", "GOARCH": "arm64"},
	}, b.Build)
	assert.Equal(t, "/src/out/bin", b.Output)
	assert.Equal(t, map[string]fs.FileMode{
		"/src":         fs.ModeDir | 0o755,
		"/src/out":     fs.ModeDir | 0o755,
		"/src/out/tmp": fs.ModeDir | fs.ModeSticky | 0o777,
		"/var/x":       fs.ModeDir | fs.ModeSetgid | 0o750,
		"/src/out/bin": fs.ModeSetuid | 0o711,
	}, b.Files)
}

// TestReadBuilderRefuses: what the reader cannot say for sure is an error,
// not a guess.
func TestReadBuilderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, run, want string
	}{
		{"a pipe", "go build -o /out/x . | tee log", "more shell"},
		{"a sequence", "go build -o /out/x . ; true", "more shell"},
		{"a substitution", "go build -ldflags \"-X m.d=$(date)\" -o /out/x .", "more shell"},
		{"a redirection", "go build -o /out/x . > log", "more shell"},
		{"another command", "apt-get install -y git && go build -o /out/x .", "apt-get: not read here"},
		{"go, not go build", "go mod download && go build -o /out/x .", "not go build"},
		{"two builds", "go build -o /out/x . && go build -o /out/y .", "a second go build"},
		{"no output", "go build .", "without -o"},
		{"no build", "mkdir /out", "runs no go build"},
		{"a chmod of nothing made", "go build -o /out/x . && chmod 0755 /out/y", "which no command before made"},
		{"a symbolic mode", "go build -o /out/x . && chmod u+x /out/x", "not octal"},
		{"a flag of mkdir", "mkdir -v /out && go build -o /out/x .", "-v is not read"},
		{"a secret mount", "--mount=type=secret,id=t go build -o /out/x .", "a secret mount"},
		{"an empty command", "go build -o /out/x . && && true", "an empty command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadBuilder(stage(t, "FROM golang\nRUN "+tc.run+"\n"), "linux/amd64", nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"an ARG go build reads", "FROM golang\nARG GOFLAGS\nRUN go build -o /out/x .\n", "go build would read it"},
		{"a COPY", "FROM golang\nCOPY . .\nRUN go build -o /out/x .\n", "COPY is not read"},
		{"the exec form", "FROM golang\nRUN [\"go\", \"build\", \"-o\", \"/out/x\", \".\"]\n", "not a shell form"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadBuilder(stage(t, tc.text), "linux/amd64", nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDiffBuild: the directory of -o and the caches' places are not how a
// binary is built; anything else is.
func TestDiffBuild(t *testing.T) {
	base := Build{
		Args: []string{"build", "-trimpath", "-o", "/tmp/w/linux-amd64/server", "./cmd/server"},
		Env:  map[string]string{"CGO_ENABLED": "0", "GOCACHE": "/root/.cache/go-build"},
	}
	for _, tc := range []struct {
		name string
		got  Build
		want []string
	}{
		{"the same but for -o's directory and the cache", Build{
			Args: []string{"build", "-trimpath", "-o", "/out/server", "./cmd/server"},
			Env:  map[string]string{"CGO_ENABLED": "0", "GOCACHE": "/cache/build"},
		}, nil},
		{"another binary name", Build{
			Args: []string{"build", "-trimpath", "-o", "/out/srv", "./cmd/server"},
			Env:  map[string]string{"CGO_ENABLED": "0"},
		}, []string{`go ["build" "-trimpath" "-o" "srv" "./cmd/server"]: want go ["build" "-trimpath" "-o" "server" "./cmd/server"]`}},
		{"a variable missing and one more", Build{
			Args: base.Args,
			Env:  map[string]string{"GOAMD64": "v3"},
		}, []string{`go build's CGO_ENABLED: want "0", got (none)`, `go build's GOAMD64: want (none), got "v3"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, DiffBuild(base, tc.got))
		})
	}
}
