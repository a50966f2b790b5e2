// Package git is convoy-apiserver's Git client: it lists a repository's
// refs and fetches one commit, depth 1, into memory storage that counts its
// bytes, and reads the commit's files from its tree objects, never a
// checkout. It speaks https (go-git's HTTP transport over the caller's
// client, with its limits: HTTPClient) and ssh (git-upload-pack over
// golang.org/x/crypto/ssh: ssh.go), always with an Auth that carries the
// connection settings: go-git's transports are global, so the ones this
// package installs keep no settings of their own and refuse a call without
// an Auth, and go-git's file and git transports are removed. It is the only
// package of convoy-apiserver that imports go-git; its own failures are an
// *Error of a Kind, the server's come as go-git's errors (re-exported here)
// or a *HostKeyError, for the caller to classify.
package git

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitclient "github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Auth is what one call of this package connects with: the credentials and
// the connection settings of one fetch. It is a go-git
// transport.AuthMethod; Name and String print no secret.
type Auth struct {
	// HTTPClient is the client of https (and loopback http) URLs, whose
	// transport is the caller's (the address policy, the TLS settings, no
	// proxy); HTTPClient makes it.
	HTTPClient *http.Client
	// Username and Password, or Token, are the HTTP credentials, if any.
	Username, Password, Token string
	// SSH is the identity and known hosts of an ssh URL.
	SSH *SSHAuth
	// Dialer and Timeout are the SSH connection's.
	Dialer  *net.Dialer
	Timeout time.Duration
	// Limits bound what an SSH session reads (HTTPClient has them too),
	// and what a fetch stores.
	Limits Limits
}

// Name implements transport.AuthMethod.
func (a *Auth) Name() string { return "convoy" }

// String implements transport.AuthMethod; it prints no secret.
func (a *Auth) String() string { return "convoy credentials (redacted)" }

// httpAuth is the HTTP credentials, or nil.
func (a *Auth) httpAuth() transport.AuthMethod {
	switch {
	case a.Token != "":
		return &githttp.TokenAuth{Token: a.Token}
	case a.Username != "" || a.Password != "":
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}
	}
	return nil
}

var errNoAuth = fmt.Errorf("%w: a Git request without convoy's connection settings is refused", transport.ErrInvalidAuthMethod)

// transports is the one transport installed for https, http and ssh: it
// builds each session from the call's Auth.
type transports struct{}

// NewUploadPackSession implements transport.Transport.
func (transports) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	a, ok := auth.(*Auth)
	if !ok || a == nil {
		return nil, errNoAuth
	}
	switch ep.Protocol {
	case "https", "http":
		if a.HTTPClient == nil {
			return nil, errNoAuth
		}
		return githttp.NewClient(a.HTTPClient).NewUploadPackSession(ep, a.httpAuth())
	case "ssh":
		if a.SSH == nil || a.Dialer == nil {
			return nil, fmt.Errorf("%w: an ssh URL needs an identity and known_hosts", transport.ErrAuthenticationRequired)
		}
		return newSSHTransport(a.Dialer, a.Timeout, a.Limits).NewUploadPackSession(ep, a.SSH)
	}
	return nil, fmt.Errorf("%w: the scheme %s is not supported", errNoAuth, ep.Protocol)
}

// NewReceivePackSession implements transport.Transport: convoy never
// pushes.
func (transports) NewReceivePackSession(*transport.Endpoint, transport.AuthMethod) (transport.ReceivePackSession, error) {
	return nil, errNoPush
}

var errNoPush = errors.New("convoy never pushes to a Git repository")

var installOnce sync.Once

// install installs transports for https, http and ssh, and removes go-git's
// file and git transports (a local path, an unencrypted daemon): go-git's
// own would dial on their own terms (the https one clones the installed
// *http.Transport, the ssh one honours ALL_PROXY and ~/.ssh/config and
// takes no dial hook). Every call of this package installs them first.
func install() {
	installOnce.Do(func() {
		gitclient.InstallProtocol("https", transports{})
		gitclient.InstallProtocol("http", transports{})
		gitclient.InstallProtocol("ssh", transports{})
		gitclient.InstallProtocol("file", nil)
		gitclient.InstallProtocol("git", nil)
	})
}
