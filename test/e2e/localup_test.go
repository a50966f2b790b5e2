//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalUp runs what `make run` runs, on a control plane of its own: it
// prints the KUBECONFIG line and three commands that work, and Ctrl-C stops
// every process it started.
func TestLocalUp(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "local-up")
	build := exec.Command("go", "build", "-o", bin, "./hack/local-up")
	build.Dir = env.root
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	dir := t.TempDir()
	cmd := exec.Command(bin, "--dir", dir, "--bin-dir", env.binDir,
		"--convoy-apiserver", env.convoyBin,
		"--crds", filepath.Join(env.root, "artifacts/crds"),
		"--manifests", filepath.Join(env.root, "artifacts/rbac")+","+filepath.Join(env.root, "artifacts/rules"),
		"--examples", filepath.Join(env.root, "artifacts/examples"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var mu sync.Mutex
	var printed strings.Builder
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			mu.Lock()
			printed.WriteString(s.Text() + "\n")
			mu.Unlock()
			if strings.Contains(s.Text(), "Press Ctrl-C") {
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-time.After(3 * time.Minute):
		t.Fatalf("local-up did not come up; stderr:\n%s", stderr.String())
	}
	mu.Lock()
	text := printed.String()
	mu.Unlock()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	assert.Contains(t, text, "export KUBECONFIG="+kubeconfig)
	commands := regexp.MustCompile(`(?m)^  kubectl (.*)$`).FindAllStringSubmatch(text, -1)
	require.Len(t, commands, 3, text)
	for _, c := range commands {
		line := "kubectl " + c[1]
		sh := exec.Command("bash", "-c", line)
		sh.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+env.binDir+":"+os.Getenv("PATH"))
		got, err := sh.CombinedOutput()
		require.NoError(t, err, "%s: %s", line, got)
	}
	r := kubectl(t, kubeconfig, "", "get", "release", "-n", "demo", "podinfo",
		"-o", `jsonpath={.metadata.annotations.convoy\.kumodo\.io/sync-requested-at}`)
	require.NoError(t, r.err, r.stderr)
	assert.NotEmpty(t, r.stdout, "the printed sync command recorded a request")

	pids := childPIDs(t, dir)
	require.NotEmpty(t, pids, "local-up runs etcd, kube-apiserver and convoy-apiserver")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), stderr.String())
	for _, pid := range pids {
		assert.NoError(t, waitGone(pid), "process %d outlived local-up", pid)
	}
}

// childPIDs lists the processes whose command line names dir.
func childPIDs(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGone(pid int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if err == syscall.ESRCH {
			return nil
		}
		if time.Now().After(deadline) {
			return syscall.EEXIST
		}
		time.Sleep(100 * time.Millisecond)
	}
}
