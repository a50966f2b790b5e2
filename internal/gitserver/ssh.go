package gitserver

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHOptions configure StartSSH.
type SSHOptions struct {
	// Root is the directory that holds the bare repositories served: the
	// path of a URL names one relative to it.
	Root string
	// HostKey is the server's host key; nil: a new ed25519 key.
	HostKey ssh.Signer
	// AuthorizedKeys are the public keys a client may authenticate with,
	// whatever its user name; no other method is accepted.
	AuthorizedKeys []ssh.PublicKey
}

// SSHServer is an SSH server on a loopback address that runs git's own
// git-upload-pack on the bare repositories under a root directory, for a
// client that authenticates with an authorized key and asks for
// `git-upload-pack '<path>'`, nothing else.
type SSHServer struct {
	// Addr is the server's address, 127.0.0.1:PORT.
	Addr string
	// HostKey is the public key of the server's host key.
	HostKey ssh.PublicKey

	root       string
	config     *ssh.ServerConfig
	listener   net.Listener
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	sessions   atomic.Int64
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	closeOnce  sync.Once
	authorized [][]byte
}

// StartSSH starts an SSH server on 127.0.0.1 at a free port.
func StartSSH(opts SSHOptions) (*SSHServer, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("gitserver: root %q: %w", opts.Root, err)
	}
	hostKey := opts.HostKey
	if hostKey == nil {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("gitserver: generating a host key: %w", err)
		}
		if hostKey, err = ssh.NewSignerFromKey(priv); err != nil {
			return nil, fmt.Errorf("gitserver: host key: %w", err)
		}
	}
	s := &SSHServer{HostKey: hostKey.PublicKey(), root: root, conns: map[net.Conn]struct{}{}}
	for _, k := range opts.AuthorizedKeys {
		s.authorized = append(s.authorized, k.Marshal())
	}
	s.config = &ssh.ServerConfig{PublicKeyCallback: s.checkKey}
	s.config.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gitserver: listening: %w", err)
	}
	s.listener, s.Addr = l, l.Addr().String()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// KnownHosts returns a known_hosts line for Addr and the host key:
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...", with its newline.
func (s *SSHServer) KnownHosts() []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey) + "\n")
}

// RepoURL returns the ssh:// URL of the repository name under the root:
// ssh://git@127.0.0.1:PORT/name.
func (s *SSHServer) RepoURL(name string) string {
	return "ssh://git@" + s.Addr + "/" + strings.TrimPrefix(name, "/")
}

// Sessions returns how many git-upload-pack processes the server ran.
func (s *SSHServer) Sessions() int { return int(s.sessions.Load()) }

// Close stops the server: no new connection, the open ones closed, the
// running git-upload-pack processes killed; it returns when all are done.
func (s *SSHServer) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		_ = s.listener.Close()
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
	})
	s.wg.Wait()
}

// checkKey accepts the authorized keys only.
func (s *SSHServer) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	blob := key.Marshal()
	for _, k := range s.authorized {
		if string(k) == string(blob) {
			return &ssh.Permissions{}, nil
		}
	}
	return nil, fmt.Errorf("gitserver: key %s of user %q is not authorized", ssh.FingerprintSHA256(key), meta.User())
}

// serve accepts connections until the listener is closed.
func (s *SSHServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.listener.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				_ = c.Close()
			}()
			s.handleConn(c)
		}()
	}
}

// handleConn runs the SSH handshake of c and serves its session channels.
func (s *SSHServer) handleConn(c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handleSession(ch, chReqs)
		}()
	}
}

// handleSession waits for the session's exec request and runs it; it
// refuses any other request (env, pty, shell, subsystem) but does not end
// the session for it.
func (s *SSHServer) handleSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		go ssh.DiscardRequests(reqs)
		status := s.run(ch, payload.Command)
		_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
		return
	}
}

// run runs command on ch and returns its exit status: git-upload-pack on a
// repository under the root, or a refusal on stderr (status 128, as git's
// own refusals).
func (s *SSHServer) run(ch ssh.Channel, command string) uint32 {
	dir, err := s.repoDir(command)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	s.sessions.Add(1)
	cmd := exec.CommandContext(s.ctx, "git-upload-pack", dir)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// The client's stdin is copied by hand: exec's own copy would keep
	// Wait waiting for a client that does not close its input.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return uint32(exit.ExitCode())
	default:
		return 128
	}
}

// repoDir returns the directory of the repository that command, git's
// `git-upload-pack '<path>'`, names under the root; it refuses any other
// command and any path that leaves the root.
func (s *SSHServer) repoDir(command string) (string, error) {
	arg, ok := strings.CutPrefix(command, "git-upload-pack ")
	if !ok {
		return "", fmt.Errorf("gitserver: only git-upload-pack is served, not %q", command)
	}
	path, err := s.unquote(arg)
	if err != nil {
		return "", fmt.Errorf("gitserver: %q: %w", command, err)
	}
	rel := strings.TrimPrefix(path, "/")
	if rel == "" || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("gitserver: %q is not a path under the root", path)
	}
	return filepath.Join(s.root, rel), nil
}

// unquote reverses git's quoting of a path for a remote shell (quote.c's
// sq_quote_buf): in single quotes, where a single quote or an exclamation
// mark closes the quote, comes escaped by a backslash, and opens it again:
//
//	'/o'\''neil'\!'.git' -> /o'neil!.git
//
// It refuses anything else. (A method: the package's other files own its
// top-level names.)
func (*SSHServer) unquote(arg string) (string, error) {
	var b strings.Builder
	rest := arg
	for rest != "" {
		if rest[0] != '\'' {
			return "", errors.New("not quoted as git quotes a path")
		}
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return "", errors.New("an unterminated quote")
		}
		b.WriteString(rest[1 : 1+end])
		rest = rest[end+2:]
		if rest == "" {
			break
		}
		if len(rest) < 3 || rest[0] != '\\' || (rest[1] != '\'' && rest[1] != '!') || rest[2] != '\'' {
			return "", errors.New("not quoted as git quotes a path")
		}
		b.WriteByte(rest[1])
		rest = rest[2:]
	}
	if arg == "" {
		return "", errors.New("no path")
	}
	return b.String(), nil
}
