// Command fakego stands in for the go command of `make image`, so that the
// tests of hack/tools/dockerfile see how hack/image builds the server
// without building it. As `go run PKG ARGS...` (make's $(GO) run
// ./hack/image) it builds PKG with the real go ($FAKEGO_GO) and runs it
// with the environment as it is (go run would put its own directory first
// in PATH); as `go build ... -o OUT PKG` (hack/image's build) it writes the
// file $FAKEGO_BINARY to OUT. It records the arguments and the environment
// of each as JSON in $FAKEGO_RECORDS: run.json, GOOS-GOARCH.json.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// Record is what one go build saw.
type Record struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
}

// run is `go run PKG ARGS...`, recorded in $FAKEGO_RECORDS/run.json.
func run(args []string) error {
	if len(args) < 1 {
		return errors.New("go run without a package")
	}
	if err := record("run.json", append([]string{"run"}, args...)); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fakego-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cmd")
	build := exec.Command(os.Getenv("FAKEGO_GO"), "build", "-o", bin, args[0])
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", args[0], err)
	}
	cmd := exec.Command(bin, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

// build is `go build ... -o OUT PKG`.
func build(args []string) error {
	i := slices.Index(args, "-o")
	if i < 0 || i+1 >= len(args) {
		return errors.New("no -o: the output is where the stand-in binary goes")
	}
	bin, err := os.ReadFile(os.Getenv("FAKEGO_BINARY"))
	if err != nil {
		return fmt.Errorf("the stand-in binary: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(args[i+1]), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(args[i+1], bin, 0o755); err != nil {
		return err
	}
	return record(os.Getenv("GOOS")+"-"+os.Getenv("GOARCH")+".json", append([]string{"build"}, args...))
}

// record writes args and the environment to $FAKEGO_RECORDS/name.
func record(name string, args []string) error {
	data, err := json.Marshal(Record{Args: args, Env: os.Environ()})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(os.Getenv("FAKEGO_RECORDS"), name), data, 0o644)
}

func main() {
	var err error
	switch verb := append(os.Args[1:], "")[0]; verb {
	case "run":
		err = run(os.Args[2:])
	case "build":
		err = build(os.Args[2:])
	default:
		err = fmt.Errorf("only go run and go build are faked, not go %s", verb)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakego:", err)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		os.Exit(2)
	}
}
