package git

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHAuth is what an SSH Git source authenticates with: from a Secret's
// keys identity (a PEM private key) and known_hosts (required). It is a
// go-git transport.AuthMethod, given to Remote.ListContext or FetchContext
// as their Auth; sshTransport accepts no other. Its String and GoString
// name the user and the key's fingerprint, never the key.
type SSHAuth struct {
	// User is the SSH user; empty: the URL's user, else "git".
	User string
	// Signer is the client's private key.
	Signer ssh.Signer
	// KnownHosts are the server's host keys in OpenSSH's known_hosts
	// format; hosts on a port other than 22 are written "[host]:port".
	KnownHosts []byte
}

// NewSSHAuth returns the SSHAuth of a Secret's keys: identity, an
// unencrypted private key in PEM (OpenSSH, PKCS#1, PKCS#8 or SEC 1), and
// knownHosts. The errors do not quote the key.
func NewSSHAuth(identity, knownHosts []byte) (*SSHAuth, error) {
	signer, err := ssh.ParsePrivateKey(identity)
	var encrypted *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &encrypted):
		return nil, errors.New("the SSH identity is encrypted with a passphrase: give an unencrypted key")
	case err != nil:
		return nil, errors.New("the SSH identity is not a private key in PEM format")
	}
	if _, err := parseKnownHosts(knownHosts); err != nil {
		return nil, err
	}
	return &SSHAuth{Signer: signer, KnownHosts: knownHosts}, nil
}

// Name is the name of the AuthMethod.
func (a SSHAuth) Name() string { return sshAuthName }

// String names the user and the fingerprint of the key, not the key.
func (a SSHAuth) String() string {
	fp := "none"
	if a.Signer != nil {
		fp = ssh.FingerprintSHA256(a.Signer.PublicKey())
	}
	return fmt.Sprintf("%s user=%q key=%s", sshAuthName, a.User, fp)
}

// GoString is String, so that %#v does not print the key either.
func (a SSHAuth) GoString() string { return a.String() }

// hostKeyCheck checks a server's host key against known_hosts for one
// host: algorithms are those of the keys known_hosts has for it, so that
// the server cannot pick a key of another type.
type hostKeyCheck struct {
	addr       string
	callback   ssh.HostKeyCallback
	algorithms []string

	mu       sync.Mutex
	accepted bool
	refused  error
}

// newHostKeyCheck returns the check of the server at addr, host:port as the
// URL writes it, against knownHosts. It refuses an empty known_hosts, and
// one that has no key for the host of a type this client can verify.
func newHostKeyCheck(knownHosts []byte, addr string) (*hostKeyCheck, error) {
	callback, err := parseKnownHosts(knownHosts)
	if err != nil {
		return nil, err
	}
	// The keys known_hosts has for addr: those the callback wants, when it
	// refuses a key it cannot have (the way skeema/knownhosts asks it).
	var want []knownhosts.KnownKey
	var keyErr *knownhosts.KeyError
	if err := callback(addr, &net.TCPAddr{IP: net.IPv4zero}, probeKey{}); errors.As(err, &keyErr) {
		want = keyErr.Want
	}
	supported := ssh.SupportedAlgorithms().HostKeys
	var algorithms []string
	for _, k := range want {
		for _, algo := range hostKeyAlgorithms(k.Key.Type()) {
			if slices.Contains(supported, algo) && !slices.Contains(algorithms, algo) {
				algorithms = append(algorithms, algo)
			}
		}
	}
	if len(algorithms) == 0 {
		return nil, fmt.Errorf("known_hosts has no host key for %s (write it %q) of a type convoy-apiserver verifies: it trusts no host it does not list",
			addr, knownhosts.Normalize(addr))
	}
	return &hostKeyCheck{addr: addr, callback: callback, algorithms: algorithms}, nil
}

// parseKnownHosts returns the host key callback of known_hosts, parsed by
// golang.org/x/crypto/ssh/knownhosts. That package reads files only: the
// bytes go through a temporary file, removed before it returns.
func parseKnownHosts(knownHosts []byte) (ssh.HostKeyCallback, error) {
	if len(bytes.TrimSpace(knownHosts)) == 0 {
		return nil, errors.New("known_hosts is empty: an SSH Git source needs the server's host keys")
	}
	// Each line first, so that an error names its line and not the
	// temporary file.
	for i, line := range bytes.Split(knownHosts, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if _, _, _, _, _, err := ssh.ParseKnownHosts(line); err != nil {
			return nil, fmt.Errorf("known_hosts is not valid: line %d: %w", i+1, err)
		}
	}
	f, err := os.CreateTemp("", "convoy-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(knownHosts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts: %w", err)
	}
	callback, err := knownhosts.New(f.Name())
	if err != nil {
		// The error names the temporary file, and the line.
		return nil, fmt.Errorf("known_hosts is not valid: %w", err)
	}
	return callback, nil
}

// hostKeyAlgorithms are the signature algorithms of a host key of type
// keyType: RSA keys sign with SHA-2 only (not SHA-1's ssh-rsa).
func hostKeyAlgorithms(keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	case ssh.CertAlgoRSAv01:
		return []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}
	default:
		return []string{keyType}
	}
}

// check is the HostKeyCallback: the key must be one known_hosts lists for
// the host the URL names (hostname is that host:port, as given to
// ssh.NewClientConn), whatever address it resolved to.
func (h *hostKeyCheck) check(hostname string, remote net.Addr, key ssh.PublicKey) error {
	err := h.callback(hostname, remote, key)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.accepted = true
		return nil
	}
	h.refused = &HostKeyError{host: hostname, key: key, err: err}
	return h.refused
}

// outcome returns whether the host key was accepted, and the refusal when
// it was not.
func (h *hostKeyCheck) outcome() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.accepted, h.refused
}

// HostKeyError is the refusal of a server's host key: a key known_hosts
// does not list for the host (*knownhosts.KeyError: a mismatch, the server
// may be impersonated), or one it revokes (*knownhosts.RevokedError).
type HostKeyError struct {
	host string
	key  ssh.PublicKey
	err  error
}

// Error says whose key was refused and why.
func (e *HostKeyError) Error() string {
	got := fmt.Sprintf("%s key %s", e.key.Type(), ssh.FingerprintSHA256(e.key))
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case errors.As(e.err, &revoked):
		return fmt.Sprintf("host key of %s refused: the server presented %s, which known_hosts revokes", e.host, got)
	case errors.As(e.err, &keyErr) && len(keyErr.Want) > 0:
		wants := make([]string, 0, len(keyErr.Want))
		for _, k := range keyErr.Want {
			wants = append(wants, ssh.FingerprintSHA256(k.Key))
		}
		return fmt.Sprintf("host key mismatch for %s: the server presented %s, but known_hosts lists %s for it: the server may be impersonated, or known_hosts is out of date",
			e.host, got, strings.Join(wants, ", "))
	case errors.As(e.err, &keyErr):
		return fmt.Sprintf("host key of %s refused: known_hosts has no key for it (the server presented %s)", e.host, got)
	default:
		return fmt.Sprintf("host key of %s refused: %v", e.host, e.err)
	}
}

// Unwrap returns knownhosts' error.
func (e *HostKeyError) Unwrap() error { return e.err }

// probeKey is a public key no known_hosts line holds: the callback refuses
// it with the keys it wants for a host.
type probeKey struct{}

func (probeKey) Type() string                                 { return "convoy-probe" }
func (probeKey) Marshal() []byte                              { return []byte("convoy-probe") }
func (probeKey) Verify(data []byte, sig *ssh.Signature) error { return errors.New("a probe") }
