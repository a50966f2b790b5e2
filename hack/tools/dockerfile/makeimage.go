package dockerfile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// MakeImage is what `make image` did, seen from outside: the go build
// hack/image ran for each platform, and the images of the layout it wrote.
type MakeImage struct {
	Builds map[string]Build
	Images map[string]Image
}

// Make runs make in the repository at root.
type Make struct {
	Root string
	// Env is the environment of make; nil is this process's.
	Env []string
}

// run runs make with args and returns its standard output.
func (m Make) run(ctx context.Context, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "make", append([]string{"-s", "--no-print-directory", "-C", m.Root}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("make %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// env is the environment of make: m.Env, without the variables of an outer
// make (a make test that runs this), which the inner one would misread.
func (m Make) env() []string {
	env := m.Env
	if env == nil {
		env = os.Environ()
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return makes(k)
	})
}

// makes says whether make sets the variable k for its commands.
func makes(k string) bool {
	return k == "MAKEFLAGS" || k == "MAKELEVEL" || k == "MFLAGS" || k == "MAKEOVERRIDES"
}

// DockerBuildArgs returns what `make print-docker-build-args` prints: the
// NAME=VALUE of each --build-arg, in order.
func (m Make) DockerBuildArgs(ctx context.Context) ([]string, error) {
	out, err := m.run(ctx, m.env(), "print-docker-build-args")
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(out))
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("print-docker-build-args printed %q: not pairs of --build-arg NAME=VALUE", out)
	}
	var args []string
	for i := 0; i < len(fields); i += 2 {
		if fields[i] != "--build-arg" || !assignment.MatchString(fields[i+1]) {
			return nil, fmt.Errorf("print-docker-build-args printed %q %q, not --build-arg NAME=VALUE", fields[i], fields[i+1])
		}
		args = append(args, fields[i+1])
	}
	return args, nil
}

// FakeGo is the go command of make image, faked: the fakego command built
// at Path, named go, builds hack/image with the real go (Go) and runs it;
// it records each go build hack/image runs in Records, and writes Binary as
// its output.
type FakeGo struct {
	Path, Go, Records, Binary string
}

// Image runs `make image` with fake as its go and hack/image's, its output
// under work. The variables unset are left out of make's environment, so
// that hack/image's own values of them show. It returns what hack/image
// built.
func (m Make) Image(ctx context.Context, fake FakeGo, unset []string, work string) (*MakeImage, error) {
	pathList := filepath.Dir(fake.Path)
	env := slices.DeleteFunc(m.env(), func(kv string) bool {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" {
			pathList += string(os.PathListSeparator) + v
		}
		return slices.Contains(unset, k) || k == "PATH" || strings.HasPrefix(k, "FAKEGO_")
	})
	env = append(env, "PATH="+pathList,
		"FAKEGO_GO="+fake.Go, "FAKEGO_RECORDS="+fake.Records, "FAKEGO_BINARY="+fake.Binary)
	if _, err := m.run(ctx, env, "image", "GO="+fake.Path, "BIN_DIR="+work); err != nil {
		return nil, err
	}
	images, err := ReadLayout(filepath.Join(work, "image"))
	if err != nil {
		return nil, err
	}
	// hack/image's environment is that of go run; what it sets for go build
	// is what differs.
	run, err := readRecord(filepath.Join(fake.Records, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("make's go run: %w", err)
	}
	mi := &MakeImage{Builds: map[string]Build{}, Images: images}
	for platform := range images {
		rec, err := readRecord(filepath.Join(fake.Records, strings.ReplaceAll(platform, "/", "-")+".json"))
		if err != nil {
			return nil, fmt.Errorf("the go build of %s: %w", platform, err)
		}
		set := map[string]string{}
		for _, kv := range rec.Env {
			if !slices.Contains(run.Env, kv) {
				k, v, _ := strings.Cut(kv, "=")
				set[k] = v
			}
		}
		mi.Builds[platform] = Build{Args: rec.Args, Env: set}
	}
	return mi, nil
}

// record is what the fake go records of one run.
type record struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

// readRecord reads one record of the fake go.
func readRecord(file string) (record, error) {
	var rec record
	data, err := os.ReadFile(file)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", file, err)
	}
	if len(rec.Args) == 0 {
		return rec, fmt.Errorf("%s: no arguments", file)
	}
	return rec, nil
}
