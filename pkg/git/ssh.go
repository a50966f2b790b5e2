package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"

	"github.com/kumodo/convoy-apiserver/pkg/errtext"
)

// Git over SSH.
//
// go-git's own SSH transport (plumbing/transport/ssh) dials through
// golang.org/x/net/proxy (ALL_PROXY), reads ~/.ssh/config and
// ~/.ssh/known_hosts, falls back to the SSH agent, and takes no dialer: a
// connection would escape the address policy. sshTransport replaces it
// for ssh:// URLs: every connection goes through the dialer of the address
// policy, the host key is checked against the known_hosts of the source's
// Secret alone, and nothing is read from the environment or the home
// directory. It speaks git-upload-pack only (fetch and list).

const (
	// defaultSSHUser is the user of a URL that names none.
	defaultSSHUser = "git"
	// defaultSSHPort is SSH's port.
	defaultSSHPort = 22
	// maxSSHStderr bounds what is kept of git-upload-pack's standard
	// error, for the messages of its failures.
	maxSSHStderr = 4 << 10
	// sshAuthName is the Name of SSHAuth as a go-git AuthMethod.
	sshAuthName = "convoy-ssh-public-key"
)

// sshTransport implements go-git's transport.Transport for ssh:// URLs:
// git-upload-pack over an SSH connection that the address policy's dialer
// makes, with the host key checked against SSHAuth's known_hosts.
type sshTransport struct {
	dialer  *net.Dialer
	timeout time.Duration
	limits  Limits
}

// newSSHTransport returns the transport whose connections dialer makes
// (the address policy's: its Control refuses what the policy refuses,
// after DNS resolution, before a packet), whose SSH handshake, and wait
// for the exit of a git-upload-pack that answered nothing, last at most
// timeout, and whose sessions read limits.bytes at most and
// advertisements of limits.refs refs at most (0: no limit).
func newSSHTransport(dialer *net.Dialer, timeout time.Duration, limits Limits) transport.Transport {
	return &sshTransport{dialer: dialer, timeout: timeout, limits: limits}
}

// NewUploadPackSession checks the endpoint and the auth, and returns a
// session that connects at its first call (AdvertisedReferencesContext,
// UploadPack) with that call's context. It refuses an AuthMethod other
// than SSHAuth, a known_hosts that is empty or has no key for the host,
// and a proxy.
func (t *sshTransport) NewUploadPackSession(ep *transport.Endpoint, am transport.AuthMethod) (transport.UploadPackSession, error) {
	var auth SSHAuth
	switch a := am.(type) {
	case SSHAuth:
		auth = a
	case *SSHAuth:
		if a != nil {
			auth = *a
		}
	case nil:
		return nil, fmt.Errorf("%w: an SSH Git source needs a private key and known_hosts", transport.ErrInvalidAuthMethod)
	default:
		return nil, fmt.Errorf("%w: %s: an SSH Git source authenticates with a private key and known_hosts only", transport.ErrInvalidAuthMethod, am.Name())
	}
	switch {
	case auth.Signer == nil:
		return nil, fmt.Errorf("%w: no private key", transport.ErrInvalidAuthMethod)
	case ep == nil:
		return nil, errors.New("no URL")
	case ep.Protocol != "ssh" || ep.Host == "" || ep.Path == "":
		// Not the whole URL: it may hold a password.
		return nil, fmt.Errorf("not an ssh:// URL of a repository: protocol %q, host %q, path %q", ep.Protocol, ep.Host, ep.Path)
	case ep.Password != "":
		return nil, errors.New("an SSH Git source authenticates with a key, not a password in its URL")
	case ep.Proxy.URL != "":
		return nil, errors.New("an SSH Git source connects directly, not through a proxy")
	}
	port := ep.Port
	if port <= 0 {
		port = defaultSSHPort
	}
	// The host as the URL writes it (go-git keeps an IPv6 address's
	// brackets): the name known_hosts is checked for, and the name the
	// dialer resolves.
	host := ep.Host
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	hostKeys, err := newHostKeyCheck(auth.KnownHosts, addr)
	if err != nil {
		// The known_hosts does not name the host: the credentials are to
		// correct, not the server.
		return nil, &Error{Kind: KindKnownHostsInvalid, Message: err.Error(), Err: err}
	}
	user := auth.User
	if user == "" {
		user = ep.User
	}
	if user == "" {
		user = defaultSSHUser
	}
	s := &sshSession{
		t:        t,
		addr:     addr,
		command:  transport.UploadPackServiceName + " " + shellQuote(ep.Path),
		hostKeys: hostKeys,
		key:      ssh.FingerprintSHA256(auth.Signer.PublicKey()),
		stderr:   &boundedBuffer{max: maxSSHStderr},
	}
	s.config = &ssh.ClientConfig{
		User:              user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(auth.Signer)},
		HostKeyCallback:   hostKeys.check,
		HostKeyAlgorithms: hostKeys.algorithms,
		Timeout:           t.timeout,
	}
	return s, nil
}

