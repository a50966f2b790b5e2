package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitclient "github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

// Keys of the Secret of a Git source's secretRef.
const (
	bearerTokenKey = "bearerToken"
	identityKey    = "identity"
	knownHostsKey  = "known_hosts"
)

// gitCredentials are what a Git fetch presents, and the connection it goes
// through: auth is a *gitAuth, which the transports this package installs
// take their HTTP client or SSH dialer from. key hashes the credentials
// and TLS settings ("" is anonymous with the system roots).
type gitCredentials struct {
	auth *gitAuth
	key  string
}

// gitAuth is the transport.AuthMethod every go-git call of this package
// passes: the credentials and the connection settings of one fetch. go-git's
// transports are global; the ones installed by installGitTransports keep no
// settings of their own and refuse a call without a gitAuth, so no go-git
// call of this process reaches a server but through the address policy.
type gitAuth struct {
	// client is the HTTP client of https (and loopback http) URLs: the
	// address policy, the TLS settings of certSecretRef, no proxy, the
	// bytes fetched bounded, no redirect to another host.
	client *http.Client
	// basic or token are the HTTP credentials, if any.
	basic *githttp.BasicAuth
	token *githttp.TokenAuth
	// ssh is the SSH identity and known hosts of an ssh URL.
	ssh *SSHAuth
	// dialer and timeout are the SSH connection's.
	dialer  *net.Dialer
	timeout time.Duration
	// limits bound what an SSH session reads (the HTTP client has them
	// too).
	limits gitLimits
}

// Name implements transport.AuthMethod.
func (a *gitAuth) Name() string { return "convoy" }

// String implements transport.AuthMethod; it prints no secret.
func (a *gitAuth) String() string { return "convoy credentials (redacted)" }

// httpAuth is the HTTP credentials, or nil.
func (a *gitAuth) httpAuth() transport.AuthMethod {
	switch {
	case a.basic != nil:
		return a.basic
	case a.token != nil:
		return a.token
	}
	return nil
}

var errNoGitAuth = fmt.Errorf("%w: a Git request without convoy's connection settings is refused", transport.ErrInvalidAuthMethod)

// gitTransports is the one transport installed for https, http and ssh:
// it builds each session from the call's gitAuth.
type gitTransports struct{}

// NewUploadPackSession implements transport.Transport.
func (gitTransports) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	a, ok := auth.(*gitAuth)
	if !ok || a == nil {
		return nil, errNoGitAuth
	}
	switch ep.Protocol {
	case "https", "http":
		if a.client == nil {
			return nil, errNoGitAuth
		}
		return githttp.NewClient(a.client).NewUploadPackSession(ep, a.httpAuth())
	case "ssh":
		if a.ssh == nil || a.dialer == nil {
			return nil, fmt.Errorf("%w: an ssh URL needs secretRef with the keys %s and %s", transport.ErrAuthenticationRequired, identityKey, knownHostsKey)
		}
		return newGitSSHTransport(a.dialer, a.timeout, a.limits).NewUploadPackSession(ep, a.ssh)
	}
	return nil, fmt.Errorf("%w: the scheme %s is not supported", errNoGitAuth, ep.Protocol)
}

// NewReceivePackSession implements transport.Transport: convoy never
// pushes.
func (gitTransports) NewReceivePackSession(*transport.Endpoint, transport.AuthMethod) (transport.ReceivePackSession, error) {
	return nil, errNoPush
}

var errNoPush = errors.New("convoy never pushes to a Git repository")

var installGitOnce sync.Once

// installGitTransports installs gitTransports for https, http and ssh, and
// removes go-git's file and git transports (a local path, an unencrypted
// daemon): go-git's own would dial on their own terms (the https one
// clones the installed *http.Transport, the ssh one honours ALL_PROXY and
// ~/.ssh/config and takes no dial hook).
func installGitTransports() {
	installGitOnce.Do(func() {
		gitclient.InstallProtocol("https", gitTransports{})
		gitclient.InstallProtocol("http", gitTransports{})
		gitclient.InstallProtocol("ssh", gitTransports{})
		gitclient.InstallProtocol("file", nil)
		gitclient.InstallProtocol("git", nil)
	})
}

