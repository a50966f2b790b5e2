//go:build unix

// Package e2e tests convoy-apiserver end to end: a real etcd and kube-apiserver
// v1.37.2 (hack/testbin.sh), the CRDs and RBAC of artifacts/, and the
// convoy-apiserver binary registered through an APIService, started once for
// the package on free ports and torn down at the end.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kumodo/convoy-apiserver/internal/controlplane"
)

// env is the control plane every test of the package shares.
var env *environment

type environment struct {
	cp        *controlplane.ControlPlane
	binDir    string
	root      string
	convoyBin string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e, cleanup, err := setUp(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: setting up the control plane: %v\n", err)
		return 1
	}
	env = e
	code := m.Run()
	if err := cleanup(code != 0); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: tearing down: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func setUp(root string) (*environment, func(failed bool) error, error) {
	binDir, err := output(root, "hack/testbin.sh")
	if err != nil {
		return nil, nil, fmt.Errorf("building the control-plane binaries: %w", err)
	}
	dir, err := os.MkdirTemp("", "convoy-e2e-")
	if err != nil {
		return nil, nil, err
	}
	convoyBin := filepath.Join(dir, "convoy-apiserver")
	build := exec.Command("go", "build", "-ldflags", stamp(serverVersion), "-o", convoyBin, "./cmd/convoy-apiserver")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, nil, fmt.Errorf("building convoy-apiserver: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir:             dir,
		BinDir:          binDir,
		CRDDir:          filepath.Join(root, "artifacts/crds"),
		ManifestDirs:    []string{filepath.Join(root, "artifacts/rbac"), filepath.Join(root, "artifacts/rules")},
		ConvoyAPIServer: convoyBin,
		// Deployments get Pods; each test namespace gets a Node of its own
		// when a test wants its workloads to run (startNode).
		Workloads: true,
		// Every replica takes webhook deliveries on a port of its own
		// (TestReceivers).
		Receivers: true,
		// The second cluster, the registries and the repositories of the
		// e2e tests run on loopback. No resync
		// within a run: the tests of triggers see every pass they cause,
		// and TestDriftResyncStartsAPass starts a replica that resyncs. A
		// runaway chart is stopped after 5s. A compare is reused for 15s at
		// most, so that a new admission policy shows within it
		// (TestDriftDryRunRejected). Small limits of sources, and a tag
		// moved shows within 2s (TestSources*).
		ConvoyArgs: []string{"-v=4", "--allow-loopback-clusters", "--allow-loopback-sources", "--resync=1h",
			"--fetch-timeout=3s", "--max-artifact-bytes=1048576", "--max-values-file-bytes=65536", "--max-index-bytes=65536", "--source-resolve-max-age=2s", "--contest-window=30s", "--contest-max-backoff=16s", "--render-timeout=5s", "--cache-max-age=15s",
			"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"},
		Out: os.Stderr,
	})
	if err != nil {
		return nil, nil, err
	}
	cleanup := func(failed bool) error {
		err := cp.Stop()
		if failed || os.Getenv("CONVOY_E2E_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "e2e: logs kept in %s/logs\n", dir)
			return err
		}
		if rmErr := os.RemoveAll(dir); err == nil {
			err = rmErr
		}
		return err
	}
	return &environment{cp: cp, binDir: binDir, root: root, convoyBin: convoyBin}, cleanup, nil
}

func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// The build stamps of the binaries the tests build, different so that a test
// can tell which one it reads.
const (
	serverVersion = "v0.0.0-e2e.server"
	pluginVersion = "v0.0.0-e2e.plugin"
)

// stamp returns the -ldflags that stamp a binary with version, as make build does.
func stamp(version string) string {
	return "-X github.com/kumodo/convoy-apiserver/pkg/version.gitVersion=" + version +
		" -X github.com/kumodo/convoy-apiserver/pkg/version.gitCommit=e2e"
}