// NewReceivePackSession refuses: convoy-apiserver does not push.
func (t *sshTransport) NewReceivePackSession(*transport.Endpoint, transport.AuthMethod) (transport.ReceivePackSession, error) {
	return nil, fmt.Errorf("git-receive-pack over SSH: %w", errors.ErrUnsupported)
}

// shellQuote quotes s for the remote shell as git does (quote.c's
// sq_quote_buf): in single quotes, where a single quote or an exclamation
// mark closes the quote, comes escaped by a backslash, and opens it again:
//
//	/o'neil!.git -> '/o'\''neil'\!'.git'
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		if r == '\'' || r == '!' {
			b.WriteString(`'\`)
			b.WriteRune(r)
			b.WriteByte('\'')
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// sshSession is one git-upload-pack over one SSH connection. go-git
// calls it from one goroutine; only the end of a context closes the
// connection from another.
type sshSession struct {
	t        *sshTransport
	addr     string
	command  string
	config   *ssh.ClientConfig
	hostKeys *hostKeyCheck
	key      string // the fingerprint of the client's key, for messages
	stderr   *boundedBuffer

	// connecting is set at the first connect, whose error connErr is.
	connecting bool
	connErr    error
	conn       net.Conn
	client     *ssh.Client
	session    *ssh.Session
	stdin      io.WriteCloser
	stdout     *bufio.Reader
	exited     chan error // the result of session.Wait
	// ctx is the context of the call whose reads stdout serves: a read
	// error after its end is that end.
	ctx context.Context

	advRefs  *packp.AdvRefs
	packRun  bool
	finished bool

	mu        sync.Mutex
	stops     []func() bool
	closeOnce sync.Once
}

// connect dials addr through the policy's dialer, runs the SSH handshake
// within the transport's timeout and starts git-upload-pack.
func (s *sshSession) connect(ctx context.Context) error {
	if !s.connecting {
		s.connecting = true
		s.connErr = s.dial(ctx)
	}
	return s.connErr
}

// dial is connect's first and only attempt.
func (s *sshSession) dial(ctx context.Context) error {
	conn, err := s.t.dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		// A refusal of the address policy is a *failure.Error in err's
		// chain.
		return fmt.Errorf("connecting to the SSH server %s: %w", s.addr, err)
	}
	s.conn = conn
	stop := s.closeWhenDone(ctx)
	defer stop()

	if s.t.timeout > 0 {
		_ = conn.SetDeadline(time.Now().Add(s.t.timeout))
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, s.addr, s.config)
	if err != nil {
		return s.handshakeError(ctx, err)
	}
	s.client = ssh.NewClient(c, chans, reqs)
	if s.session, err = s.client.NewSession(); err != nil {
		return s.connError(ctx, "opening an SSH session on", err)
	}
	s.session.Stderr = s.stderr
	if s.stdin, err = s.session.StdinPipe(); err != nil {
		return s.connError(ctx, "opening an SSH session on", err)
	}
	stdout, err := s.session.StdoutPipe()
	if err != nil {
		return s.connError(ctx, "opening an SSH session on", err)
	}
	what := fmt.Sprintf("the answer of %s on %s", transport.UploadPackServiceName, s.addr)
	s.stdout = bufio.NewReader(&ctxReader{s: s, r: bytesLimited(stdout, what, s.t.limits.Bytes)})
	if err := s.session.Start(s.command); err != nil {
		return s.connError(ctx, "running "+transport.UploadPackServiceName+" on", err)
	}
	s.exited = make(chan error, 1)
	go func(session *ssh.Session) { s.exited <- session.Wait() }(s.session)
	_ = conn.SetDeadline(time.Time{})
	return nil
}

// handshakeError is the error of a failed SSH handshake: the end of ctx,
// the refused host key, a server without a key of the types known_hosts
// lists, a refused authentication (once the host key was
// accepted, the handshake fails on anything but the network for that), or
// the network.
func (s *sshSession) handshakeError(ctx context.Context, err error) error {
	accepted, refused := s.hostKeys.outcome()
	var netErr net.Error
	var negotiation *ssh.AlgorithmNegotiationError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("SSH handshake with %s: %w", s.addr, ctx.Err())
	case refused != nil:
		return refused
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("SSH handshake with %s did not end within %s: %w", s.addr, s.t.timeout, err)
	case errors.As(err, &negotiation) && slices.Equal(negotiation.SupportedAlgorithms, s.config.HostKeyAlgorithms):
		return fmt.Errorf("the SSH server %s offers no host key of the types known_hosts lists for it (it offers %s): known_hosts is out of date, or the server is impersonated: %w",
			s.addr, strings.Join(negotiation.RequestedAlgorithms, ", "), err)
	case accepted && !errors.Is(err, io.EOF) && !errors.As(err, &netErr):
		return fmt.Errorf("%w: the SSH server %s refused user %q with key %s: %w",
			transport.ErrAuthenticationRequired, s.addr, s.config.User, s.key, err)
	default:
		return fmt.Errorf("SSH handshake with %s: %w", s.addr, err)
	}
}

// connError is the error of a step after the handshake.
func (s *sshSession) connError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("%s the SSH server %s: %w", what, s.addr, err)
}

// closeWhenDone closes the connection when ctx ends; the returned function
// stops that, and Close stops them all.
func (s *sshSession) closeWhenDone(ctx context.Context) func() bool {
	stop := context.AfterFunc(ctx, s.closeConn)
	s.mu.Lock()
	s.stops = append(s.stops, stop)
	s.mu.Unlock()
	return stop
}

// closeConn closes the SSH connection, which ends every read and write of
// the session.
func (s *sshSession) closeConn() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

// AdvertisedReferences is AdvertisedReferencesContext without a context.
func (s *sshSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

// AdvertisedReferencesContext connects, if not yet, and reads the
// references git-upload-pack advertises; an error is ErrRepositoryNotFound
// when the server says the repository does not exist,
// ErrEmptyRemoteRepository when it has no reference.
func (s *sshSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	if s.advRefs != nil {
		return s.advRefs, nil
	}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	stop := s.closeWhenDone(ctx)
	defer stop()
	s.ctx = ctx
	ar := packp.NewAdvRefs()
	if err := ar.Decode(refsCounted(s.stdout, s.addr, s.t.limits.Refs, 0)); err != nil {
		return nil, s.advRefsError(ctx, err)
	}
	if ar.IsEmpty() {
		return nil, transport.ErrEmptyRemoteRepository
	}
	transport.FilterUnsupportedCapabilities(ar.Capabilities)
	s.advRefs = ar
	return ar, nil
}

// advRefsError is the error of an advertisement that could not be read.
func (s *sshSession) advRefsError(ctx context.Context, err error) error {
	var errLine *pktline.ErrorLine
	var unexpected *packp.ErrUnexpectedData
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("reading the references of %s: %w", s.addr, ctx.Err())
	case errors.As(err, &errLine):
		if errtext.GitRepositoryNotFound(errLine.Text) {
			return fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, errLine.Text)
		}
		return fmt.Errorf("the Git server %s refused: %w", s.addr, errLine)
	case errors.Is(err, packp.ErrEmptyAdvRefs):
		s.finished = true
		return transport.ErrEmptyRemoteRepository
	case errors.Is(err, packp.ErrEmptyInput):
		// git-upload-pack ended without a word on its output: why is on
		// its standard error.
		s.finished = true
		status, text := s.waitExit(ctx)
		if errtext.GitRepositoryNotFound(text) {
			return fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, text)
		}
		return fmt.Errorf("%s on %s answered nothing (%s)%s", transport.UploadPackServiceName, s.addr, status, withColon(text))
	case errors.As(err, &unexpected) && errtext.GitRepositoryNotFound(string(unexpected.Data)):
		return fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, unexpected.Data)
	default:
		return fmt.Errorf("reading the references of %s: %w%s", s.addr, err, withColon(s.stderr.text()))
	}
}

// UploadPack sends the request and returns the response, whose packfile is
// read from the connection; closing the response closes the session. The
// end of ctx closes the connection, until the session is closed.
func (s *sshSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if req.IsEmpty() {
		// The wants are all haves: nothing to fetch.
		if err := s.finish(); err != nil {
			return nil, err
		}
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	s.packRun = true
	s.closeWhenDone(ctx)
	s.ctx = ctx
	if err := s.sendRequest(req); err != nil {
		return nil, s.connError(ctx, "sending the request to", err)
	}
	if _, err := s.stdout.Peek(1); err != nil {
		if ctx.Err() != nil {
			return nil, s.connError(ctx, "reading the answer of", err)
		}
		// Nothing to read: git-upload-pack failed (go-git's own session
		// takes it for "up to date").
		status, text := s.waitExit(ctx)
		return nil, fmt.Errorf("%s on %s answered the request with nothing (%s)%s", transport.UploadPackServiceName, s.addr, status, withColon(text))
	}
	res := packp.NewUploadPackResponse(req)
	if err := res.Decode(sessionReadCloser{Reader: s.stdout, s: s}); err != nil {
		return nil, fmt.Errorf("decoding the answer of %s on %s: %w%s", transport.UploadPackServiceName, s.addr, err, withColon(s.stderr.text()))
	}
	return res, nil
}

// sendRequest writes the wants (and shallows, depth, filter), the haves and
// "done", then closes the input: git-upload-pack answers the whole.
func (s *sshSession) sendRequest(req *packp.UploadPackRequest) error {
	if err := req.UploadRequest.Encode(s.stdin); err != nil {
		return fmt.Errorf("sending the wants: %w", err)
	}
	if err := req.UploadHaves.Encode(s.stdin, true); err != nil {
		return fmt.Errorf("sending the haves: %w", err)
	}
	if err := pktline.NewEncoder(s.stdin).Encodef("done\n"); err != nil {
		return fmt.Errorf("sending done: %w", err)
	}
	return s.stdin.Close()
}

// finish ends a session that read the advertisement and fetches nothing:
// a flush-pkt tells git-upload-pack to exit.
func (s *sshSession) finish() error {
	if s.finished || s.packRun || s.stdin == nil {
		s.finished = true
		return nil
	}
	s.finished = true
	if _, err := s.stdin.Write(pktline.FlushPkt); err != nil {
		return fmt.Errorf("ending %s on %s: %w", transport.UploadPackServiceName, s.addr, err)
	}
	return s.stdin.Close()
}

// Close ends git-upload-pack if it was not asked for a pack, waits a
// little for its exit, and closes the connection. It may be called more
// than once (go-git closes both the response and the session).
func (s *sshSession) Close() error {
	s.closeOnce.Do(func() {
		if !s.connecting {
			// Closed before its first call: it never connects.
			s.connecting = true
			s.connErr = fmt.Errorf("the session with %s is closed", s.addr)
		}
		graceful := !s.finished && !s.packRun && s.advRefs != nil
		if err := s.finish(); err == nil && graceful && s.exited != nil {
			wait := min(s.t.timeout, time.Second)
			select {
			case <-s.exited:
			case <-time.After(wait):
			}
		}
		s.mu.Lock()
		for _, stop := range s.stops {
			stop()
		}
		s.stops = nil
		s.mu.Unlock()
		if s.client != nil {
			_ = s.client.Close()
		}
		s.closeConn()
	})
	return nil
}

// waitExit waits, at most the transport's timeout, for git-upload-pack to
// exit, and returns its status as words and its standard error.
func (s *sshSession) waitExit(ctx context.Context) (string, string) {
	var timeout <-chan time.Time
	if s.t.timeout > 0 {
		timer := time.NewTimer(s.t.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	status := "it did not exit"
	select {
	case err := <-s.exited:
		var exit *ssh.ExitError
		switch {
		case err == nil:
			status = "exit status 0"
		case errors.As(err, &exit):
			status = fmt.Sprintf("exit status %d", exit.ExitStatus())
		default:
			status = err.Error()
		}
	case <-ctx.Done():
	case <-timeout:
	}
	return status, s.stderr.text()
}

// withColon is ": " and text, or "" for no text.
func withColon(text string) string {
	if text == "" {
		return ""
	}
	return ": " + text
}

// ctxReader reads the session's output; a read that fails after the end of
// the current call's context fails with that end.
type ctxReader struct {
	s *sshSession
	r io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.s.ctx != nil && r.s.ctx.Err() != nil {
		return n, r.s.ctx.Err()
	}
	return n, err
}

// sessionReadCloser is the packfile's reader: closing it closes the
// session.
type sessionReadCloser struct {
	io.Reader
	s *sshSession
}

func (r sessionReadCloser) Close() error { return r.s.Close() }

// boundedBuffer keeps the first max bytes written to it and drops the
// rest, so that a server cannot fill memory through standard error.
type boundedBuffer struct {
	max int
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps what fits and reports the whole written.
func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// text returns what was kept, its surrounding space trimmed.
func (b *boundedBuffer) text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
