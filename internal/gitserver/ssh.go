package gitserver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kumodo/convoy-apiserver/internal/sshd"
)

// SSHOptions configure StartSSH.
type SSHOptions struct {
	// Root is the directory that holds the bare repositories served: the
	// path of a URL names one relative to it.
	Root string
	// HostKey is the server's host key; nil: a new ed25519 key.
	HostKey ed25519.PrivateKey
	// AuthorizedKeys are the public keys a client may authenticate with;
	// no other method is accepted.
	AuthorizedKeys []ssh.PublicKey
	// UploadPack is the program run in git-upload-pack's place, with the
	// repository's directory as its one argument (a hostile server of a
	// test); empty: git's git-upload-pack.
	UploadPack string
}

// SSHServer is OpenSSH's sshd on a loopback address (internal/sshd) that
// runs git's own git-upload-pack on the bare repositories under a root
// directory, for a client that authenticates with an authorized key and
// asks for `git-upload-pack '<path>'` as git quotes it, nothing else.
type SSHServer struct {
	// Addr is the server's address, 127.0.0.1:PORT.
	Addr string
	// HostKey is the public key of the server's host key.
	HostKey ssh.PublicKey

	sshd     *sshd.Server
	dir      string
	sessions string
}

// uploadPackScript is the command of every authorized key: it refuses any
// command but git-upload-pack of one path quoted as git quotes it (quote.c's
// sq_quote_buf: single quotes, where a single quote or an exclamation mark
// closes the quote, comes escaped by a backslash, and opens it again), and
// any path that leaves the root; the pattern lets nothing else reach eval.
// It counts the git-upload-pack it runs.
const uploadPackScript = `#!/bin/sh
root=%s
sessions=%s
upload_pack=%s
fail() { printf 'fatal: gitserver: %%s\n' "$*" >&2; exit 128; }
cmd=$SSH_ORIGINAL_COMMAND
case $cmd in *'
'*) fail "a command of more than one line" ;; esac
printf '%%s\n' "$cmd" | grep -Eq "^git-upload-pack '[^']*('\\\\[!']'[^']*)*'\$" ||
	fail "only git-upload-pack is served, with a path quoted as git quotes it, not \"$cmd\""
eval "set -- $cmd"
path=${2#/}
case /$path/ in //|*/../*) fail "\"$2\" is not a path under the root" ;; esac
echo >>"$sessions"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
exec "$upload_pack" "$root/$path"
`

// StartSSH starts sshd on 127.0.0.1 at a free port; sshd.ErrNotInstalled
// where OpenSSH's server is not installed.
func StartSSH(opts SSHOptions) (*SSHServer, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("gitserver: root %q: %w", opts.Root, err)
	}
	uploadPack := opts.UploadPack
	if uploadPack == "" {
		uploadPack = "git-upload-pack"
	}
	dir, err := os.MkdirTemp("", "convoy-sshd-")
	if err != nil {
		return nil, err
	}
	s := &SSHServer{dir: dir, sessions: filepath.Join(dir, "sessions")}
	script := filepath.Join(dir, "upload-pack.sh")
	text := fmt.Sprintf(uploadPackScript, shellQuote(root), shellQuote(s.sessions), shellQuote(uploadPack))
	if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var keys []sshd.Key
	for _, k := range opts.AuthorizedKeys {
		keys = append(keys, sshd.Key{Key: k, Command: script})
	}
	srv, err := sshd.Start(context.Background(), sshd.Options{Dir: dir, HostKey: opts.HostKey, Keys: keys})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s.sshd, s.Addr, s.HostKey = srv, srv.Addr, srv.HostKey
	return s, nil
}

// RequireSSH starts a server for the test t and stops it at its end. Where
// sshd is not installed it skips t, but under CI=true, where it fails t
// (sshd.Require).
func RequireSSH(t testing.TB, opts SSHOptions) *SSHServer {
	t.Helper()
	s, err := StartSSH(opts)
	if errors.Is(err, sshd.ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// KnownHosts returns a known_hosts line for Addr and the host key:
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...", with its newline.
func (s *SSHServer) KnownHosts() []byte { return s.sshd.KnownHosts() }

// User is the user the URLs name: the current user, as whom sshd runs
// git-upload-pack.
func (s *SSHServer) User() string { return s.sshd.User }

// RepoURL returns the ssh:// URL of the repository name under the root:
// ssh://USER@127.0.0.1:PORT/name.
func (s *SSHServer) RepoURL(name string) string { return s.sshd.URL(name) }

// Sessions returns how many git-upload-pack processes the server ran.
func (s *SSHServer) Sessions() int {
	data, _ := os.ReadFile(s.sessions)
	return bytes.Count(data, []byte("\n"))
}

// Close stops the server: no new connection; the sessions end when their
// clients close them.
func (s *SSHServer) Close() {
	s.sshd.Close()
	_ = os.RemoveAll(s.dir)
}