// gitCredentials reads the credentials of a Git source as the Release's
// identity: for https, username and password or bearerToken, and
// certSecretRef; for ssh, identity and known_hosts (required).
func (f *Fetcher) gitCredentials(ctx context.Context, inputs Inputs, namespace string, src *convoyv1alpha1.GitRepositorySource, u *url.URL) (*gitCredentials, error) {
	a := &gitAuth{dialer: f.dialer(), timeout: f.opts.Timeout, limits: f.gitLimits()}
	var material []byte
	tlsKey := ""
	if u.Scheme == "ssh" {
		if src.CertSecretRef != nil {
			return nil, failure.New(ReasonSourceInvalid, nil, "%s: certSecretRef is for https URLs; an ssh URL trusts its known_hosts", src.URL)
		}
		if src.SecretRef == nil {
			return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs secretRef, with the keys %s and %s", src.URL, identityKey, knownHostsKey)
		}
	} else {
		tlsCfg, key, err := tlsSettings(ctx, inputs, namespace, src.CertSecretRef)
		if err != nil {
			return nil, err
		}
		tlsKey = key
		a.client = f.gitHTTPClient(f.clientFor(tlsCfg, tlsKey))
	}
	if ref := src.SecretRef; ref != nil {
		s, err := readSecret(ctx, inputs, namespace, ref, "secretRef")
		if err != nil {
			return nil, err
		}
		where := "secretRef " + convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: ref.Name}.Describe()
		if u.Scheme == "ssh" {
			user := u.User.Username()
			if user == "" {
				user = "git"
			}
			if len(s.Data[knownHostsKey]) == 0 {
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an ssh URL needs the key %s (no host key is trusted on first use)", where, knownHostsKey)
			}
			if a.ssh, err = newSSHAuth(s.Data[identityKey], s.Data[knownHostsKey]); err != nil {
				// The error does not quote the key.
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: %v", where, err)
			}
			a.ssh.User = user
			material = append(append(append([]byte(user), 0), s.Data[identityKey]...), s.Data[knownHostsKey]...)
		} else {
			user, hasUser := s.Data[usernameKey]
			pass, hasPass := s.Data[passwordKey]
			token, hasToken := s.Data[bearerTokenKey]
			switch {
			case hasUser && hasPass && !hasToken:
				a.basic = &githttp.BasicAuth{Username: string(user), Password: string(pass)}
				material = append(append(append([]byte("basic\x00"), user...), 0), pass...)
			case hasToken && !hasUser && !hasPass:
				a.token = &githttp.TokenAuth{Token: string(token)}
				material = append([]byte("token\x00"), token...)
			default:
				return nil, failure.New(ReasonCredentialsInvalid, nil, "%s: an https URL needs the keys %s and %s, or %s alone", where, usernameKey, passwordKey, bearerTokenKey)
			}
		}
	}
	return &gitCredentials{auth: a, key: credentialKey(material, tlsKey)}, nil
}

// gitLimits are the Fetcher's limits of a Git server's answers.
func (f *Fetcher) gitLimits() gitLimits {
	return gitLimits{bytes: int64(f.opts.MaxGitBytes), refs: f.opts.MaxGitRefs}
}

// gitHTTPClient is c's HTTP client for Git: no redirect to another host
// (the credentials go to the URL's host only, and go-git would take the
// new host for the rest of the session), what a response holds bounded by
// MaxGitBytes, and the refs of an advertisement (info/refs) by MaxGitRefs
// as they arrive.
func (f *Fetcher) gitHTTPClient(c *client) *http.Client {
	limits := f.gitLimits()
	return &http.Client{
		Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := c.transport.RoundTrip(req)
			if err != nil {
				return nil, err
			}
			if resp.ContentLength > limits.bytes {
				resp.Body.Close()
				return nil, failure.New(ReasonArtifactTooLarge, nil, "%s answered %d bytes, more than the limit of %d (--max-git-bytes)", req.URL.Redacted(), resp.ContentLength, limits.bytes)
			}
			body := gitBytesLimited(resp.Body, req.URL.Redacted()+": the answer", limits.bytes)
			if strings.HasSuffix(req.URL.Path, "/info/refs") {
				// The "# service=git-upload-pack" line comes first.
				body = gitRefsCounted(body, req.URL.Redacted(), limits.refs, 1)
			}
			resp.Body = readCloser{Reader: body, Closer: resp.Body}
			return resp, nil
		}),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
				return failure.New(ReasonSourceInvalid, nil, "%s redirected to another host (%s), which a Git source does not follow", via[0].URL.Redacted(), req.URL.Host)
			}
			return nil
		},
	}
}

// readCloser is a Reader with the Closer of what it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// dialer is the dialer of the sources' connections: the address policy,
// or the tests' Control.
func (f *Fetcher) dialer() *net.Dialer {
	d := f.opts.Policy.Dialer(30 * time.Second)
	if f.dialControl != nil {
		d.Control = f.dialControl
	}
	return d
}
