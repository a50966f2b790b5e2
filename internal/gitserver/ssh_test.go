package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// The server, against git's and OpenSSH's own clients: a clone of an
// authorized key works; another key, another command, a path out of the
// root and a missing repository are refused, and only the clone and the
// missing repository ran git-upload-pack.
func TestSSHServerWithOpenSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("OpenSSH's client is not installed")
	}
	tmp := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+tmp, "SSH_AUTH_SOCK=",
		"GIT_AUTHOR_NAME=Convoy", "GIT_AUTHOR_EMAIL=convoy@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Convoy", "GIT_COMMITTER_EMAIL=convoy@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	run := func(t *testing.T, dir string, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(t *testing.T, dir string, args ...string) string {
		t.Helper()
		out, err := run(t, dir, "git", args...)
		require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
		return strings.TrimSpace(out)
	}

	root := filepath.Join(tmp, "root")
	work := filepath.Join(tmp, "work")
	require.NoError(t, os.MkdirAll(work, 0o755))
	repo := filepath.Join(root, "web.git")
	must(t, tmp, "init", "--bare", "--quiet", "--initial-branch=main", repo)
	require.NoError(t, os.WriteFile(filepath.Join(work, "deploy.yaml"), []byte("kind: Deployment\n"), 0o644))
	must(t, work, "--git-dir="+repo, "--work-tree="+work, "add", "--all")
	must(t, work, "--git-dir="+repo, "--work-tree="+work, "commit", "--quiet", "-m", "first")
	head := must(t, work, "--git-dir="+repo, "rev-parse", "HEAD")

	keyFile := func(name string) (string, ssh.PublicKey) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		block, err := ssh.MarshalPrivateKey(priv, "")
		require.NoError(t, err)
		path := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
		pub, err := ssh.NewPublicKey(priv.Public())
		require.NoError(t, err)
		return path, pub
	}
	authorized, authorizedPub := keyFile("id_authorized")
	other, _ := keyFile("id_other")

	srv := RequireSSH(t, SSHOptions{Root: root, AuthorizedKeys: []ssh.PublicKey{authorizedPub}})
	_, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(srv.Addr, "127.0.0.1:"))
	assert.Equal(t, "ssh://"+srv.User()+"@"+srv.Addr+"/web.git", srv.RepoURL("web.git"))
	assert.Equal(t, "[127.0.0.1]:"+port+" ssh-ed25519 ", string(srv.KnownHosts()[:len("[127.0.0.1]:"+port+" ssh-ed25519 ")]))
	knownHosts := filepath.Join(tmp, "known_hosts")
	require.NoError(t, os.WriteFile(knownHosts, srv.KnownHosts(), 0o600))

	sshArgs := func(identity string) []string {
		return []string{"-F", "/dev/null", "-i", identity, "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
			"-o", "UserKnownHostsFile=" + knownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"}
	}
	sshCommand := func(identity string) string { return "ssh " + strings.Join(sshArgs(identity), " ") }

	t.Run("git clone with the authorized key", func(t *testing.T) {
		dest := filepath.Join(tmp, "clone")
		must(t, tmp, "-c", "core.sshCommand="+sshCommand(authorized), "clone", "--quiet", "--depth=1", srv.RepoURL("web.git"), dest)
		assert.Equal(t, head, must(t, dest, "rev-parse", "HEAD"))
		data, err := os.ReadFile(filepath.Join(dest, "deploy.yaml"))
		require.NoError(t, err)
		assert.Equal(t, "kind: Deployment\n", string(data))
		assert.Equal(t, 1, srv.Sessions())
	})
	t.Run("git ls-remote of a missing repository", func(t *testing.T) {
		out, err := run(t, tmp, "git", "-c", "core.sshCommand="+sshCommand(authorized), "ls-remote", srv.RepoURL("missing.git"))
		require.Error(t, err)
		assert.Contains(t, out, "does not appear to be a git repository")
		assert.Equal(t, 2, srv.Sessions())
	})
	t.Run("another key", func(t *testing.T) {
		out, err := run(t, tmp, "git", "-c", "core.sshCommand="+sshCommand(other), "ls-remote", srv.RepoURL("web.git"))
		require.Error(t, err)
		assert.Contains(t, out, "Permission denied (publickey)")
		assert.Equal(t, 2, srv.Sessions())
	})
	for _, command := range []string{"git-receive-pack '/web.git'", "sh -c id", "git-upload-pack '/../root/web.git'", "git-upload-pack /web.git", "git-upload-pack '/'",
		"git-upload-pack '/web.git'; id", "git-upload-pack '/web.git' '/web.git'", "git-upload-pack '/web.git'\nid"} {
		t.Run(command, func(t *testing.T) {
			args := append(sshArgs(authorized), "-p", port, srv.User()+"@127.0.0.1", command)
			out, err := run(t, tmp, "ssh", args...)
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 128, exit.ExitCode(), out)
			assert.Contains(t, out, "fatal: gitserver: ")
			assert.Equal(t, 2, srv.Sessions())
		})
	}
}
