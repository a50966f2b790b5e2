package sshd

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Require starts a server for a test: where sshd is not installed the test
// is skipped, but under CI=true (CI installs it: hack/setup.sh), where it
// fails.
func TestRequireInstalled(t *testing.T) {
	if _, err := Binary(); errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	_, err := Binary()
	require.NoError(t, err)
}

func newSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	return s
}

// A key runs its command, whatever the client asks, with the client's
// command in SSH_ORIGINAL_COMMAND; another key is refused; the host key is
// the one known_hosts lists.
func TestServer(t *testing.T) {
	allowed, other := newSigner(t), newSigner(t)
	s := Require(t, Options{Dir: t.TempDir(), Keys: []Key{{Key: allowed.PublicKey(), Command: `echo "ran: $SSH_ORIGINAL_COMMAND"`}}})
	file := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(file, s.KnownHosts(), 0o600))
	callback, err := knownhosts.New(file)
	require.NoError(t, err)
	dial := func(signer ssh.Signer) (*ssh.Client, error) {
		return ssh.Dial("tcp", s.Addr, &ssh.ClientConfig{User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback: callback, Timeout: 20 * time.Second})
	}
	c, err := dial(allowed)
	require.NoError(t, err)
	defer c.Close()
	session, err := c.NewSession()
	require.NoError(t, err)
	out, err := session.Output("id")
	require.NoError(t, err, string(out))
	assert.Equal(t, "ran: id\n", string(out))

	_, err = dial(other)
	assert.ErrorContains(t, err, "unable to authenticate")
	assert.Equal(t, "ssh://"+s.User+"@"+s.Addr+"/web.git", s.URL("web.git"))
}

// A command authorized_keys cannot hold is refused.
func TestStartRefusesACommandItCannotWrite(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skip(err)
	}
	for _, command := range []string{"echo a\nrm -rf /", `echo \"x`} {
		_, err := Start(context.Background(), Options{Dir: t.TempDir(), Keys: []Key{{Key: newSigner(t).PublicKey(), Command: command}}})
		assert.ErrorContains(t, err, "sshd: the command")
	}
}
