// Package sshd runs OpenSSH's sshd on a loopback port for the tests and for
// make run: a real SSH server, configured in a directory of its own, that
// lets the current user in with the keys it is given, each with the command
// it runs (authorized_keys' command=), and nothing else: no password, no
// shell, no forwarding, no terminal.
package sshd

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrNotInstalled is the error of Start where OpenSSH's sshd is not
// installed (Debian's package openssh-server; hack/setup.sh installs it).
var ErrNotInstalled = errors.New("OpenSSH's sshd is not installed (Debian's package openssh-server: hack/setup.sh installs it)")

// Key is a public key the server lets in, and the command a session of it
// runs whatever the client asks (the client's command is in the
// environment variable SSH_ORIGINAL_COMMAND).
type Key struct {
	Key     ssh.PublicKey
	Command string
}

// Options configure Start.
type Options struct {
	// Dir holds the server's configuration, host key and log; it must
	// exist.
	Dir string
	// HostKey is the server's host key; nil: a new one.
	HostKey ed25519.PrivateKey
	// Keys are the keys the current user may log in with.
	Keys []Key
}

// Server is a running sshd.
type Server struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// User is who logs in: the current user, whose shell runs the
	// commands.
	User string
	// HostKey is the public key of the host key.
	HostKey ssh.PublicKey
	// Log is the file sshd logs to.
	Log string

	cmd    *exec.Cmd
	exited chan struct{}
}

// Binary returns the path of sshd, or ErrNotInstalled.
func Binary() (string, error) {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return filepath.Abs(p)
	}
	return "", ErrNotInstalled
}

// Start starts sshd on a free port of 127.0.0.1 and returns once it accepts
// connections.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("sshd: the current user: %w", err)
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation wants its empty directory, which a
		// machine that never started the service has not made.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, fmt.Errorf("sshd: %w", err)
		}
	}
	hostKey := o.HostKey
	if hostKey == nil {
		if _, hostKey, err = ed25519.GenerateKey(rand.Reader); err != nil {
			return nil, err
		}
	}
	pub, err := ssh.NewPublicKey(hostKey.Public())
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(hostKey, "")
	if err != nil {
		return nil, err
	}
	hostKeyFile := filepath.Join(o.Dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(hostKeyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	var authorized strings.Builder
	for _, k := range o.Keys {
		if strings.ContainsAny(k.Command, "\n\r") || strings.Contains(k.Command, `\"`) {
			return nil, fmt.Errorf("sshd: the command %q holds a newline or a backslash before a double quote", k.Command)
		}
		// In authorized_keys' command="...", \" is a double quote.
		fmt.Fprintf(&authorized, "restrict,command=\"%s\" %s", strings.ReplaceAll(k.Command, `"`, `\"`), ssh.MarshalAuthorizedKey(k.Key))
	}
	authorizedFile := filepath.Join(o.Dir, "authorized_keys")
	if err := os.WriteFile(authorizedFile, []byte(authorized.String()), 0o600); err != nil {
		return nil, err
	}
	s := &Server{User: u.Username, HostKey: pub, Log: filepath.Join(o.Dir, "sshd.log")}
	// The port is free when chosen; another process may take it before
	// sshd does, so a start that fails is tried again on another.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		config := filepath.Join(o.Dir, "sshd_config")
		if err := os.WriteFile(config, []byte(configText(s.Addr, hostKeyFile, authorizedFile, filepath.Join(o.Dir, "sshd.pid"))), 0o600); err != nil {
			return nil, err
		}
		err = s.start(ctx, bin, config)
		if err == nil {
			return s, nil
		}
		if attempt == 2 || ctx.Err() != nil {
			return nil, err
		}
	}
}

// configText is the server's sshd_config: public keys of authorized_keys
// only, each with its command; no password, PAM, forwarding, terminal,
// environment from the client, or subsystem.
func configText(addr, hostKey, authorized, pid string) string {
	return strings.Join([]string{
		"ListenAddress " + addr,
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + authorized,
		"PidFile " + pid,
		"AuthenticationMethods publickey",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"UsePAM no",
		"StrictModes no",
		"AllowTcpForwarding no",
		"AllowAgentForwarding no",
		"X11Forwarding no",
		"PermitTTY no",
		"PermitTunnel no",
		"PermitUserEnvironment no",
		"PrintMotd no",
		"UseDNS no",
		"MaxStartups 100",
		"LogLevel VERBOSE",
		// bash, run by sshd at the first shell level, reads the user's
		// ~/.bashrc before the command (which takes most of a second on a
		// machine whose .bashrc starts pyenv): a session starts at the
		// second level.
		"SetEnv SHLVL=1",
		"",
	}, "\n")
}

// start runs sshd with config and waits until it accepts a connection.
func (s *Server) start(ctx context.Context, bin, config string) error {
	log, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	// -D: in the foreground; -e: the log to standard error.
	cmd := exec.Command(bin, "-D", "-e", "-f", config)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sshd: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("sshd exited at its start: %s", tail(s.Log))
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Close()
			return fmt.Errorf("sshd does not accept connections on %s: %s", s.Addr, tail(s.Log))
		}
	}
}

// KnownHosts returns the known_hosts line of the server, with its newline:
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...".
func (s *Server) KnownHosts() []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey) + "\n")
}

// URL returns ssh://USER@127.0.0.1:PORT/path.
func (s *Server) URL(path string) string {
	return "ssh://" + s.User + "@" + s.Addr + "/" + strings.TrimPrefix(path, "/")
}

// Close stops sshd (the sessions it runs end when their clients go).
func (s *Server) Close() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the end of the log file, for errors.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return strings.TrimSpace(string(data))
}
