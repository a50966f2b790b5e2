package dockerfile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// root is the repository's top, where the Dockerfile and the Makefile are.
const root = "../../.."

// standIn is the file that stands in for the server's binary: the fake go
// writes it where hack/image's go build writes the server, and the buildah
// build copies it from the directory that stands in for the builder stage.
// The binary's bytes are not what is compared: where they come from is.
var standIn = []byte("a stand-in for convoy-apiserver, written by hack/tools/dockerfile\n")

// work holds what the tests of this package build; TestMain removes it.
var work string

func TestMain(m *testing.M) {
	var err error
	work, err = os.MkdirTemp("", "convoy-dockerfile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(work)
	os.Exit(code)
}

// observed is what the repository says of both builds, read once for all
// the tests.
type observed struct {
	df *Dockerfile
	// buildArgs are what make print-docker-build-args prints (NAME=VALUE),
	// args the same by name.
	buildArgs []string
	args      map[string]string
	made      *MakeImage
}

// observe reads the Dockerfile, runs make print-docker-build-args, and
// runs make image with the fake go.
var observe = sync.OnceValues(func() (*observed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := &observed{args: map[string]string{}}
	var err error
	if o.df, err = readDockerfile(filepath.Join(root, "Dockerfile")); err != nil {
		return nil, err
	}
	mk := Make{Root: root}
	if o.buildArgs, err = mk.DockerBuildArgs(ctx); err != nil {
		return nil, err
	}
	for _, a := range o.buildArgs {
		k, v, _ := strings.Cut(a, "=")
		o.args[k] = v
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	fake := FakeGo{
		Path:    filepath.Join(work, "fakebin", "go"),
		Go:      goCmd,
		Records: filepath.Join(work, "records"),
		Binary:  filepath.Join(work, "stand-in"),
	}
	if err := os.MkdirAll(fake.Records, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(fake.Binary, standIn, 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, goCmd, "build", "-o", fake.Path, "./fakego").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the fake go: %w: %s", err, out)
	}
	unset, err := goVariables(o.df, o.args)
	if err != nil {
		return nil, err
	}
	o.made, err = mk.Image(ctx, fake, unset, filepath.Join(work, "make"))
	return o, err
})

// mustObserve is observe's result, the test failed on an error.
func mustObserve(t *testing.T) *observed {
	t.Helper()
	o, err := observe()
	require.NoError(t, err)
	return o
}

// readDockerfile parses the Dockerfile at p.
func readDockerfile(p string) (*Dockerfile, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// goVariables are the variables the Dockerfile's go build sets, but for
// CacheVars: make image runs without them in its environment, so that
// hack/image's own values of them show.
func goVariables(df *Dockerfile, args map[string]string) ([]string, error) {
	_, st, err := df.BuildStages()
	if err != nil {
		return nil, err
	}
	b, err := ReadBuilder(st, "linux/amd64", args)
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range b.Build.Env {
		if !slices.Contains(CacheVars, k) {
			names = append(names, k)
		}
	}
	return names, nil
}
